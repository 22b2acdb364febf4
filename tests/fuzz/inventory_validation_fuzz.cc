// Fuzz target: agent-inventory validation, as benchd's Register runs it. The bytes are a
// serialized benchfleet.v1.AgentInventory (those that do not parse are rejected),
// converted with FromProto (server/rpc/proto_convert.h) and checked by ValidateInventory
// (server/core/inventory_validation.h). Besides no crash, leak or sanitizer report, it checks
// the contract: the answer is OK or INVALID_ARGUMENT with a small message, and an
// accepted inventory keeps every bound the header lists (node name, GPU count and
// uniqueness, CPU slots, labels, versions).
#include <cstdint>
#include <set>
#include <string>

#include "benchfleet/v1/types.pb.h"
#include "server/core/inventory_validation.h"
#include "server/core/job.h"
#include "server/rpc/proto_convert.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  benchfleet::v1::AgentInventory proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return -1;
  bench::AgentInventory inventory = bench::FromProto(proto);
  absl::Status status = bench::ValidateInventory(inventory);
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(status.message().size() <= 1024);
    return 0;
  }
  FUZZ_CHECK(bench::ValidateNodeName(inventory.name, "name").ok());
  FUZZ_CHECK(inventory.gpus.size() <= static_cast<size_t>(bench::kMaxGpus));
  FUZZ_CHECK(inventory.cpu_slots >= 0 && inventory.cpu_slots <= bench::kMaxCpuSlots);
  FUZZ_CHECK(inventory.labels.size() <= bench::kMaxInventoryLabels);
  FUZZ_CHECK(inventory.versions.size() <= bench::kMaxInventoryVersions);
  std::set<int> indexes;
  std::set<std::string> uuids;
  for (const bench::Gpu& gpu : inventory.gpus) {
    FUZZ_CHECK(gpu.index >= 0 && !gpu.uuid.empty() && gpu.memory_bytes >= 0);
    FUZZ_CHECK(indexes.insert(gpu.index).second && uuids.insert(gpu.uuid).second);
  }
  return 0;
}

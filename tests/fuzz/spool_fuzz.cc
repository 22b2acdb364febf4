// Fuzz target: the agent's on-disk spool (worker/agent/spool.h) reading what it finds
// after a crash or a corrupted disk. The bytes describe a spool directory (spool_input.h:
// an optional "ack" file and 1-4 segment files of any content, numbered from 1 or from
// a given number), written into a temporary directory; then Spool::Open, and Read until
// nothing is left. It must never crash: bad records are logged and skipped. It checks
// the contract: records come back in increasing positions with a known kind, their
// number plus those reported skipped is pending_at_open(), a record appended afterwards
// reads back as written, and once acknowledged a reopened spool has nothing pending
// (or, past 2^62 segments, refuses to open with RESOURCE_EXHAUSTED).
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "tests/fuzz/spool_input.h"
#include "worker/agent/spool.h"

namespace {

using bench::agent::Spool;
using bench::agent::SpoolKind;
using bench::agent::SpoolPosition;
using bench::agent::SpoolRecord;

// One scratch directory per process, removed at exit. Its name is never destroyed: the
// atexit handler, registered while it is being made, would run after its destructor
// (an ASan run saw the handler read the destroyed string).
const std::string& ScratchDir() {
  static const std::string& dir = *new std::string([] {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/spool_fuzz.XXXXXX";
    FUZZ_CHECK(mkdtemp(pattern.data()) != nullptr);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDir(), ignored);
    });
    return pattern;
  }());
  return dir;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FUZZ_CHECK(out.good());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bench::fuzz::SpoolInput input = bench::fuzz::DecodeSpoolInput(data, size);
  const std::string dir = ScratchDir() + "/spool";
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  std::filesystem::create_directories(dir, error);
  FUZZ_CHECK(!error);
  for (size_t i = 0; i < input.segments.size(); ++i) {
    WriteFile(absl::StrFormat("%s/seg-%020u", dir, input.first_segment + i), input.segments[i]);
  }
  if (input.ack) WriteFile(dir + "/ack", *input.ack);

  auto spool = Spool::Open(dir);
  if (!spool.ok()) return 0;
  SpoolPosition pos;
  uint64_t read = 0, skipped = 0;
  for (int round = 0; round < 100000; ++round) {
    std::vector<SpoolRecord> records;
    SpoolPosition next = (*spool)->Read(pos, 7, &records, &skipped);
    for (const SpoolRecord& record : records) {
      uint8_t kind = static_cast<uint8_t>(record.kind);
      FUZZ_CHECK(kind >= 1 && kind <= 3);
      FUZZ_CHECK(pos < record.end);
      pos = record.end;
    }
    read += records.size();
    if (records.empty()) break;
    FUZZ_CHECK(!(next < pos));  // past the last record (maybe at a later segment's start)
    pos = next;
  }
  FUZZ_CHECK(read + skipped == (*spool)->pending_at_open());

  auto appended = (*spool)->Append(SpoolKind::kReport, "appended by the fuzzer");
  FUZZ_CHECK(appended.ok());
  std::vector<SpoolRecord> records;
  (*spool)->Read(pos, 10, &records);
  FUZZ_CHECK(records.size() == 1 && records[0].kind == SpoolKind::kReport &&
             records[0].payload == "appended by the fuzzer" && records[0].end == *appended);
  FUZZ_CHECK((*spool)->Ack(*appended).ok() && (*spool)->acked() == *appended);
  spool->reset();

  // Reopening starts a segment: it may only fail when segment numbers are exhausted.
  auto reopened = Spool::Open(dir);
  if (!reopened.ok()) {
    FUZZ_CHECK(reopened.status().code() == absl::StatusCode::kResourceExhausted &&
               absl::StrContains(reopened.status().message(), "segment numbers exhausted"));
    return 0;
  }
  FUZZ_CHECK((*reopened)->pending_at_open() == 0);
  return 0;
}

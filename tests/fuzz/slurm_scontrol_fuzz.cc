// Fuzz target: the Slurm output parser of benchd --slurm-partition, ParseScontrolJobs
// (server/slurm/slurm_allocator.h): `scontrol --oneliner show job` as Slurm prints it, which
// carries job names, reasons and node lists other users chose. Besides no crash, leak or
// sanitizer report, it checks: every job it returns has an id and a state, found in the
// text as JobId=<id> and JobState=<state>; no field holds a space or a line break; the
// placeholders "None" (reason) and "(null)" (node list) become ""; SlurmStateEnded answers
// for every state; parsing twice gives the same jobs.
// Not fuzzed here: sbatch --parsable's output (a job id, or "ID;CLUSTER"), read inside
// the private SlurmAllocator::Submit (docs/fuzzing.md).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "server/slurm/slurm_allocator.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

bool Plain(const std::string& field) { return field.find_first_of(" \n") == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, bench::SlurmJob> jobs = bench::ParseScontrolJobs(text);
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  FUZZ_CHECK(jobs.size() <= lines);
  for (const auto& [id, job] : jobs) {
    FUZZ_CHECK(!id.empty() && !job.state.empty());
    FUZZ_CHECK(Plain(id) && Plain(job.name) && Plain(job.state) && Plain(job.reason) &&
               Plain(job.nodes));
    FUZZ_CHECK(text.find("JobId=" + id) != std::string_view::npos);
    FUZZ_CHECK(text.find("JobState=" + job.state) != std::string_view::npos);
    FUZZ_CHECK(job.reason != "None" && job.nodes != "(null)");
    (void)bench::SlurmStateEnded(job.state);
  }
  std::map<std::string, bench::SlurmJob> again = bench::ParseScontrolJobs(text);
  FUZZ_CHECK(again.size() == jobs.size());
  for (const auto& [id, job] : jobs) {
    auto it = again.find(id);
    FUZZ_CHECK(it != again.end() && it->second.name == job.name && it->second.state == job.state &&
               it->second.reason == job.reason && it->second.nodes == job.nodes);
  }
  return 0;
}

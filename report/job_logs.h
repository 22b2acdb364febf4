// `benchctl logs` and the web API's /api/v1/jobs/{id}/logs: a job's stored iterations in formats existing tools read. Pure: no I/O.
//
//   kDllogger  NVIDIA DeepLearningExamples DLLogger JSON lines (JSONStreamBackend):
//              `DLLL {"timestamp": "<unix s>", "datetime": ..., "elapsedtime": ...,
//              "type": "METADATA"|"LOG", ...}`: METADATA lines first (metric, metadata
//              {"unit"...}), one LOG line per rank-0 iteration (step [0, iteration], data
//              train.loss, train.total_ips, train.compute_ips, train.step_time,
//              train.data_time, train.warmup, and the step split named as in the trainer's
//              event, each only where the trainer wrote it: compute_time_s,
//              forward_backward_time_s, allreduce_wait_time_s, optimizer_time_s), and
//              once the job has ended a summary (step [],
//              data train.throughput (only when the job has one), train.iterations (measured,
//              rank 0), global_batch_size, status, and a note when there is no throughput).
//   kMllog     MLPerf logging `:::MLLOG {"namespace", "time_ms", "event_type", "key",
//              "value", "metadata": {"file", "lineno", ...}}`: submission_benchmark (the
//              model registry's MLLOG name, common/names.h: "resnet", "ssd"),
//              submission_division, submission_platform (when known), init_start,
//              global_batch_size, opt_name, train_samples (planned measured images),
//              for a detection model (SSD) max_samples 1 as MLPerf's SSD logs it,
//              init_stop, run_start, block_start, epoch_start, one tracked_stats
//              {"throughput": images/s of the step} per rank-0 iteration (metadata step),
//              then once ended epoch_stop, block_stop, run_stop (metadata status "success"
//              or "aborted") and a final throughput (the job's measured images/s) only when
//              it has one.
//   kJsonl     one proto-JSON IterationSample per line (proto field names), every rank;
//              the step split's fields only where the trainer wrote them.
//
// A non-finite loss (a diverged run) is written as the proto3 JSON mapping writes a
// double, in DLLogger's train.loss and in jsonl's loss alike: the strings "NaN",
// "Infinity", "-Infinity" (JSON has no such numbers; Python's float() reads them).
// MLLOG lines carry no loss; a job that ended for a diverged loss has run_stop status
// "aborted" with its reason ("loss diverged: ...") in the note.
//
// Times: an iteration's received_unix_ns when known, else the job's start (its RUNNING
// transition, else its creation) plus the rank's elapsed_s.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::report {

// The log formats: `benchctl logs --format` and the web API's /logs?format=.
enum class LogFormat { kDllogger, kMllog, kJsonl };
// "dllogger", "mllog", "jsonl"; INVALID_ARGUMENT naming them for anything else.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);
const char* LogFormatName(LogFormat format);

// Renders one job's log incrementally, for `logs -f`: Begin once, Add with each batch of
// samples (already printed (rank, iteration) pairs are skipped), End once the job is
// terminal. Not thread-safe.
class JobLogWriter {
 public:
  explicit JobLogWriter(LogFormat format) : format_(format) {}

  std::string Begin(const benchfleet::v1::JobStatus& job);
  std::string Add(const benchfleet::v1::JobStatus& job,
                  const std::vector<benchfleet::v1::IterationSample>& samples);
  std::string End(const benchfleet::v1::JobStatus& job);

  // The only rank whose iterations this format prints (rank 0 for the per-job DLLogger
  // and MLLOG logs), or nullopt for every rank (jsonl): what to ask GetSamples for.
  std::optional<int> RankOfInterest() const;
  // The from_iteration to ask for next: the lowest last iteration over the ranks of
  // interest (1 while one has none yet).
  int NextFromIteration(const benchfleet::v1::JobStatus& job) const;

 private:
  std::string MllogLine(int64_t time_ms, const char* event_type, const std::string& key,
                        const std::string& value_json, const std::string& extra_metadata = "");

  LogFormat format_;
  std::set<std::pair<int, int>> seen_;  // (rank, iteration)
  std::map<int, int> last_iteration_;   // rank -> highest iteration seen
  int lineno_ = 0;
  int measured_rank0_ = 0;
  double last_elapsed_s_ = 0;
  int64_t last_time_ms_ = 0;
};

// The whole log of `job` as it stands: Begin, Add(samples), and End when it is terminal.
std::string RenderJobLog(LogFormat format, const benchfleet::v1::JobStatus& job,
                         const std::vector<benchfleet::v1::IterationSample>& samples);

// When an iteration happened, in unix milliseconds (see the header comment).
int64_t SampleTimeMs(const benchfleet::v1::JobStatus& job,
                     const benchfleet::v1::IterationSample& sample);

}  // namespace bench::report

// The controller's durable state in one SQLite file: jobs (spec, state, history,
// placements and rank devices, rank summaries, reported versions), every iteration
// sample of every rank, GPU telemetry, and baselines.
//
// Writes go through one writer thread that owns the write connection: operations queue
// up and are committed in batched transactions, each operation inside its own savepoint
// so that one failing operation does not undo its neighbours. Samples are stored
// exactly once by (job, attempt, rank, iteration); a repeated sample is counted as a
// duplicate, not stored again. A sample's loss is stored as it was, NaN and infinities
// included (a NaN loss is NULL in SQL: docs/results.md). Reads use a second connection
// (WAL lets them run beside the writer); the end-of-job analyses read on a third, on a
// thread of their own. All methods are thread-safe.
//
// Durability: a write's `done` runs after its transaction committed to the WAL, so what
// was acknowledged survives a crash or kill of benchd. The connections use
// synchronous=NORMAL: the WAL is fsynced at checkpoints, not at every commit, so an OS
// crash or power loss may lose the last acknowledged commits (never corrupt the file).
// Checkpoints (copying the WAL back into the database) run on a background thread with
// its own connection once the WAL passes kCheckpointFrames pages, not on the writer
// thread; the writer only restarts the WAL from its start after such a checkpoint (a
// copy of the pages written meanwhile), so the WAL stays bounded. Should the checkpoint
// fall behind (a starved thread, a slow disk) until the WAL reaches kWalCeilingFrames,
// the writer waits for it before its next transaction: the bound holds however the
// threads are scheduled.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/auth/join_token.h"
#include "server/core/job.h"
#include "server/diagnosis/inputs.h"
#include "server/results/baseline.h"
#include "server/results/job_diagnosis.h"
#include "server/results/telemetry.h"
#include "server/results/variability_summary.h"

struct sqlite3;

namespace bench {

class Database;
struct AttemptRows;  // store_internal.h

struct AppendResult {
  int stored = 0;
  int duplicates = 0;
  int gpu_stored = 0;
  int gpu_duplicates = 0;
  int rejected = 0;  // set by JobManager::UploadSamples: refused before the store saw them
  // Newly stored samples by (job id, attempt, rank).
  std::map<std::tuple<std::string, int, int>, int> stored_by_rank;
  // Of the newly stored samples, those whose loss is NaN or infinite.
  int nonfinite_losses = 0;
  std::map<std::tuple<std::string, int, int>, int> nonfinite_by_rank;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 19;
  // WAL pages (4 KiB each) after which the background thread checkpoints.
  static constexpr int kCheckpointFrames = 8192;
  // WAL pages at which the writer waits for a pending checkpoint (see above).
  static constexpr int kWalCeilingFrames = 2 * kCheckpointFrames;

  // Opens or creates the database at `path` and migrates it to kSchemaVersion. A file
  // that is not a database, or whose schema is newer than this build, is an error
  // naming the path; nothing in it is changed.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  // Commits everything queued, then stops the writer and the checkpointer.
  ~Store();

  // `done` callbacks run on the writer thread after the commit (or the failure), or at
  // once on the caller's thread with UNAVAILABLE once the store is shutting down; they
  // must not wait on anything that waits on the store.
  using Done = std::function<void(absl::Status)>;

  // Inserts a new job (its row, labels and history). ALREADY_EXISTS if its id or
  // request id is taken.
  void InsertJobAsync(const Job& job, Done done);
  absl::Status InsertJob(const Job& job);  // waits for the commit
  // Persists the job's mutable fields: state, reason, attempt, device kind, parameters,
  // history, the current attempt's placements with their rank devices (written once per
  // attempt), versions and rank summaries. Idempotent, so the
  // latest call wins whatever failed before it.
  void UpdateJobAsync(const Job& job, Done done);
  absl::Status UpdateJob(const Job& job);  // waits for the commit
  // Persists what rank reports changed, in time proportional to `ranks`, not to the job:
  // the job's row (as UpdateJob) and, for each rank in `ranks`, its job_ranks row and
  // precision, its version rows and its summary. The database then holds what UpdateJob
  // would have written, provided that since the job's last UpdateJob only these ranks'
  // state and the job's row fields changed (not its history, placements, rank devices,
  // agent versions, allocation or GPU telemetry). Idempotent like UpdateJob; a failed
  // call is repaired by the next UpdateJob, not by a later UpdateRanks.
  void UpdateRanksAsync(const Job& job, const std::set<int>& ranks, Done done);
  absl::Status UpdateRanks(const Job& job, const std::set<int>& ranks);  // waits

  // Queues samples; `done` runs as the callbacks above do.
  using AppendDone = std::function<void(absl::StatusOr<AppendResult>)>;
  // GPU samples are stored exactly once by (job, attempt, rank, seq), like iterations.
  void AppendSamples(std::vector<IterationSample> samples, std::vector<GpuSample> gpu_samples,
                     AppendDone done);
  void AppendSamples(std::vector<IterationSample> samples, AppendDone done);
  absl::StatusOr<AppendResult> AppendSamplesSync(std::vector<IterationSample> samples,
                                                 std::vector<GpuSample> gpu_samples = {});

  // Joins the attempt's GPU samples to its iterations (telemetry.h), stores each
  // iteration's mean power and SM clock, and hands the per-GPU figures to `done`. The
  // rows are read, after everything queued before has been applied, on the analysis
  // thread; the means are written by the writer, and `done` runs once they are
  // committed (or with the error: UNAVAILABLE when the store stopped meanwhile). The
  // figures are persisted with the job by UpdateJob, not here. Returns false, and
  // never calls `done`, once the store is shutting down (so a caller holding a lock
  // that `done` takes cannot deadlock).
  struct TelemetryRequest {
    std::string job_id;
    int attempt = 0;
    std::map<int, RankSummary> summaries;
    std::map<int, std::string> agent_by_rank;
    bool expect_gpus = false;
  };
  using TelemetryDone = std::function<void(absl::StatusOr<JoinedTelemetry>)>;
  bool JoinTelemetryAsync(TelemetryRequest request, TelemetryDone done);

  // Diagnoses the attempt (server/results/job_diagnosis.h): on the analysis thread,
  // after everything queued before it, reads its iterations and GPU readings, adds them
  // to `facts` (JobInputsOf the job) and runs the analyses; the writer stores the result
  // in job_diagnoses (replacing the attempt's row) and hands it to `done`. Returns false, and never calls
  // `done`, once the store is shutting down (as JoinTelemetryAsync).
  using DiagnosisDone = std::function<void(absl::StatusOr<JobDiagnosis>)>;
  bool DiagnoseJobAsync(diagnosis::JobInputs facts, int attempt, DiagnosisDone done);
  // JoinTelemetryAsync and DiagnoseJobAsync of one attempt (`request`'s) as one piece of
  // analysis work: its rows are read once for both, so both see the same rows (an ended
  // attempt's can be millions). The telemetry's write and `telemetry_done` come first.
  // Returns false, and calls neither, once the store is shutting down.
  bool AnalyzeAttemptAsync(TelemetryRequest request, diagnosis::JobInputs facts,
                           TelemetryDone telemetry_done, DiagnosisDone diagnosis_done);
  // The same analyses on the reader connection, stored nothing (`benchctl diagnose`).
  absl::StatusOr<JobDiagnosis> RediagnoseJob(const diagnosis::JobInputs& facts, int attempt);

  // Stores `baseline`, replacing the one of the same configuration; `done` runs as
  // above.
  void PutBaselineAsync(const Baseline& baseline, Done done);
  absl::StatusOr<std::vector<Baseline>> LoadBaselines();

  // Join tokens (server/auth/join_tokens.h; store_join_tokens.cc). Each write waits for its
  // commit. Insert: ALREADY_EXISTS when the id is taken.
  absl::Status InsertJoinToken(const JoinTokenRecord& record);
  // Every token, oldest first.
  absl::StatusOr<std::vector<JoinTokenRecord>> LoadJoinTokens();
  // The token with `id`, or nullopt.
  absl::StatusOr<std::optional<JoinTokenRecord>> FindJoinToken(const std::string& id);
  // Marks it revoked; false when no token has that id.
  absl::StatusOr<bool> RevokeJoinToken(const std::string& id);
  // Spends one use, in one conditional UPDATE, when the token with `id` is usable at `now`
  // (JoinTokenUsable); false (nothing changed) otherwise. Two callers racing for the last
  // use: one gets true.
  absl::StatusOr<bool> SpendJoinTokenUse(const std::string& id, absl::Time now);

  // Every job, ordered by submission.
  absl::StatusOr<std::vector<Job>> LoadJobs();
  // One attempt's per-rank detail as LoadJobs loads it: a Job with only id, attempt,
  // placements, rank_devices, rank_precisions, agent_versions, rank_versions, summaries,
  // gpu_telemetry and diagnosis set (empty or null where nothing is stored).
  absl::StatusOr<Job> LoadRankDetail(const std::string& job_id, int attempt);
  absl::StatusOr<int64_t> CountSamples(const std::string& job_id, int attempt);
  // By rank, then iteration; only iterations >= from_iteration.
  absl::StatusOr<std::vector<IterationSample>> ReadSamples(const std::string& job_id,
                                                           int attempt,
                                                           int from_iteration = 0);
  // One page of ReadSamples for the web API: iterations >= from_iteration (of `rank`
  // only, when set), by rank then iteration, starting at (after_rank, after_iteration)
  // exclusive when `after` is set; at most `limit`.
  struct SampleCursor {
    int rank = 0;
    int iteration = 0;
  };
  absl::StatusOr<std::vector<IterationSample>> ReadSamplesPage(
      const std::string& job_id, int attempt, int from_iteration, std::optional<int> rank,
      std::optional<SampleCursor> after, int limit);
  // A chart's view of the iterations >= from_iteration (of `rank` only, when set): per
  // rank, its stored iterations cut into at most `max_points` buckets of equal width in
  // iterations (ceil((last - first + 1) / max_points)), each summarised in SQL
  // (docs/web-api.md, /samples?points=N). By rank, then iteration.
  struct SampleBucket {
    int rank = 0;
    int first_iteration = 0;
    int last_iteration = 0;
    int64_t samples = 0;           // stored iterations in the bucket
    double mean_step_time_s = 0;
    double mean_data_time_s = 0;
    int64_t images = 0;            // summed over the bucket (this rank)
    double step_time_sum_s = 0;
    std::optional<double> mean_loss;  // of the finite losses; unset if none
    int64_t nonfinite_losses = 0;
    double elapsed_s = 0;          // the largest: the bucket's end on the rank's clock
    bool warmup = false;           // any iteration of the bucket is warm-up
    int64_t received_unix_ns = 0;  // the largest
    // The step split's means over the bucket's iterations that have it; unset if none.
    std::optional<double> mean_compute_time_s;
    std::optional<double> mean_forward_backward_time_s;
    std::optional<double> mean_allreduce_wait_time_s;
    std::optional<double> mean_optimizer_time_s;
  };
  absl::StatusOr<std::vector<SampleBucket>> ReadSampleBuckets(const std::string& job_id,
                                                              int attempt, int from_iteration,
                                                              std::optional<int> rank,
                                                              int max_points);
  absl::StatusOr<std::vector<GpuSample>> ReadGpuSamples(const std::string& job_id, int attempt);
  // The live job stream's pages, in the order the attempt's rows are stored: its samples
  // (or GPU readings) after `after`, by iteration (or seq), then rank; at most `limit`.
  // One pass over what is new, however many ranks the job has.
  struct AttemptCursor {
    int64_t position = 0;  // an iteration (samples) or a seq (GPU readings)
    int rank = -1;
  };
  absl::StatusOr<std::vector<IterationSample>> ReadSamplesAfter(const std::string& job_id,
                                                                int attempt, AttemptCursor after,
                                                                int limit);
  absl::StatusOr<std::vector<GpuSample>> ReadGpuSamplesAfter(const std::string& job_id,
                                                             int attempt, AttemptCursor after,
                                                             int limit);
  // Fleet screening's narrow read (store_screening.cc; ReadService::Screening): of one
  // job's attempt, only what diagnosis::ScreenedGpu needs, read straight into its shape.
  struct ScreeningRows {
    std::vector<double> step_times_s;             // rank 0's measured (non-warm-up), by iteration
    std::vector<diagnosis::GpuReading> readings;  // rank 0's GPU readings, by seq
  };
  // For each (job id, attempt) of `attempts`, in order, its ScreeningRows (empty for an
  // attempt below 1 or one with nothing stored); iterations >= 0 only, as ReadSamples.
  // One lock of the reader for all, the same two prepared statements for every job.
  absl::StatusOr<std::vector<ScreeningRows>> ReadScreeningRows(
      const std::vector<std::pair<std::string, int>>& attempts);
  // Per (rank, iteration): the joined mean power and SM clock (unset where not joined).
  struct IterationMeans {
    std::optional<double> power_w;
    std::optional<double> sm_clock_mhz;
  };
  absl::StatusOr<std::map<std::pair<int, int>, IterationMeans>> ReadIterationMeans(
      const std::string& job_id, int attempt);
  // For progress: per rank, how many distinct iterations are stored.
  absl::StatusOr<std::map<int, int>> IterationsByRank(const std::string& job_id,
                                                      int attempt);
  // Per rank with any: the fastest stored measured (not warm-up) step time, in seconds;
  // what a rank summary's throughput is checked against (server/core/sample_validation.h).
  absl::StatusOr<std::map<int, double>> FastestMeasuredStepByRank(const std::string& job_id,
                                                                  int attempt);
  // Per rank with any: how many stored iterations have a NaN or infinite loss.
  absl::StatusOr<std::map<int, int64_t>> NonFiniteLossesByRank(const std::string& job_id,
                                                               int attempt);
  // Every sample series (one rank of one attempt) with what IterationsByRank and
  // NonFiniteLossesByRank count, kept in sample_series as samples are appended
  // (migration 17): all jobs' in one read, without visiting a sample (JobManager::Recover).
  struct SeriesCounts {
    std::string job_id;
    int attempt = 0;
    int rank = 0;
    int64_t samples = 0;
    int64_t nonfinite_losses = 0;
  };
  absl::StatusOr<std::vector<SeriesCounts>> ReadSeriesCounts();
  // The variability report's per-job summaries (store_variability.cc; migration 18):
  // for each (job id, attempt) of `attempts`, in order, its stored summary, or none.
  absl::StatusOr<std::vector<std::optional<JobVariability>>> ReadJobVariability(
      const std::vector<std::pair<std::string, int>>& attempts);
  struct JobVariabilityRow {
    std::string job_id;
    int attempt = 0;
    JobVariability summary;
  };
  // Stores (or replaces) the rows' summaries on the writer thread; `done` after (not
  // called when the store is stopping: then nothing is written).
  void WriteJobVariabilityAsync(std::vector<JobVariabilityRow> rows,
                                std::function<void(absl::Status)> done);
  // The health check: the reader answers a query on the file and the writer thread
  // answers a no-op within `timeout` (it is stuck or far behind otherwise). UNAVAILABLE
  // naming which, or the reader's error.
  absl::Status Check(absl::Duration timeout);
  const std::string& path() const { return path_; }
  // Random, made when the database was created (or migrated to schema 5); a new or
  // replaced database has a new one.
  const std::string& database_id() const { return database_id_; }

 private:
  // Per rank: stored iterations of (job_id, attempt) that also meet `condition` (SQL over
  // iteration_rows s, starting with " AND"; empty for all).
  absl::StatusOr<std::map<int, int64_t>> CountSamplesByRank(const std::string& job_id,
                                                            int attempt,
                                                            const std::string& condition);
  struct WriteOp {
    std::function<absl::Status(Database&)> apply;
    std::function<void(absl::Status)> done;
  };

  Store(std::string path, std::unique_ptr<Database> writer, std::unique_ptr<Database> reader,
        std::unique_ptr<Database> checkpointer, std::unique_ptr<Database> analyst);
  // Runs `work` on the analysis thread, with that thread's own read connection, once
  // every write queued before this call has committed (so it reads them): the end-of-job
  // analyses read an attempt's rows there, not on the writer thread, which then only
  // writes what they found. `work` reads and returns what to do next, which runs after
  // the connection is released (so that it may take locks and queue writes); it gets
  // nullptr once the store is shutting down. When the writes before could not be
  // committed, `failed` gets why instead. False (both dropped) once stopping.
  using AnalysisWork = std::function<std::function<void()>(Database* reader)>;
  bool AnalyzeAfterQueuedWrites(AnalysisWork work, std::function<void(absl::Status)> failed);
  // AnalyzeAfterQueuedWrites for the analyses of one attempt: its rows are read, then
  // `analyze` computes from them and returns what queues its writes. `failed` gets why
  // when the rows could not be read or the store is shutting down.
  using RowsAnalysis = std::function<std::function<void()>(const AttemptRows& rows)>;
  bool AnalyzeAttemptRows(const std::string& job_id, int attempt, RowsAnalysis analyze,
                          std::function<void(absl::Status)> failed);
  // The analyses' second halves, on the analysis thread once the attempt's rows are read:
  // each computes its result and returns what queues its write, whose commit answers.
  std::function<void()> JoinTelemetryOf(const TelemetryRequest& request, const AttemptRows& rows,
                                        std::shared_ptr<TelemetryDone> answer);
  std::function<void()> DiagnoseWith(const diagnosis::JobInputs& facts, int attempt,
                                     const AttemptRows& rows,
                                     std::shared_ptr<DiagnosisDone> answer);
  void AnalysisLoop();
  absl::Status Write(std::function<absl::Status(Database&)> apply);
  void Enqueue(WriteOp op);
  bool TryEnqueue(WriteOp op);  // false (op dropped) once stopping
  void WriterLoop();
  void CheckpointLoop();
  // The writer connection's WAL hook: after each commit, with the WAL's size in pages.
  static int OnWalCommit(void* store, sqlite3* db, const char* name, int frames);
  // On the writer thread between transactions, after a background checkpoint.
  void RestartWal();
  // On the writer thread: blocks until the pending checkpoint is done (or stopping).
  void WaitForCheckpoint();
  // On the writer thread: when SQLite opened the database read-only (its disk was
  // read-only at the time) and the file can be written now, every connection is
  // reopened, so that writes resume.
  void ReopenIfReadOnly();

  const std::string path_;
  std::string database_id_;
  std::unique_ptr<Database> writer_db_;  // used only by writer_thread_
  std::mutex reader_mu_;
  std::unique_ptr<Database> reader_db_;  // guarded by reader_mu_

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<WriteOp> queue_;
  bool stopping_ = false;
  std::thread writer_thread_;

  std::mutex checkpoint_db_mu_;  // held while checkpoint_db_ is in use, or replaced
  std::unique_ptr<Database> checkpoint_db_;  // used by checkpoint_thread_
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  std::condition_variable checkpoint_done_cv_;  // restart_wanted_ set (under checkpoint_mu_)
  bool checkpoint_wanted_ = false;     // guarded by checkpoint_mu_
  bool checkpoint_stopping_ = false;   // guarded by checkpoint_mu_
  // Set by the writer when it asks for a checkpoint, cleared once the WAL restarted.
  std::atomic<bool> checkpoint_pending_{false};
  // Set by the checkpointer when its checkpoint is done: the writer restarts the WAL.
  std::atomic<bool> restart_wanted_{false};
  // The WAL's size in pages after the writer's last commit.
  std::atomic<int> wal_frames_{0};
  std::thread checkpoint_thread_;

  std::mutex analysis_db_mu_;  // held while analysis_db_ is in use, or replaced
  std::unique_ptr<Database> analysis_db_;  // used by analysis_thread_
  std::mutex analysis_mu_;
  std::condition_variable analysis_cv_;
  std::deque<AnalysisWork> analysis_queue_;  // guarded by analysis_mu_
  bool analysis_stopping_ = false;           // guarded by analysis_mu_
  std::thread analysis_thread_;
};

}  // namespace bench

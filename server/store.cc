#include "server/store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <thread>
#include <future>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/sqlite_db.h"
#include "server/store_internal.h"

#include <sqlite3.h>

namespace bench {
namespace {

constexpr size_t kMaxOpsPerTransaction = 512;

// allowed_nodes and node_labels in one TEXT column each: items separated by the ASCII
// unit separator, a label as KEY=VALUE (keys never contain '=': spec_validation.cc).
constexpr char kItemSeparator = '\x1f';

std::string EncodeNodes(const std::vector<std::string>& nodes) {
  return absl::StrJoin(nodes, std::string(1, kItemSeparator));
}

std::vector<std::string> DecodeNodes(const std::string& text) {
  if (text.empty()) return {};
  return absl::StrSplit(text, kItemSeparator);
}

std::string EncodeLabels(const std::map<std::string, std::string>& labels) {
  return absl::StrJoin(labels, std::string(1, kItemSeparator), absl::PairFormatter("="));
}

std::map<std::string, std::string> DecodeLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) return labels;
  for (absl::string_view item : absl::StrSplit(text, kItemSeparator)) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    labels.insert(std::move(kv));
  }
  return labels;
}

JobState ParseState(const std::string& text) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                     JobState::kFailed, JobState::kCancelled}) {
    if (text == JobStateText(s)) return s;
  }
  return JobState::kFailed;
}

absl::Status WriteMutableJobState(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(Statement * update,
                   db.Prepare("UPDATE jobs SET state=?2, reason=?3, attempt=?4, "
                              "device_kind=?5, parameters=?6, updated_ms=?7, "
                              "telemetry_note=?8, requeues=?9 WHERE id=?1"));
  update->Bind(1, job.id);
  update->Bind(2, JobStateText(job.state));
  update->Bind(3, job.reason);
  update->Bind(4, int64_t{job.attempt});
  update->Bind(5, DeviceKindText(job.device_kind));
  update->Bind(6, job.parameters);
  update->Bind(7, ToMs(absl::Now()));
  update->Bind(8, job.telemetry_note);
  update->Bind(9, int64_t{job.requeues});
  RETURN_IF_ERROR(update->Run());
  if (update->changes() != 1) return absl::NotFoundError(absl::StrCat("job ", job.id));

  ASSIGN_OR_RETURN(Statement * history,
                   db.Prepare("INSERT OR IGNORE INTO job_history VALUES (?1, ?2, ?3, ?4, ?5)"));
  for (size_t i = 0; i < job.history.size(); ++i) {
    history->Reset();
    history->Bind(1, job.id);
    history->Bind(2, static_cast<int64_t>(i));
    history->Bind(3, JobStateText(job.history[i].state));
    history->Bind(4, job.history[i].reason);
    history->Bind(5, ToMs(job.history[i].time));
    RETURN_IF_ERROR(history->Run());
  }
  ASSIGN_OR_RETURN(Statement * rank,
                   db.Prepare("INSERT OR IGNORE INTO job_ranks (job_id, attempt, rank, agent, "
                              "device_index, hostname, gpu_uuid, gpu_name) VALUES (?1, ?2, ?3, "
                              "?4, ?5, ?6, ?7, ?8)"));
  std::map<int, const RankDevice*> devices;
  for (const RankDevice& device : job.rank_devices) devices[device.rank] = &device;
  for (const Placement& placement : job.placements) {
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      rank->Reset();
      rank->Bind(1, job.id);
      rank->Bind(2, int64_t{job.attempt});
      rank->Bind(3, int64_t{placement.ranks[i]});
      rank->Bind(4, placement.agent);
      rank->Bind(5, int64_t{placement.device_indices[i]});
      auto device = devices.find(placement.ranks[i]);
      bool known = device != devices.end();
      rank->Bind(6, known ? device->second->hostname : std::string());
      rank->Bind(7, known ? device->second->gpu_uuid : std::string());
      rank->Bind(8, known ? device->second->gpu_name : std::string());
      RETURN_IF_ERROR(rank->Run());
    }
  }
  ASSIGN_OR_RETURN(Statement * precision,
                   db.Prepare("UPDATE job_ranks SET precision=?4 WHERE job_id=?1 AND "
                              "attempt=?2 AND rank=?3 AND precision<>?4"));
  for (const auto& [rank_index, text] : job.rank_precisions) {
    precision->Reset();
    precision->Bind(1, job.id);
    precision->Bind(2, int64_t{job.attempt});
    precision->Bind(3, int64_t{rank_index});
    precision->Bind(4, text);
    RETURN_IF_ERROR(precision->Run());
  }
  ASSIGN_OR_RETURN(Statement * version,
                   db.Prepare("INSERT OR REPLACE INTO job_versions VALUES (?1, ?2, ?3, ?4, ?5, "
                              "?6)"));
  auto write_versions = [&](const std::string& agent, int rank_index,
                            const Versions& versions) -> absl::Status {
    for (const auto& [key, value] : versions) {
      version->Reset();
      version->Bind(1, job.id);
      version->Bind(2, int64_t{job.attempt});
      version->Bind(3, agent);
      version->Bind(4, int64_t{rank_index});
      version->Bind(5, key);
      version->Bind(6, value);
      RETURN_IF_ERROR(version->Run());
    }
    return absl::OkStatus();
  };
  for (const auto& [agent, versions] : job.agent_versions) {
    RETURN_IF_ERROR(write_versions(agent, -1, versions));
  }
  for (const auto& [rank_index, versions] : job.rank_versions) {
    RETURN_IF_ERROR(write_versions("", rank_index, versions));
  }
  ASSIGN_OR_RETURN(
      Statement * summary,
      db.Prepare("INSERT OR REPLACE INTO rank_summaries VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                 "?8, ?9)"));
  for (const auto& [rank_index, s] : job.summaries) {
    summary->Reset();
    summary->Bind(1, job.id);
    summary->Bind(2, int64_t{job.attempt});
    summary->Bind(3, int64_t{rank_index});
    summary->Bind(4, int64_t{s.measured_iterations});
    summary->Bind(5, s.measured_images);
    summary->Bind(6, s.window_s);
    summary->Bind(7, s.step_time_median_s);
    summary->Bind(8, s.skipped_steps);
    summary->Bind(9, s.nonfinite_losses);
    RETURN_IF_ERROR(summary->Run());
  }
  return WriteGpuTelemetryRows(db, job);
}

// The job's row, its labels, and everything WriteMutableJobState writes.
absl::Status InsertJobRows(Database& db, const Job& job) {
  ASSIGN_OR_RETURN(
      Statement * insert,
      db.Prepare("INSERT INTO jobs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                 "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?18, '', ?19, ?20, ?21, ?22, ?23, ?24, ?25)"));
  const JobSpec& spec = job.spec;
  insert->Bind(1, job.id);
  insert->Bind(2, job.seq);
  if (spec.request_id.empty()) {
    insert->BindNull(3);
  } else {
    insert->Bind(3, spec.request_id);
  }
  insert->Bind(4, spec.model);
  insert->Bind(5, int64_t{spec.devices});
  insert->Bind(6, PrecisionText(spec.precision));
  insert->Bind(7, int64_t{spec.batch_size});
  insert->Bind(8, int64_t{spec.iterations});
  insert->Bind(9, int64_t{spec.warmup_iterations});
  insert->Bind(10, int64_t{spec.image_size});
  insert->Bind(11, spec.data);
  insert->Bind(12, spec.name);
  insert->Bind(13, JobStateText(job.state));
  insert->Bind(14, job.reason);
  insert->Bind(15, int64_t{job.attempt});
  insert->Bind(16, DeviceKindText(job.device_kind));
  insert->Bind(17, job.parameters);
  insert->Bind(18, ToMs(job.created));
  insert->Bind(19, int64_t{spec.nodes});
  insert->Bind(20, int64_t{spec.devices_per_node});
  insert->Bind(21, EncodeNodes(spec.allowed_nodes));
  insert->Bind(22, EncodeLabels(spec.node_labels));
  insert->Bind(23, int64_t{spec.wall_time_limit_s});
  insert->Bind(24, int64_t{spec.hang_timeout_s});
  insert->Bind(25, int64_t{job.requeues});
  RETURN_IF_ERROR(insert->Run());
  ASSIGN_OR_RETURN(Statement * label, db.Prepare("INSERT INTO job_labels VALUES (?1, ?2, ?3)"));
  for (const auto& [key, value] : spec.labels) {
    label->Reset();
    label->Bind(1, job.id);
    label->Bind(2, key);
    label->Bind(3, value);
    RETURN_IF_ERROR(label->Run());
  }
  return WriteMutableJobState(db, job);
}

}  // namespace

Precision ParsePrecisionText(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "amp") return Precision::kAmp;
  if (text == "tf32") return Precision::kTf32;
  if (text == "bf16") return Precision::kBf16;
  return Precision::kUnspecified;
}

DeviceKind ParseDeviceKind(const std::string& text) {
  if (text == "cuda") return DeviceKind::kCuda;
  if (text == "cpu") return DeviceKind::kCpu;
  return DeviceKind::kNone;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto writer, Database::Open(path, /*create=*/true));
  RETURN_IF_ERROR(MigrateSchema(*writer));
  ASSIGN_OR_RETURN(auto reader, Database::Open(path, /*create=*/false));
  ASSIGN_OR_RETURN(auto checkpointer, Database::Open(path, /*create=*/false));
  std::string database_id;
  {
    ASSIGN_OR_RETURN(Statement * select,
                     reader->Prepare("SELECT value FROM meta WHERE key='database_id'"));
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) return absl::DataLossError(absl::StrCat(path, ": the database has no id (meta)"));
    database_id = select->Text(0);
    select->Reset();  // ends the read: a statement left mid-step pins the reader's snapshot
  }
  auto store = std::unique_ptr<Store>(
      new Store(path, std::move(writer), std::move(reader), std::move(checkpointer)));
  store->database_id_ = std::move(database_id);
  return store;
}

Store::Store(std::string path, std::unique_ptr<Database> writer,
             std::unique_ptr<Database> reader, std::unique_ptr<Database> checkpointer)
    : path_(std::move(path)),
      writer_db_(std::move(writer)),
      reader_db_(std::move(reader)),
      checkpoint_db_(std::move(checkpointer)) {
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  writer_thread_ = std::thread([this] { WriterLoop(); });
}

Store::~Store() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  writer_thread_.join();
  {
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    checkpoint_stopping_ = true;
  }
  checkpoint_cv_.notify_all();
  checkpoint_thread_.join();
}

int Store::OnWalCommit(void* arg, sqlite3*, const char*, int frames) {
  auto* store = static_cast<Store*>(arg);
  if (frames >= kCheckpointFrames && !store->checkpoint_pending_.exchange(true)) {
    {
      std::lock_guard<std::mutex> lock(store->checkpoint_mu_);
      store->checkpoint_wanted_ = true;
    }
    store->checkpoint_cv_.notify_one();
  }
  return SQLITE_OK;
}

void Store::CheckpointLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(checkpoint_mu_);
      checkpoint_cv_.wait(lock, [this] { return checkpoint_stopping_ || checkpoint_wanted_; });
      if (checkpoint_stopping_) return;
      checkpoint_wanted_ = false;
    }
    // PASSIVE: copies what the WAL holds now without blocking the writer (which goes on
    // appending); failures (busy, I/O) leave the WAL as it is for the next round.
    int rc;
    {
      std::lock_guard<std::mutex> db_lock(checkpoint_db_mu_);
      rc = sqlite3_wal_checkpoint_v2(checkpoint_db_->handle(), nullptr,
                                     SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
      Log("store: background checkpoint of ", path_, " failed: ", sqlite3_errstr(rc));
    }
    restart_wanted_.store(true, std::memory_order_release);
  }
}

void Store::RestartWal() {
  // The pages appended while the background checkpoint ran are copied here, with the
  // writer lock held, so that the next transaction writes the WAL from its start. No
  // busy wait: a reader still on an old snapshot makes this fail, and it is retried
  // at the next checkpoint.
  sqlite3* db = writer_db_->handle();
  sqlite3_busy_timeout(db, 0);
  sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_RESTART, nullptr, nullptr);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  restart_wanted_.store(false, std::memory_order_relaxed);
  checkpoint_pending_.store(false, std::memory_order_release);
}

bool Store::TryEnqueue(WriteOp op) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (stopping_) return false;
  queue_.push_back(std::move(op));
  queue_cv_.notify_one();
  return true;
}

void Store::Enqueue(WriteOp op) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (!stopping_) {
      queue_.push_back(std::move(op));
      queue_cv_.notify_one();
      return;
    }
  }
  op.done(absl::UnavailableError("store is shutting down"));
}

absl::Status Store::Write(std::function<absl::Status(Database&)> apply) {
  auto promise = std::make_shared<std::promise<absl::Status>>();
  auto future = promise->get_future();
  Enqueue({std::move(apply), [promise](absl::Status s) { promise->set_value(std::move(s)); }});
  return future.get();
}

void Store::WriterLoop() {
  while (true) {
    std::vector<WriteOp> batch;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued is committed
      while (!queue_.empty() && batch.size() < kMaxOpsPerTransaction) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    ReopenIfReadOnly();
    Database& db = *writer_db_;
    // Replaces the writer's automatic checkpoints (wal_autocheckpoint installs a WAL
    // hook of its own), which would copy the WAL back into the database on this thread;
    // set on every round because the connection may have been reopened.
    sqlite3_wal_hook(db.handle(), &Store::OnWalCommit, this);
    std::vector<absl::Status> results(batch.size());
    absl::Status begin = db.Exec("BEGIN IMMEDIATE");
    if (!begin.ok()) {
      for (auto& op : batch) op.done(begin);
      continue;
    }
    // Set when SQLite rolled the whole transaction back by itself (a full disk, an I/O
    // error): nothing of the batch is stored, and the rest of it must not run outside a
    // transaction.
    absl::Status lost;
    for (size_t i = 0; i < batch.size() && lost.ok(); ++i) {
      absl::Status status = db.Exec("SAVEPOINT op");
      if (status.ok()) status = batch[i].apply(db);
      if (status.ok()) {
        status = db.Exec("RELEASE op");
      } else if (sqlite3_get_autocommit(db.handle()) != 0) {
        lost = status;
      } else {
        db.Exec("ROLLBACK TO op").IgnoreError();
        db.Exec("RELEASE op").IgnoreError();
      }
      results[i] = status;
    }
    if (!lost.ok()) {
      for (auto& result : results) result = lost;
      for (size_t i = 0; i < batch.size(); ++i) batch[i].done(results[i]);
      continue;
    }
    absl::Status commit = db.Exec("COMMIT");
    if (!commit.ok()) {
      db.Exec("ROLLBACK").IgnoreError();
      for (auto& result : results) {
        if (result.ok()) result = commit;
      }
    }
    for (size_t i = 0; i < batch.size(); ++i) batch[i].done(results[i]);
    if (restart_wanted_.load(std::memory_order_acquire)) RestartWal();
  }
}

void Store::ReopenIfReadOnly() {
  if (sqlite3_db_readonly(writer_db_->handle(), "main") != 1) return;
  if (access(path_.c_str(), W_OK) != 0) return;  // still read-only (EROFS)
  // The connections of one process share the file's WAL index, which SQLite set up
  // read-only: all of them must close before one can write.
  std::lock_guard<std::mutex> reader_lock(reader_mu_);
  std::lock_guard<std::mutex> checkpoint_lock(checkpoint_db_mu_);
  writer_db_.reset();
  reader_db_.reset();
  checkpoint_db_.reset();
  auto open = [this](std::unique_ptr<Database>& slot) {
    // Opening an existing file fails only for lack of memory or descriptors; the store
    // cannot go on without its connection, so it waits for one.
    for (int attempt = 0; slot == nullptr; ++attempt) {
      absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_, /*create=*/false);
      if (db.ok()) {
        slot = std::move(*db);
      } else {
        if (attempt == 0) Log("store: cannot reopen ", path_, ": ", db.status().ToString());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  };
  open(writer_db_);
  open(reader_db_);
  open(checkpoint_db_);
  bool writable = sqlite3_db_readonly(writer_db_->handle(), "main") == 0;
  Log("store: ", path_, writable ? " is writable again" : " is still read-only");
}

absl::Status Store::InsertJob(const Job& job) {
  return Write([job](Database& db) { return InsertJobRows(db, job); });
}

void Store::InsertJobAsync(const Job& job, Done done) {
  Enqueue({[job](Database& db) { return InsertJobRows(db, job); }, std::move(done)});
}

absl::Status Store::UpdateJob(const Job& job) {
  return Write([job](Database& db) { return WriteMutableJobState(db, job); });
}

void Store::UpdateJobAsync(const Job& job, Done done) {
  Enqueue({[job](Database& db) { return WriteMutableJobState(db, job); }, std::move(done)});
}
absl::StatusOr<std::vector<Job>> Store::LoadJobs() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  Database& db = *reader_db_;
  std::vector<Job> jobs;
  std::map<std::string, size_t> index;
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare("SELECT id, seq, request_id, model, devices, precision, "
                              "batch_size, iterations, warmup_iterations, image_size, data, "
                              "name, state, reason, attempt, device_kind, parameters, "
                              "created_ms, telemetry_note, nodes, devices_per_node, "
                              "allowed_nodes, node_labels, wall_time_limit_s, "
                              "hang_timeout_s, requeues FROM jobs ORDER BY seq"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    Job job;
    job.id = select->Text(0);
    job.seq = select->Int(1);
    job.spec.request_id = select->Text(2);
    job.spec.model = select->Text(3);
    job.spec.devices = static_cast<int>(select->Int(4));
    job.spec.precision = ParsePrecisionText(select->Text(5));
    job.spec.batch_size = static_cast<int>(select->Int(6));
    job.spec.iterations = static_cast<int>(select->Int(7));
    job.spec.warmup_iterations = static_cast<int>(select->Int(8));
    job.spec.image_size = static_cast<int>(select->Int(9));
    job.spec.data = select->Text(10);
    job.spec.name = select->Text(11);
    job.state = ParseState(select->Text(12));
    job.reason = select->Text(13);
    job.attempt = static_cast<int>(select->Int(14));
    job.device_kind = ParseDeviceKind(select->Text(15));
    job.parameters = select->Int(16);
    job.created = FromMs(select->Int(17));
    job.telemetry_note = select->Text(18);
    job.spec.nodes = static_cast<int>(select->Int(19));
    job.spec.devices_per_node = static_cast<int>(select->Int(20));
    job.spec.allowed_nodes = DecodeNodes(select->Text(21));
    job.spec.node_labels = DecodeLabels(select->Text(22));
    job.spec.wall_time_limit_s = static_cast<int>(select->Int(23));
    job.spec.hang_timeout_s = static_cast<int>(select->Int(24));
    job.requeues = static_cast<int>(select->Int(25));
    index[job.id] = jobs.size();
    jobs.push_back(std::move(job));
  }
  ASSIGN_OR_RETURN(Statement * labels, db.Prepare("SELECT job_id, key, value FROM job_labels"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, labels->Step());
    if (!row) break;
    auto it = index.find(labels->Text(0));
    if (it != index.end()) jobs[it->second].spec.labels[labels->Text(1)] = labels->Text(2);
  }
  ASSIGN_OR_RETURN(
      Statement * history,
      db.Prepare("SELECT job_id, state, reason, time_ms FROM job_history ORDER BY job_id, seq"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, history->Step());
    if (!row) break;
    auto it = index.find(history->Text(0));
    if (it == index.end()) continue;
    jobs[it->second].history.push_back(
        {ParseState(history->Text(1)), history->Text(2), FromMs(history->Int(3))});
  }
  ASSIGN_OR_RETURN(Statement * ranks,
                   db.Prepare("SELECT job_id, attempt, rank, agent, device_index, hostname, "
                              "gpu_uuid, gpu_name, precision FROM job_ranks "
                              "ORDER BY job_id, attempt, rank"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, ranks->Step());
    if (!row) break;
    auto it = index.find(ranks->Text(0));
    if (it == index.end()) continue;
    Job& job = jobs[it->second];
    if (ranks->Int(1) != job.attempt) continue;
    std::string agent = ranks->Text(3);
    auto placement = std::find_if(job.placements.begin(), job.placements.end(),
                                  [&](const Placement& p) { return p.agent == agent; });
    if (placement == job.placements.end()) {
      job.placements.push_back(Placement{agent, {}, {}});
      placement = job.placements.end() - 1;
    }
    placement->ranks.push_back(static_cast<int>(ranks->Int(2)));
    placement->device_indices.push_back(static_cast<int>(ranks->Int(4)));
    job.rank_devices.push_back(RankDevice{static_cast<int>(ranks->Int(2)), agent,
                                          ranks->Text(5), static_cast<int>(ranks->Int(4)),
                                          ranks->Text(6), ranks->Text(7)});
    if (std::string precision = ranks->Text(8); !precision.empty()) {
      job.rank_precisions[static_cast<int>(ranks->Int(2))] = std::move(precision);
    }
  }
  ASSIGN_OR_RETURN(Statement * versions,
                   db.Prepare("SELECT job_id, attempt, agent, rank, key, value FROM "
                              "job_versions"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, versions->Step());
    if (!row) break;
    auto it = index.find(versions->Text(0));
    if (it == index.end()) continue;
    Job& job = jobs[it->second];
    if (versions->Int(1) != job.attempt) continue;
    int rank_index = static_cast<int>(versions->Int(3));
    if (rank_index < 0) {
      job.agent_versions[versions->Text(2)][versions->Text(4)] = versions->Text(5);
    } else {
      job.rank_versions[rank_index][versions->Text(4)] = versions->Text(5);
    }
  }
  ASSIGN_OR_RETURN(Statement * summaries,
                   db.Prepare("SELECT job_id, attempt, rank, measured_iterations, "
                              "measured_images, window_s, step_time_median_s, "
                              "skipped_steps, nonfinite_losses FROM rank_summaries"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, summaries->Step());
    if (!row) break;
    auto it = index.find(summaries->Text(0));
    if (it == index.end()) continue;
    Job& job = jobs[it->second];
    if (summaries->Int(1) != job.attempt) continue;
    RankSummary s;
    s.rank = static_cast<int>(summaries->Int(2));
    s.measured_iterations = static_cast<int>(summaries->Int(3));
    s.measured_images = summaries->Int(4);
    s.window_s = summaries->Double(5);
    s.step_time_median_s = summaries->Double(6);
    s.skipped_steps = summaries->Int(7);
    s.nonfinite_losses = summaries->Int(8);
    job.summaries[s.rank] = s;
  }
  RETURN_IF_ERROR(LoadGpuTelemetry(db, index, jobs));
  return jobs;
}

}  // namespace bench


// Store's machinery, whatever the table: opening the file (migrated, with its four
// connections), the writer thread that commits queued operations in batched
// transactions with one savepoint per operation, background WAL checkpoints, the
// analysis thread that reads for the end-of-job analyses, and the reopen after a
// read-only disk. The table families' operations are in store_*.cc.
#include "server/store/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store_internal.h"

namespace bench {
namespace {

constexpr size_t kMaxOpsPerTransaction = 512;

// The writer connection's settings for its batched transactions (after the migrations,
// whose large sorts keep using temporary files); docs/PERFORMANCE.md, "The writer's
// sub-journal and page cache".
// - Each operation runs in a savepoint, and SQLite keeps the pages an operation changes
//   that were already in the database when it began (the tail pages of the running
//   jobs' series) in a sub-journal, to roll that operation back alone; past 64 KiB the
//   sub-journal is a temporary file, which the writer wrote 50,000 pages a second into
//   at 1,024 nodes x 8 GPUs. In memory it holds one operation's pages at most: it is
//   emptied when the operation's savepoint is released.
// - A batch at that load dirties more pages than the 32 MiB the other connections keep,
//   and pages spilled to the WAL mid-transaction may be dirtied again; with 256 MiB the
//   same run stored about 15 % more rows (measured, not the mechanism).
absl::Status ConfigureWriter(Database& db) {
  RETURN_IF_ERROR(db.Exec("PRAGMA temp_store=MEMORY"));
  return db.Exec("PRAGMA cache_size=-262144");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto writer, Database::Open(path, /*create=*/true));
  RETURN_IF_ERROR(MigrateSchema(*writer));
  RETURN_IF_ERROR(ConfigureWriter(*writer));
  ASSIGN_OR_RETURN(auto reader, Database::Open(path, /*create=*/false));
  ASSIGN_OR_RETURN(auto checkpointer, Database::Open(path, /*create=*/false));
  ASSIGN_OR_RETURN(auto analyst, Database::Open(path, /*create=*/false));
  std::string database_id;
  {
    ASSIGN_OR_RETURN(Statement * select,
                     reader->Prepare("SELECT value FROM meta WHERE key='database_id'"));
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) return absl::DataLossError(absl::StrCat(path, ": the database has no id (meta)"));
    database_id = select->Text(0);
    select->Reset();  // ends the read: a statement left mid-step pins the reader's snapshot
  }
  auto store = std::unique_ptr<Store>(new Store(path, std::move(writer), std::move(reader),
                                                std::move(checkpointer), std::move(analyst)));
  store->database_id_ = std::move(database_id);
  return store;
}

Store::Store(std::string path, std::unique_ptr<Database> writer,
             std::unique_ptr<Database> reader, std::unique_ptr<Database> checkpointer,
             std::unique_ptr<Database> analyst)
    : path_(std::move(path)),
      writer_db_(std::move(writer)),
      reader_db_(std::move(reader)),
      checkpoint_db_(std::move(checkpointer)),
      analysis_db_(std::move(analyst)) {
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  analysis_thread_ = std::thread([this] { AnalysisLoop(); });
  writer_thread_ = std::thread([this] { WriterLoop(); });
}

Store::~Store() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  writer_thread_.join();
  // After the writer: its last commits may have handed work to the analysis thread,
  // which now gets nullptr for what it has not started.
  {
    std::lock_guard<std::mutex> lock(analysis_mu_);
    analysis_stopping_ = true;
  }
  analysis_cv_.notify_all();
  analysis_thread_.join();
  {
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    checkpoint_stopping_ = true;
  }
  checkpoint_cv_.notify_all();
  checkpoint_thread_.join();
}

int Store::OnWalCommit(void* arg, sqlite3*, const char*, int frames) {
  auto* store = static_cast<Store*>(arg);
  store->wal_frames_.store(frames, std::memory_order_relaxed);
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
    {
      std::lock_guard<std::mutex> lock(checkpoint_mu_);
      restart_wanted_.store(true, std::memory_order_release);
    }
    checkpoint_done_cv_.notify_all();
  }
}

bool Store::AnalyzeAfterQueuedWrites(AnalysisWork work,
                                     std::function<void(absl::Status)> failed) {
  // A write that does nothing: its `done` runs after everything queued before it
  // committed.
  return TryEnqueue({[](Database&) { return absl::OkStatus(); },
                     [this, work = std::move(work), failed = std::move(failed)](
                         absl::Status committed) mutable {
                       if (!committed.ok()) {
                         failed(committed);
                         return;
                       }
                       bool stopping;
                       {
                         std::lock_guard<std::mutex> lock(analysis_mu_);
                         stopping = analysis_stopping_;
                         if (!stopping) analysis_queue_.push_back(std::move(work));
                       }
                       if (stopping) {
                         work(nullptr)();
                       } else {
                         analysis_cv_.notify_one();
                       }
                     }});
}

bool Store::AnalyzeAttemptRows(const std::string& job_id, int attempt, RowsAnalysis analyze,
                               std::function<void(absl::Status)> failed) {
  auto work = [job_id, attempt, analyze = std::move(analyze),
               failed](Database* reader) -> std::function<void()> {
    if (reader == nullptr) {
      return [failed] { failed(absl::UnavailableError("store is shutting down")); };
    }
    absl::StatusOr<AttemptRows> rows = SelectAttemptRows(*reader, job_id, attempt);
    if (!rows.ok()) return [failed, status = rows.status()] { failed(status); };
    return analyze(*rows);
  };
  return AnalyzeAfterQueuedWrites(std::move(work), std::move(failed));
}

void Store::AnalysisLoop() {
  while (true) {
    AnalysisWork work;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(analysis_mu_);
      analysis_cv_.wait(lock, [this] { return analysis_stopping_ || !analysis_queue_.empty(); });
      if (analysis_queue_.empty()) return;  // stopping, and nothing left to answer
      work = std::move(analysis_queue_.front());
      analysis_queue_.pop_front();
      stopping = analysis_stopping_;
    }
    std::function<void()> then;
    if (stopping) {
      then = work(nullptr);
    } else {
      std::lock_guard<std::mutex> db_lock(analysis_db_mu_);
      then = work(analysis_db_.get());
    }
    then();
  }
}

void Store::WaitForCheckpoint() {
  std::unique_lock<std::mutex> lock(checkpoint_mu_);
  checkpoint_done_cv_.wait(lock, [this] {
    return checkpoint_stopping_ || restart_wanted_.load(std::memory_order_acquire);
  });
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

absl::Status Store::Check(absl::Duration timeout) {
  {
    std::lock_guard<std::mutex> lock(reader_mu_);
    ASSIGN_OR_RETURN(Statement * probe, reader_db_->Prepare("SELECT count(*) FROM sqlite_master"));
    absl::StatusOr<bool> row = probe->Step();
    probe->Reset();
    if (!row.ok()) {
      return absl::UnavailableError(absl::StrCat("database ", path_, ": ", row.status().message()));
    }
  }
  auto answered = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> answer = answered->get_future();
  if (!TryEnqueue({[](Database&) { return absl::OkStatus(); },
                   [answered](absl::Status status) { answered->set_value(std::move(status)); }})) {
    return absl::UnavailableError("database: the store is shutting down");
  }
  if (answer.wait_for(absl::ToChronoMilliseconds(timeout)) != std::future_status::ready) {
    return absl::UnavailableError(absl::StrCat("database ", path_, ": the writer did not answer within ",
                                               absl::FormatDuration(timeout)));
  }
  return answer.get();
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
    if (checkpoint_pending_.load(std::memory_order_acquire) &&
        wal_frames_.load(std::memory_order_relaxed) >= kWalCeilingFrames) {
      WaitForCheckpoint();
    }
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
  std::lock_guard<std::mutex> analysis_lock(analysis_db_mu_);
  writer_db_.reset();
  reader_db_.reset();
  checkpoint_db_.reset();
  analysis_db_.reset();
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
  if (absl::Status configured = ConfigureWriter(*writer_db_); !configured.ok()) {
    Log("store: cannot configure the reopened writer of ", path_, ": ", configured.ToString());
  }
  open(reader_db_);
  open(checkpoint_db_);
  open(analysis_db_);
  bool writable = sqlite3_db_readonly(writer_db_->handle(), "main") == 0;
  Log("store: ", path_, writable ? " is writable again" : " is still read-only");
}

}  // namespace bench

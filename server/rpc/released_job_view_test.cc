// An ended job's per-rank detail released from memory (JobManagerOptions::
// ended_jobs_with_rank_detail, server/core/job_manager_detail.cc) changes no answer: its
// view as a client gets it (the whole JobStatus) and the results grid's cells are those of
// a manager holding every detail (one recovered with the default); the latest ended jobs
// keep theirs.
#include <unistd.h>

#include <filesystem>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "common/fake_clock.h"
#include "benchfleet/v1/types.pb.h"
#include "server/core/job_events.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"
#include "server/core/read_service.h"
#include "server/rpc/proto_convert.h"
#include "server/store/sqlite_db.h"

namespace bench {
namespace {

// Takes the database's write lock from a second connection when a job's telemetry has
// been joined (on the store's writer thread, before the manager queues the job's write
// of the joined figures), and holds it until Unblock: that write waits meanwhile.
class WriterBlockedAfterTheJoin : public JobEvents {
 public:
  explicit WriterBlockedAfterTheJoin(std::string path) : path_(std::move(path)) {}
  ~WriterBlockedAfterTheJoin() override { Unblock(); }
  void OnTelemetryJoined(const Job&) override {
    absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_, /*create=*/false);
    EXPECT_TRUE(db.ok()) << db.status();
    if (db.ok() && (*db)->Exec("BEGIN IMMEDIATE").ok()) {
      absl::MutexLock lock(&mu_);
      holder_ = *std::move(db);
    }
    joined_.Notify();
  }
  // Whether the lock was taken (the join came within the deadline).
  bool AwaitJoined() { return joined_.WaitForNotificationWithTimeout(absl::Seconds(30)); }
  void Unblock() {
    absl::MutexLock lock(&mu_);
    if (holder_ != nullptr) EXPECT_TRUE(holder_->Exec("ROLLBACK").ok());
    holder_.reset();
  }
  bool holding() {
    absl::MutexLock lock(&mu_);
    return holder_ != nullptr;
  }

 private:
  const std::string path_;
  absl::Notification joined_;
  absl::Mutex mu_;
  std::unique_ptr<Database> holder_ ABSL_GUARDED_BY(mu_);
};

class RankDetailReleaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_rank_detail_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    Reopen(/*ended_jobs_with_rank_detail=*/0);
  }
  void TearDown() override {
    if (blocker_ != nullptr) blocker_->Unblock();
    reads_.reset();
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen(int ended_jobs_with_rank_detail) {
    reads_.reset();
    manager_.reset();
    store_.reset();
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    JobManagerOptions options;
    options.clock = &clock_;
    options.ended_jobs_with_rank_detail = ended_jobs_with_rank_detail;
    manager_ = std::make_unique<JobManager>(store_.get(), options, events_);
    reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
    ASSERT_TRUE(manager_->Recover().ok());
  }
  // Reopens with none kept and a WriterBlockedAfterTheJoin as the manager's events.
  WriterBlockedAfterTheJoin& ReopenBlockingTheWriterAfterTheJoin() {
    blocker_ = std::make_unique<WriterBlockedAfterTheJoin>(dir_ + "/bench.db");
    events_ = blocker_.get();
    Reopen(/*ended_jobs_with_rank_detail=*/0);
    return *blocker_;
  }
  // Registers `name` with two GPUs and NVML versions, its channel attached.
  void RegisterGpuAgent(const std::string& name) {
    AgentInventory inventory;
    inventory.name = name;
    inventory.address = "127.0.0.1";
    inventory.hostname = name + ".example";
    for (int i = 0; i < 2; ++i) {
      inventory.gpus.push_back({i, "NVIDIA H100 80GB HBM3", "GPU-" + name + std::to_string(i),
                                80LL << 30});
    }
    inventory.versions = {{"driver", "550.54"}, {"cuda_driver", "12.4"}};
    ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
    ASSERT_TRUE(manager_->AttachChannel(name, &channel_).ok());
  }
  // Runs a 2-GPU job on `agent` to SUCCEEDED: start events with versions and precision,
  // 5 iterations (the first warm-up) and 10 GPU readings per rank, summaries.
  std::string RunJob(const std::string& agent, double step_s) {
    const std::string id = StartJob(agent, step_s);
    std::vector<RankReport> ended;
    for (int rank = 0; rank < 2; ++rank) {
      RankReport report;
      report.rank = rank;
      report.outcome = RankOutcome::kSucceeded;
      report.summary = RankSummary{rank, 4, 8, 4 * step_s, step_s};
      ended.push_back(report);
    }
    EXPECT_TRUE(manager_->ReportStatus(agent, id, 1, 0, ended).ok());
    return id;
  }
  // RunJob's job up to its ranks' ends: started, its samples and readings stored.
  std::string StartJob(const std::string& agent, double step_s) {
    absl::StatusOr<SubmitResult> submitted = SubmitAndWait(*manager_, SmallJobSpec(2));
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    const std::string id = submitted->job_id;
    std::vector<RankReport> started;
    for (int rank = 0; rank < 2; ++rank) {
      RankReport report;
      report.rank = rank;
      report.outcome = RankOutcome::kStarted;
      report.versions = {{"torch", "2.6.0"}, {"nccl", "2.21.5"}};
      report.precision = "tf32";
      started.push_back(report);
    }
    EXPECT_TRUE(manager_->ReportStatus(agent, id, 1, 0, started).ok());
    std::vector<IterationSample> samples;
    std::vector<GpuSample> readings;
    const int64_t t0 = 1'000'000'000'000;
    for (int rank = 0; rank < 2; ++rank) {
      for (int i = 1; i <= 5; ++i) {
        IterationSample sample;
        sample.job_id = id;
        sample.attempt = 1;
        sample.rank = rank;
        sample.iteration = i;
        sample.step_time_s = step_s;
        sample.images = 2;
        sample.loss = 1.0;
        sample.data_time_s = 0.001;
        sample.elapsed_s = step_s * i;
        sample.warmup = i == 1;
        sample.received_unix_ns = t0 + static_cast<int64_t>(step_s * i * 1e9);
        samples.push_back(sample);
      }
      for (int seq = 1; seq <= 10; ++seq) {
        GpuSample reading;
        reading.job_id = id;
        reading.attempt = 1;
        reading.rank = rank;
        reading.seq = seq;
        reading.gpu_uuid = "GPU-" + agent + std::to_string(rank);
        reading.gpu_index = rank;
        reading.time_unix_ns = t0 + static_cast<int64_t>(seq * step_s * 0.5 * 1e9);
        reading.power_w = 500 + rank;
        reading.energy_j = 1000.0 + seq * 100;
        reading.sm_clock_mhz = 1980;
        reading.temperature_c = 60;
        readings.push_back(reading);
      }
    }
    EXPECT_TRUE(UploadAndWait(*manager_, agent, samples, readings).ok());
    return id;
  }
  // Whether the manager holds the job with its rank detail released.
  bool Released(const std::string& id) {
    bool released = false;
    manager_->VisitJobs([&](const Job& job) {
      if (job.id == id) released = job.released_ranks != nullptr;
    });
    return released;
  }
  // Whether the manager holds the job without its diagnosis (released with its detail).
  bool HeldWithoutDiagnosis(const std::string& id) {
    bool without = false;
    manager_->VisitJobs([&](const Job& job) {
      if (job.id == id) without = job.diagnosis == nullptr;
    });
    return without;
  }
  // Waits (generously) until the job's detail is released; false if it never is.
  bool AwaitReleased(const std::string& id) {
    absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      if (Released(id)) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }
  benchfleet::v1::JobStatus ViewProto(const std::string& id) {
    absl::StatusOr<JobView> view = manager_->Get(id);
    EXPECT_TRUE(view.ok()) << view.status();
    benchfleet::v1::JobStatus proto;
    if (view.ok()) ToProto(*view, &proto);
    return proto;
  }
  std::vector<std::string> ResultsProto(bool strict = false) {
    ResultsFilter filter;
    filter.strict = strict;
    std::vector<std::string> cells;
    for (const ResultCell& cell : reads_->Results(filter)) {
      benchfleet::v1::ResultCell proto;
      ToProto(cell, &proto);
      cells.push_back(proto.DebugString());
    }
    return cells;
  }

  std::string dir_;
  std::unique_ptr<WriterBlockedAfterTheJoin> blocker_;  // outlives the manager
  JobEvents* events_ = nullptr;  // given to the manager by Reopen
  FakeClock clock_;
  FakeChannel channel_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<ReadService> reads_;
};

TEST_F(RankDetailReleaseTest, AReleasedJobAnswersAsAJobHeldWhole) {
  RegisterGpuAgent("g");
  const std::string id = RunJob("g", 0.1);
  ASSERT_TRUE(AwaitReleased(id));
  const benchfleet::v1::JobStatus released = ViewProto(id);
  const std::vector<std::string> released_results = ResultsProto();
  // The view carries what was released: read back from the store.
  EXPECT_EQ(released.rank_devices_size(), 2);
  EXPECT_EQ(released.gpu_telemetry_size(), 2);
  EXPECT_EQ(released.ranks_summarized(), 2);
  EXPECT_GT(released.images_per_second(), 0);
  // Its diagnosis too, released with the detail: its precision check fails (tf32 ran,
  // fp32 was asked), which the strict grid still knows.
  EXPECT_TRUE(HeldWithoutDiagnosis(id));
  EXPECT_EQ(released.diagnosis().failing_checks(), 1) << released.diagnosis().DebugString();
  EXPECT_TRUE(ResultsProto(/*strict=*/true).empty());
  ASSERT_EQ(released_results.size(), 1u);
  EXPECT_NE(released_results[0].find("H100"), std::string::npos) << released_results[0];

  Reopen(/*ended_jobs_with_rank_detail=*/1000);  // every ended job held whole
  ASSERT_FALSE(Released(id));
  const benchfleet::v1::JobStatus whole = ViewProto(id);
  std::string differences;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differ.Compare(released, whole)) << differences;
  EXPECT_EQ(released_results, ResultsProto());
  EXPECT_TRUE(ResultsProto(/*strict=*/true).empty());

  // Recovered with none kept: released at once, answering alike.
  Reopen(/*ended_jobs_with_rank_detail=*/0);
  EXPECT_TRUE(Released(id));
  differences.clear();
  EXPECT_TRUE(differ.Compare(ViewProto(id), whole)) << differences;
  EXPECT_EQ(released_results, ResultsProto());
}

TEST_F(RankDetailReleaseTest, TheLatestEndedJobsKeepTheirDetail) {
  Reopen(/*ended_jobs_with_rank_detail=*/1);
  RegisterGpuAgent("g");
  const std::string first = RunJob("g", 0.1);
  const std::string second = RunJob("g", 0.2);
  // The first is released once the second ended; the second, the latest, is not.
  ASSERT_TRUE(AwaitReleased(first));
  EXPECT_FALSE(Released(second));
  // The grid still tells the two apart by their own throughputs.
  std::vector<ResultCell> cells = reads_->Results(ResultsFilter{});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].runs(), 2);
  EXPECT_DOUBLE_EQ(cells[0].max_images_per_second, 2 * 8 / 0.4);
  EXPECT_DOUBLE_EQ(cells[0].min_images_per_second, 2 * 8 / 0.8);
  ASSERT_TRUE(cells[0].median_power_w.has_value());
  EXPECT_NEAR(*cells[0].median_power_w, 500.5, 1e-9);
}

// The released detail is read back from the store, so a job is not released before its
// joined telemetry is stored: had it been, a view read in between would lack its GPUs.
// A cancelled job is joined but not diagnosed, so its release waits on the join alone.
TEST_F(RankDetailReleaseTest, AJobIsReleasedOnlyOnceItsJoinedTelemetryIsStored) {
  WriterBlockedAfterTheJoin& blocker = ReopenBlockingTheWriterAfterTheJoin();
  RegisterGpuAgent("g");
  const std::string id = StartJob("g", 0.1);
  ASSERT_TRUE(manager_->Cancel(id).ok());
  ASSERT_TRUE(blocker.AwaitJoined());
  ASSERT_TRUE(blocker.holding());
  // Released() takes the manager's lock, which the join held until it was done with the
  // job: whatever the join decided about the release is decided by now.
  EXPECT_FALSE(Released(id));
  EXPECT_EQ(ViewProto(id).gpu_telemetry_size(), 2);
  blocker.Unblock();
  ASSERT_TRUE(AwaitReleased(id));
  EXPECT_EQ(ViewProto(id).gpu_telemetry_size(), 2);
}

// A diagnosed job's release waits on its diagnosis and on its joined telemetry's write,
// which the store queues after the diagnosis's.
TEST_F(RankDetailReleaseTest, ADiagnosedJobIsReleasedOnlyOnceItsJoinedTelemetryIsStored) {
  WriterBlockedAfterTheJoin& blocker = ReopenBlockingTheWriterAfterTheJoin();
  RegisterGpuAgent("g");
  const std::string id = RunJob("g", 0.1);
  ASSERT_TRUE(blocker.AwaitJoined());
  EXPECT_FALSE(Released(id));
  blocker.Unblock();
  ASSERT_TRUE(AwaitReleased(id));
  const benchfleet::v1::JobStatus released = ViewProto(id);
  EXPECT_EQ(released.gpu_telemetry_size(), 2);
  EXPECT_EQ(released.diagnosis().failing_checks(), 1);
}

}  // namespace
}  // namespace bench

// A JobManager tells its JobEvents what happens to a job, in order: a recording observer
// follows jobs through their lifecycles (submitted, placed, samples screened and stored,
// a refused report, ranks ended, succeeded, telemetry joined; a lost node's requeue).
#include "server/core/job_events.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/fake_clock.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"

namespace bench {
namespace {

using ::testing::ElementsAre;

class RecordingEvents : public JobEvents {
 public:
  void OnSubmitted(const Job& job) override { Add("submitted ", job.id); }
  void OnStateChanged(const Job& job) override {
    Add("state ", job.id, " ", JobStateText(job.state), " attempt ", job.attempt);
  }
  void OnRankEnded(const Job& job, int rank) override { Add("rank ended ", job.id, " ", rank); }
  void OnRankReportRefused(const std::string& job_id, std::string_view reason) override {
    Add("report refused ", job_id, " ", std::string(reason));
  }
  void OnSamplesScreened(const std::string& agent, const ScreenedSamples& screened) override {
    Add("screened ", agent, ": ", screened.iterations.size(), " kept, ", screened.rejected_count(),
        " refused");
  }
  void OnSamplesStored(int64_t samples, int64_t gpu_samples, int64_t duplicates) override {
    Add("stored ", samples, " ", gpu_samples, " ", duplicates);
  }
  void OnSamplesNotStored(int64_t count) override { Add("not stored ", count); }
  void OnTelemetryJoined(const Job& job) override { Add("telemetry joined ", job.id); }

  // The events so far; each is taken once.
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> taken;
    taken.swap(events_);
    return taken;
  }
  // Waits (up to a generous deadline) until `event` was recorded.
  bool WaitFor(const std::string& event) {
    absl::MutexLock lock(&mu_);
    awaited_ = event;
    return mu_.AwaitWithTimeout(absl::Condition(this, &RecordingEvents::Seen), absl::Seconds(60));
  }

 private:
  bool Seen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::find(events_.begin(), events_.end(), awaited_) != events_.end();
  }
  template <typename... Parts>
  void Add(const Parts&... parts) {
    absl::MutexLock lock(&mu_);
    events_.push_back(absl::StrCat(parts...));
  }

  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::string awaited_ ABSL_GUARDED_BY(mu_);
};

class JobEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_job_events_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    JobManagerOptions options;
    options.clock = &clock_;
    manager_ = std::make_unique<JobManager>(store_.get(), options, &events_);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void AddCpuAgent(const std::string& name, int slots) {
    RegisterCpuAgent(*manager_, name, slots, &channel_);
  }
  std::string Submit(int devices) {
    absl::StatusOr<SubmitResult> result = SubmitAndWait(*manager_, SmallJobSpec(devices));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->job_id : "";
  }
  absl::StatusOr<AppendResult> Upload(const std::string& agent,
                                      std::vector<IterationSample> samples) {
    return UploadAndWait(*manager_, agent, std::move(samples));
  }
  static IterationSample Measured(const std::string& job_id, int rank, int iteration) {
    return {job_id, 1, rank, iteration, 0.25, 2, 1.0, 0, 0.25 * iteration, false};
  }
  static RankReport Succeeded(int rank) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = RankSummary{rank, 4, 8, 1.0, 0.25};
    return report;
  }

  std::string dir_;
  FakeClock clock_;
  RecordingEvents events_;  // both outlive the manager
  FakeChannel channel_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
};

TEST_F(JobEventsTest, AJobsLifecycleFromSubmitToTelemetry) {
  AddCpuAgent("a", 2);
  const std::string id = Submit(2);
  EXPECT_THAT(events_.Take(), ElementsAre("submitted " + id, "state " + id + " RUNNING attempt 1"));

  // Rank 5 is no rank of the job: refused; the rest stored, a repeat counted as such.
  ASSERT_TRUE(Upload("a", {Measured(id, 0, 2), Measured(id, 1, 2), Measured(id, 5, 2)}).ok());
  ASSERT_TRUE(Upload("a", {Measured(id, 0, 2)}).ok());
  EXPECT_THAT(events_.Take(), ElementsAre("screened a: 2 kept, 1 refused", "stored 2 0 0",
                                          "screened a: 1 kept, 0 refused", "stored 0 0 1"));

  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 29500, {Succeeded(7)}).ok());
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 0, {Succeeded(0)}).ok());
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 0, {Succeeded(1)}).ok());
  // The telemetry join runs on the store's thread after the job ended.
  ASSERT_TRUE(events_.WaitFor("telemetry joined " + id));
  EXPECT_THAT(events_.Take(),
              ElementsAre("report refused " + id + " rank_not_on_agent", "rank ended " + id + " 0",
                          "rank ended " + id + " 1", "state " + id + " SUCCEEDED attempt 1",
                          "telemetry joined " + id));
}

TEST_F(JobEventsTest, ALostNodeRequeuesThenACancelEndsTheJob) {
  AddCpuAgent("a", 1);
  const std::string id = Submit(1);
  clock_.Advance(absl::Seconds(31));
  manager_->CheckAgents(clock_.SteadyNow());
  ASSERT_TRUE(manager_->Cancel(id).ok());
  // Its first attempt's telemetry is joined once it has ended for good.
  ASSERT_TRUE(events_.WaitFor("telemetry joined " + id));
  EXPECT_THAT(events_.Take(),
              ElementsAre("submitted " + id, "state " + id + " RUNNING attempt 1",
                          "state " + id + " QUEUED attempt 1",
                          "state " + id + " CANCELLED attempt 1", "telemetry joined " + id));
}

}  // namespace
}  // namespace bench

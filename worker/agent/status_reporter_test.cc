#include "worker/agent/status_reporter.h"

#include <stdlib.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

using benchfleet::v1::ReportStatusRequest;

class FakeReportRpc : public StatusReportRpc {
 public:
  absl::Status ReportStatus(const ReportStatusRequest& request) override {
    absl::MutexLock lock(&mu_);
    ++calls_;
    if (fail_next_ > 0) {
      --fail_next_;
      return absl::UnavailableError("controller away");
    }
    if (reject_) return absl::InvalidArgumentError("unknown job");
    delivered_.push_back(request);
    return absl::OkStatus();
  }
  void FailNext(int n) {
    absl::MutexLock lock(&mu_);
    fail_next_ = n;
  }
  void set_reject(bool reject) {
    absl::MutexLock lock(&mu_);
    reject_ = reject;
  }
  std::vector<ReportStatusRequest> delivered() {
    absl::MutexLock lock(&mu_);
    return delivered_;
  }

 private:
  absl::Mutex mu_;
  int calls_ = 0;
  int fail_next_ = 0;
  bool reject_ = false;
  std::vector<ReportStatusRequest> delivered_;
};

ReportStatusRequest Report(const std::string& job) {
  ReportStatusRequest request;
  request.set_job_id(job);
  return request;
}

StatusReporterOptions FastOptions() {
  StatusReporterOptions options;
  options.initial_backoff = absl::Milliseconds(1);
  options.max_backoff = absl::Milliseconds(5);
  options.max_permanent_failures = 2;
  return options;
}

// The reporter as the agent runs it: writing through to its spool (the state
// directory's), and, where the agent has no state directory, in memory only.
enum class Queue { kSpooled, kInMemory };

class StatusReporterTest : public SpoolOrMemoryTest<Queue> {
 protected:
  StatusReporterTest()
      : SpoolOrMemoryTest("status_reporter_test_", Queue::kSpooled, "spool/reports") {}
  // Must be destroyed before the fixture (declare the rpc before it).
  std::unique_ptr<StatusReporter> Make(StatusReportRpc* rpc, StatusReporterOptions options) {
    return std::make_unique<StatusReporter>(rpc, std::move(options), spool_.get());
  }
};

INSTANTIATE_TEST_SUITE_P(Queues, StatusReporterTest,
                         ::testing::Values(Queue::kSpooled, Queue::kInMemory),
                         [](const ::testing::TestParamInfo<Queue>& info) {
                           return info.param == Queue::kSpooled ? "Spooled" : "InMemory";
                         });

TEST_P(StatusReporterTest, DeliversInOrderThroughFailures) {
  FakeReportRpc rpc;
  rpc.FailNext(4);
  auto reporter = Make(&rpc, FastOptions());
  reporter->SetAgent("agent-a");
  reporter->Report(Report("a"));
  reporter->Report(Report("b"));
  uint64_t last = reporter->Report(Report("c"));
  ASSERT_TRUE(reporter->Drain(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE(reporter->IsDelivered(last));
  auto delivered = rpc.delivered();
  ASSERT_EQ(delivered.size(), 3u);
  EXPECT_EQ(delivered[0].job_id(), "a");
  EXPECT_EQ(delivered[1].job_id(), "b");
  EXPECT_EQ(delivered[2].job_id(), "c");
  EXPECT_EQ(delivered[0].agent(), "agent-a");
}

TEST_P(StatusReporterTest, GivesUpOnARejectedReport) {
  FakeReportRpc rpc;
  rpc.set_reject(true);
  auto reporter = Make(&rpc, FastOptions());
  uint64_t ticket = reporter->Report(Report("a"));
  ASSERT_TRUE(reporter->Drain(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE(reporter->IsDelivered(ticket));
  EXPECT_TRUE(rpc.delivered().empty());
}

TEST_P(StatusReporterTest, DrainTimesOutWhileTheControllerIsAway) {
  FakeReportRpc rpc;
  rpc.FailNext(1000000);
  auto reporter = Make(&rpc, FastOptions());
  uint64_t ticket = reporter->Report(Report("a"));
  EXPECT_FALSE(reporter->Drain(absl::Now() + absl::Milliseconds(50)));
  EXPECT_FALSE(reporter->IsDelivered(ticket));
  reporter->Shutdown();
}

TEST(SpooledStatusReporterTest, PausedSendsNothingAndDiscardForgetsTheSpooledReports) {
  TempDir temp("status_reporter_test_");
  ASSERT_TRUE(temp.ok());
  const std::string dir = temp.path() + "/reports";
  {
    FakeReportRpc rpc;
    auto spool = Spool::Open(dir);
    ASSERT_TRUE(spool.ok());
    StatusReporterOptions options = FastOptions();
    options.start_paused = true;
    StatusReporter reporter(&rpc, options, spool->get());
    uint64_t first = reporter.Report(Report("job-1"));
    reporter.Report(Report("job-2"));
    EXPECT_FALSE(reporter.Drain(absl::Now() + absl::Milliseconds(100)));
    EXPECT_TRUE(rpc.delivered().empty());
    EXPECT_EQ(reporter.DiscardPending(), 2u);
    EXPECT_TRUE(reporter.IsDelivered(first));
    reporter.Report(Report("job-3"));
    reporter.Resume();
    ASSERT_TRUE(reporter.Drain(absl::Now() + absl::Seconds(10)));
    auto delivered = rpc.delivered();
    ASSERT_EQ(delivered.size(), 1u);
    EXPECT_EQ(delivered[0].job_id(), "job-3");
  }
  auto spool = Spool::Open(dir);
  ASSERT_TRUE(spool.ok());
  EXPECT_EQ((*spool)->pending_at_open(), 0u);
}

TEST(SpooledStatusReporterTest, SpooledReportsSurviveARestartAndAreNotSentTwice) {
  TempDir temp("status_reporter_test_");
  ASSERT_TRUE(temp.ok());
  const std::string dir = temp.path() + "/reports";
  {
    FakeReportRpc rpc;
    rpc.FailNext(1000000);
    auto spool = Spool::Open(dir);
    ASSERT_TRUE(spool.ok());
    StatusReporter reporter(&rpc, FastOptions(), spool->get());
    reporter.Report(Report("job-1"));
    reporter.Report(Report("job-2"));
    EXPECT_FALSE(reporter.Drain(absl::Now() + absl::Milliseconds(20)));
  }  // the agent stops with the controller away
  {
    FakeReportRpc rpc;
    auto spool = Spool::Open(dir);
    ASSERT_TRUE(spool.ok());
    StatusReporterOptions options = FastOptions();
    options.agent = "agent-r";
    StatusReporter reporter(&rpc, options, spool->get());
    EXPECT_EQ(reporter.replayed(), 2u);
    uint64_t ticket = reporter.Report(Report("job-3"));
    EXPECT_EQ(ticket, 3u);
    ASSERT_TRUE(reporter.Drain(absl::Now() + absl::Seconds(10)));
    auto delivered = rpc.delivered();
    ASSERT_EQ(delivered.size(), 3u);
    EXPECT_EQ(delivered[0].job_id(), "job-1");
    EXPECT_EQ(delivered[1].job_id(), "job-2");
    EXPECT_EQ(delivered[2].job_id(), "job-3");
    EXPECT_EQ(delivered[0].agent(), "agent-r");
  }
  FakeReportRpc rpc;
  auto spool = Spool::Open(dir);
  ASSERT_TRUE(spool.ok());
  StatusReporter reporter(&rpc, FastOptions(), spool->get());
  EXPECT_EQ(reporter.replayed(), 0u) << "delivered reports are acknowledged in the spool";
  reporter.Shutdown();
  EXPECT_TRUE(rpc.delivered().empty());
}

}  // namespace
}  // namespace bench::agent

// Every finished job carries its diagnosis (issue 26): computed once when the attempt ends
// SUCCEEDED or FAILED, stored, kept across a restart, recomputed for `benchctl diagnose`
// with the same result.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"
#include "server/core/read_service.h"
#include "server/results/job_diagnosis.h"

namespace bench {
namespace {

class JobDiagnosisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_diagnosis_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    Reopen();
  }
  void TearDown() override {
    reads_.reset();
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    reads_.reset();
    manager_.reset();
    store_.reset();
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    JobManagerOptions options;
    options.agent_lease = absl::Seconds(30);
    options.clock = &clock_;
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
    ASSERT_TRUE(manager_->Recover().ok());
  }
  // Two ranks' 5 iterations (the first warm-up) of 0.1 s each.
  static std::vector<IterationSample> Samples(const std::string& id, int ranks) {
    std::vector<IterationSample> samples;
    for (int rank = 0; rank < ranks; ++rank) {
      for (int i = 1; i <= 5; ++i) {
        samples.push_back({id, 1, rank, i, 0.1, 2, 1.0, 0.001, 0.1 * i, i == 1,
                           static_cast<int64_t>((1000 + 0.1 * i) * 1e9)});
      }
    }
    return samples;
  }
  static RankReport Succeeded(int rank) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = RankSummary{rank, 4, 8, 0.4, 0.1};
    return report;
  }
  // Waits (generously) until the job has a diagnosis; null if none came.
  std::shared_ptr<const JobDiagnosis> AwaitDiagnosis(const std::string& id) {
    absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      absl::StatusOr<JobView> view = manager_->Get(id);
      if (view.ok() && view->job.diagnosis != nullptr) return view->job.diagnosis;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return nullptr;
  }

  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<ReadService> reads_;
};

TEST_F(JobDiagnosisTest, AJobThatSucceedsIsDiagnosedStoredAndDiagnosedAlikeAgain) {
  FakeChannel a;
  RegisterCpuAgent(*manager_, "a", 2, &a);
  absl::StatusOr<SubmitResult> submitted = SubmitAndWait(*manager_, SmallJobSpec(2));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  EXPECT_EQ(manager_->Get(id)->job.diagnosis, nullptr);
  EXPECT_EQ(reads_->Diagnose(id).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(UploadAndWait(*manager_, "a", Samples(id, 2)).ok());
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 0, {Succeeded(0), Succeeded(1)}).ok());

  std::shared_ptr<const JobDiagnosis> diagnosis = AwaitDiagnosis(id);
  ASSERT_NE(diagnosis, nullptr);
  EXPECT_TRUE(diagnosis->available) << diagnosis->note;
  EXPECT_EQ(diagnosis->attempt, 1);
  EXPECT_TRUE(diagnosis->stragglers.applicable) << diagnosis->stragglers.reason;
  EXPECT_EQ(diagnosis->stragglers.ranks, 2);
  EXPECT_FALSE(diagnosis->checks.empty());

  absl::StatusOr<JobDiagnosis> again = reads_->Diagnose(id);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *diagnosis);

  Reopen();
  std::shared_ptr<const JobDiagnosis> reloaded = manager_->Get(id)->job.diagnosis;
  ASSERT_NE(reloaded, nullptr);
  EXPECT_EQ(*reloaded, *diagnosis);
}

TEST_F(JobDiagnosisTest, ACancelledJobHasNone) {
  FakeChannel a;
  RegisterCpuAgent(*manager_, "a", 1, &a);
  absl::StatusOr<SubmitResult> submitted = SubmitAndWait(*manager_, SmallJobSpec(1));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  ASSERT_TRUE(manager_->Cancel(submitted->job_id).ok());
  absl::Status refused = reads_->Diagnose(submitted->job_id).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("CANCELLED"), std::string::npos) << refused;
  EXPECT_EQ(reads_->Diagnose("job-999999").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace bench

// The "100 clean jobs" acceptance across the three per-job analyses, and their
// reruns: no straggler, no throttle blame, no failing check, identical output twice.
#include "gtest/gtest.h"
#include "server/diagnosis/attribution.h"
#include "server/diagnosis/checks.h"
#include "server/diagnosis/diagnosis_test_support.h"
#include "server/diagnosis/stragglers.h"

namespace bench::diagnosis {
namespace {

TEST(DiagnosisCleanJobs, NoStragglerNoThrottleBlameNoFailingCheck) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    testing::JobPlan plan;
    plan.seed = seed;
    plan.ranks = 1 + static_cast<int>(seed % 16);  // 1 to 16 ranks
    plan.iterations = 200 + static_cast<int>(seed % 5) * 75;
    plan.gpu = seed % 4 != 0;  // a quarter on CPU slots
    const JobInputs job = testing::MakeJob(plan);

    const StragglerReport stragglers = FindStragglers(job);
    EXPECT_TRUE(stragglers.stragglers.empty()) << "seed " << seed;
    EXPECT_EQ(stragglers.lost_s, 0) << "seed " << seed;
    EXPECT_EQ(stragglers.applicable, plan.ranks > 1) << "seed " << seed;

    const ExcessReport excess = AttributeExcess(job);
    ASSERT_TRUE(excess.applicable) << "seed " << seed;
    EXPECT_EQ(excess.ThrottleSeconds(), 0) << "seed " << seed;
    EXPECT_TRUE(excess.capped_without_cost.empty());

    const std::vector<Check> checks = RunChecks(job, excess);
    for (const Check& c : checks) {
      EXPECT_NE(c.outcome, CheckOutcome::kFail)
          << "seed " << seed << " " << c.name << ": " << c.detail;
    }

    // Reruns on the same data: identical.
    EXPECT_EQ(FindStragglers(job), stragglers) << "seed " << seed;
    EXPECT_EQ(AttributeExcess(job), excess) << "seed " << seed;
    EXPECT_EQ(RunChecks(job), checks) << "seed " << seed;
  }
}

}  // namespace
}  // namespace bench::diagnosis

#include "common/allocation_text.h"

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(AllocationTextTest, SlurmJobWithStateReasonAndNodes) {
  EXPECT_EQ(DescribeAllocation({"slurm", "4711", "RUNNING", "", "node[1-2]"}),
            "Slurm job 4711 RUNNING on node[1-2]");
  EXPECT_EQ(DescribeAllocation({"slurm", "4712", "PENDING", "Resources", ""}),
            "Slurm job 4712 PENDING (Resources)");
  EXPECT_EQ(DescribeAllocation({"slurm", "4711", "TIMEOUT", "TimeLimit", "node[1-2]"}),
            "Slurm job 4711 TIMEOUT (TimeLimit) on node[1-2]");
}

TEST(AllocationTextTest, EndedGoesBeforeTheState) {
  EXPECT_EQ(DescribeAllocation({"slurm", "4711", "TIMEOUT", "TimeLimit", "", true}),
            "Slurm job 4711 ended: TIMEOUT (TimeLimit)");
  EXPECT_EQ(DescribeAllocation({"slurm", "4711", "CANCELLED", "", "", true}),
            "Slurm job 4711 ended: CANCELLED");
}

TEST(AllocationTextTest, AnotherSystemIsNamedAsItIs) {
  EXPECT_EQ(DescribeAllocation({"pbs", "17", "Q", "", ""}), "pbs job 17 Q");
}

}  // namespace
}  // namespace bench

#include "server/core/job_table.h"

#include <gtest/gtest.h>

namespace bench {
namespace {

Job NewJob(int64_t seq, const std::string& request_id = "") {
  Job job;
  job.seq = seq;
  job.id = "job-" + std::to_string(seq);
  job.spec.request_id = request_id;
  return job;
}

TEST(JobTableTest, KeepsSubmissionOrderAndIndexesByIdAndRequestId) {
  JobTable table;
  EXPECT_EQ(table.NextSeq(), 1);
  table.Add(NewJob(1));
  table.Add(NewJob(7, "req"));
  EXPECT_EQ(table.NextSeq(), 8);
  ASSERT_NE(table.Find("job-7"), nullptr);
  EXPECT_EQ(table.Find("job-7")->seq, 7);
  EXPECT_EQ(table.Find("job-2"), nullptr);
  ASSERT_NE(table.JobOfRequest("req"), nullptr);
  EXPECT_EQ(*table.JobOfRequest("req"), "job-7");
  std::vector<std::string> order;
  for (const Job& job : table) order.push_back(job.id);
  EXPECT_EQ(order, (std::vector<std::string>{"job-1", "job-7"}));
}

TEST(JobTableTest, RemoveForgetsTheJobAndItsRequestIdAndKeepsTheOthersFindable) {
  JobTable table;
  for (int seq = 1; seq <= 5; ++seq) table.Add(NewJob(seq, seq == 2 ? "req" : ""));
  table.Remove("job-2");
  EXPECT_EQ(table.size(), 4u);
  EXPECT_EQ(table.Find("job-2"), nullptr);
  EXPECT_EQ(table.JobOfRequest("req"), nullptr);
  for (int seq : {1, 3, 4, 5}) {
    Job* job = table.Find("job-" + std::to_string(seq));
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->seq, seq);
  }
  EXPECT_EQ(table.NextSeq(), 6);  // a removed job's seq is not taken again
}

}  // namespace
}  // namespace bench

#include "server/core/job_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bench {
namespace {

Job NewJob(int64_t seq, const std::string& request_id = "", JobState state = JobState::kQueued) {
  Job job;
  job.seq = seq;
  job.id = "job-" + std::to_string(seq);
  job.spec.request_id = request_id;
  job.state = state;
  return job;
}

std::vector<std::string> LiveIds(JobTable& table) {
  std::vector<std::string> ids;
  table.ForEachLive([&](const Job& job) { ids.push_back(job.id); });
  return ids;
}

std::vector<std::string> AllocatedIds(JobTable& table) {
  std::vector<std::string> ids;
  table.ForEachAllocated([&](const Job& job) { ids.push_back(job.id); });
  return ids;
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

TEST(JobTableTest, OnlyLiveJobsAreVisitedAndCountedByStateAsTheyChange) {
  JobTable table;
  table.Add(NewJob(1, "", JobState::kSucceeded));
  table.Add(NewJob(2, "", JobState::kRunning));
  table.Add(NewJob(3, "", JobState::kFailed));
  table.Add(NewJob(4));
  EXPECT_EQ(LiveIds(table), (std::vector<std::string>{"job-2", "job-4"}));
  EXPECT_EQ(table.indexed_visits(), 2);
  EXPECT_EQ(table.full_walks(), 0);
  EXPECT_EQ(table.Count(JobState::kQueued), 1);
  EXPECT_EQ(table.Count(JobState::kRunning), 1);
  EXPECT_EQ(table.Count(JobState::kSucceeded), 1);
  table.SetState(*table.Find("job-2"), JobState::kCancelled);  // ended: not visited again
  table.SetState(*table.Find("job-4"), JobState::kRunning);
  EXPECT_EQ(table.Find("job-2")->state, JobState::kCancelled);
  EXPECT_EQ(LiveIds(table), (std::vector<std::string>{"job-4"}));
  EXPECT_EQ(table.Count(JobState::kQueued), 0);
  EXPECT_EQ(table.Count(JobState::kRunning), 1);
  EXPECT_EQ(table.Count(JobState::kCancelled), 1);
  for (const Job& job : table) (void)job;
  EXPECT_EQ(table.full_walks(), 1);
}

TEST(JobTableTest, AVisitMayEndOrRequeueJobsAsTheWalkGoesOn) {
  JobTable table;
  for (int seq = 1; seq <= 4; ++seq) table.Add(NewJob(seq, "", JobState::kRunning));
  std::vector<std::string> visited;
  table.ForEachLive([&](Job& job) {
    visited.push_back(job.id);
    if (job.seq == 1) table.SetState(*table.Find("job-3"), JobState::kFailed);  // ahead
    if (job.seq == 2) table.SetState(job, JobState::kSucceeded);                // itself
  });
  EXPECT_EQ(visited, (std::vector<std::string>{"job-1", "job-2", "job-4"}));
  EXPECT_EQ(LiveIds(table), (std::vector<std::string>{"job-1", "job-4"}));
}

TEST(JobTableTest, LiveAllocationsAreIndexedUntilTheyEndAndRemoveRebuildsTheIndexes) {
  JobTable table;
  Job held = NewJob(1, "", JobState::kSucceeded);
  held.allocation = {"slurm", "11", "COMPLETED", "", "n1", false};  // not released yet
  table.Add(held);
  Job released = NewJob(2, "", JobState::kSucceeded);
  released.allocation = {"slurm", "12", "COMPLETED", "", "n1", true};
  table.Add(released);
  table.Add(NewJob(3));
  table.Add(NewJob(4, "req"));
  EXPECT_EQ(AllocatedIds(table), (std::vector<std::string>{"job-1"}));
  table.SetAllocation(*table.Find("job-4"), {"slurm", "14", "PENDING", "Priority", "", false});
  EXPECT_EQ(table.Find("job-4")->allocation.id, "14");
  EXPECT_EQ(AllocatedIds(table), (std::vector<std::string>{"job-1", "job-4"}));
  table.SetAllocation(*table.Find("job-1"), {"slurm", "11", "COMPLETED", "", "n1", true});
  EXPECT_EQ(AllocatedIds(table), (std::vector<std::string>{"job-4"}));
  table.Remove("job-3");  // moves the others: every index follows
  EXPECT_EQ(LiveIds(table), (std::vector<std::string>{"job-4"}));
  EXPECT_EQ(AllocatedIds(table), (std::vector<std::string>{"job-4"}));
  EXPECT_EQ(table.Count(JobState::kQueued), 1);
  EXPECT_EQ(table.Count(JobState::kSucceeded), 2);
  table.SetState(*table.Find("job-4"), JobState::kFailed);
  EXPECT_TRUE(LiveIds(table).empty());
}

}  // namespace
}  // namespace bench

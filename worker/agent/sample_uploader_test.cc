#include "worker/agent/sample_uploader.h"

#include <stdlib.h>

#include <atomic>
#include <memory>
#include <cstdio>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

using benchfleet::v1::GpuSample;
using benchfleet::v1::IterationSample;
using benchfleet::v1::UploadSamplesRequest;
using benchfleet::v1::UploadSamplesResponse;

IterationSample Sample(int rank, int iteration) {
  IterationSample sample;
  sample.set_job_id("job-1");
  sample.set_attempt(1);
  sample.set_rank(rank);
  sample.set_iteration(iteration);
  sample.set_images(2);
  return sample;
}

GpuSample Gpu(int rank, int seq) {
  GpuSample sample;
  sample.set_job_id("job-1");
  sample.set_attempt(1);
  sample.set_rank(rank);
  sample.set_seq(seq);
  sample.set_gpu_uuid("GPU-fake-0");
  sample.set_power_w(300);
  return sample;
}

// Stores what a controller would store. Failures can be injected before or after the
// store (the latter is a lost acknowledgement).
class FakeUploadRpc : public SampleUploadRpc {
 public:
  absl::Status UploadSamples(const UploadSamplesRequest& request,
                             UploadSamplesResponse* response) override {
    absl::MutexLock lock(&mu_);
    call_sizes_.push_back(request.samples_size() + request.gpu_samples_size());
    agents_.insert(request.agent());
    ++calls_;
    if (down_) return absl::UnavailableError("controller down");
    if (fail_every_ > 0 && calls_ % fail_every_ == 0) return absl::UnavailableError("flaky");
    if (fail_next_ > 0) {
      --fail_next_;
      return absl::UnavailableError("injected failure");
    }
    if (reject_next_ > 0) {
      --reject_next_;
      return absl::InvalidArgumentError("injected rejection");
    }
    for (const auto& sample : request.samples()) accepted_.push_back(sample);
    for (const auto& sample : request.gpu_samples()) accepted_gpu_.push_back(sample);
    if (lose_ack_next_ > 0) {
      --lose_ack_next_;
      return absl::DeadlineExceededError("acknowledgement lost");
    }
    response->set_batch_id(request.batch_id());
    response->set_stored(request.samples_size());
    response->set_gpu_stored(request.gpu_samples_size());
    return absl::OkStatus();
  }

  void set_down(bool down) {
    absl::MutexLock lock(&mu_);
    down_ = down;
  }
  void FailNext(int n) {
    absl::MutexLock lock(&mu_);
    fail_next_ = n;
  }
  void RejectNext(int n) {
    absl::MutexLock lock(&mu_);
    reject_next_ = n;
  }
  void LoseAckNext(int n) {
    absl::MutexLock lock(&mu_);
    lose_ack_next_ = n;
  }
  void FailEvery(int n) {
    absl::MutexLock lock(&mu_);
    fail_every_ = n;
  }
  std::vector<IterationSample> accepted() {
    absl::MutexLock lock(&mu_);
    return accepted_;
  }
  std::vector<GpuSample> accepted_gpu() {
    absl::MutexLock lock(&mu_);
    return accepted_gpu_;
  }
  std::vector<int> call_sizes() {
    absl::MutexLock lock(&mu_);
    return call_sizes_;
  }
  std::set<std::string> agents() {
    absl::MutexLock lock(&mu_);
    return agents_;
  }

 private:
  absl::Mutex mu_;
  bool down_ = false;
  int fail_next_ = 0, reject_next_ = 0, lose_ack_next_ = 0, fail_every_ = 0;
  int calls_ = 0;
  std::vector<IterationSample> accepted_;
  std::vector<GpuSample> accepted_gpu_;
  std::vector<int> call_sizes_;
  std::set<std::string> agents_;
};

SampleUploaderOptions FastOptions() {
  SampleUploaderOptions options;
  options.linger = absl::Milliseconds(10);
  options.initial_backoff = absl::Milliseconds(1);
  options.max_backoff = absl::Milliseconds(5);
  return options;
}

std::vector<int> Iterations(const std::vector<IterationSample>& samples) {
  std::vector<int> out;
  for (const auto& sample : samples) out.push_back(sample.iteration());
  return out;
}

std::vector<int> Range(int first, int last) {
  std::vector<int> out;
  for (int i = first; i <= last; ++i) out.push_back(i);
  return out;
}

// The uploader as the agent runs it: on its spool (the state directory's), and, where
// the agent has no state directory, in memory. Both queues go through the one Outbox.
enum class Queue { kOnDisk, kInMemory };

class SampleUploaderTest : public SpoolOrMemoryTest<Queue> {
 protected:
  SampleUploaderTest()
      : SpoolOrMemoryTest("sample_uploader_test_", Queue::kOnDisk, "spool/samples") {}
  // Must be destroyed before the fixture (declare the rpc before it).
  std::unique_ptr<SampleUploader> Make(SampleUploadRpc* rpc, SampleUploaderOptions options) {
    return std::make_unique<SampleUploader>(rpc, std::move(options), spool_.get());
  }
};

INSTANTIATE_TEST_SUITE_P(Queues, SampleUploaderTest,
                         ::testing::Values(Queue::kOnDisk, Queue::kInMemory),
                         [](const ::testing::TestParamInfo<Queue>& info) {
                           return info.param == Queue::kOnDisk ? "OnDisk" : "InMemory";
                         });

TEST_P(SampleUploaderTest, BatchesUpToMaxBatchThenLingers) {
  FakeUploadRpc rpc;
  SampleUploaderOptions options = FastOptions();
  options.max_batch = 100;
  options.linger = absl::Milliseconds(300);
  auto uploader = Make(&rpc, options);
  uploader->SetAgent("agent-a");
  uint64_t last = 0;
  for (int i = 1; i <= 250; ++i) last = uploader->Add(Sample(0, i));
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_EQ(rpc.call_sizes(), (std::vector<int>{100, 100, 50}));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 250));
  EXPECT_EQ(rpc.agents(), (std::set<std::string>{"agent-a"}));
  auto stats = uploader->stats();
  EXPECT_EQ(stats.added, 250u);
  EXPECT_EQ(stats.acknowledged, 250u);
  EXPECT_EQ(stats.batches, 3u);
}

TEST_P(SampleUploaderTest, LingerSendsAPartialBatch) {
  FakeUploadRpc rpc;
  auto uploader = Make(&rpc, FastOptions());
  uint64_t last = 0;
  for (int i = 1; i <= 5; ++i) last = uploader->Add(Sample(0, i));
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_EQ(rpc.call_sizes(), (std::vector<int>{5}));
}

TEST_P(SampleUploaderTest, RetriesAFailedUploadWithoutLossOrDuplicates) {
  FakeUploadRpc rpc;
  rpc.FailNext(3);
  auto uploader = Make(&rpc, FastOptions());
  uint64_t last = 0;
  for (int i = 1; i <= 10; ++i) last = uploader->Add(Sample(0, i));
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 10));
  EXPECT_EQ(uploader->stats().failed_uploads, 3u);
  EXPECT_EQ(uploader->stats().acknowledged, 10u);
}

TEST_P(SampleUploaderTest, LostAcknowledgementIsResent) {
  FakeUploadRpc rpc;
  rpc.LoseAckNext(1);
  auto uploader = Make(&rpc, FastOptions());
  uint64_t last = 0;
  for (int i = 1; i <= 4; ++i) last = uploader->Add(Sample(0, i));
  ASSERT_TRUE(uploader->WaitDelivered(last));
  // At least once: the unacknowledged batch went twice (the controller dedupes).
  auto accepted = Iterations(rpc.accepted());
  std::vector<int> expected = Range(1, 4);
  expected.insert(expected.end(), {1, 2, 3, 4});
  EXPECT_EQ(accepted, expected);
}

TEST_P(SampleUploaderTest, WaitDeliveredWaitsForTheAcknowledgement) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  auto uploader = Make(&rpc, FastOptions());
  uint64_t ticket = uploader->Add(Sample(0, 1));
  std::atomic<bool> delivered{false};
  std::thread waiter([&] { delivered = uploader->WaitDelivered(ticket); });
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(delivered);
  EXPECT_TRUE(rpc.accepted().empty());
  rpc.set_down(false);
  waiter.join();
  EXPECT_TRUE(delivered);
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 1));
}

TEST(InMemorySampleUploaderTest, DropsOldestBeyondTheBound) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  SampleUploaderOptions options = FastOptions();
  options.max_queued = 10;
  SampleUploader uploader(&rpc, options);
  uint64_t last = 0;
  for (int i = 1; i <= 25; ++i) last = uploader.Add(Sample(0, i));
  EXPECT_EQ(uploader.stats().dropped, 15u);
  rpc.set_down(false);
  ASSERT_TRUE(uploader.WaitDelivered(last));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(16, 25));
}

TEST_P(SampleUploaderTest, GivesUpOnARejectedBatch) {
  FakeUploadRpc rpc;
  rpc.RejectNext(2);
  SampleUploaderOptions options = FastOptions();
  options.max_permanent_failures = 2;
  auto uploader = Make(&rpc, options);
  uint64_t last = 0;
  for (int i = 1; i <= 5; ++i) last = uploader->Add(Sample(0, i));
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_TRUE(rpc.accepted().empty());
  EXPECT_EQ(uploader->stats().dropped, 5u);
  last = uploader->Add(Sample(0, 6));
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(6, 6));
}

TEST_P(SampleUploaderTest, ShutdownReleasesWaiters) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  auto uploader = Make(&rpc, FastOptions());
  uint64_t ticket = uploader->Add(Sample(0, 1));
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(50));
    uploader->Shutdown();
  });
  EXPECT_FALSE(uploader->WaitDelivered(ticket));
  stopper.join();
  EXPECT_FALSE(uploader->Drain(absl::Now()));
}

TEST_P(SampleUploaderTest, GpuSamplesTravelInTheSameBatches) {
  FakeUploadRpc rpc;
  rpc.FailNext(1);
  SampleUploaderOptions options = FastOptions();
  options.max_batch = 4;
  options.linger = absl::Milliseconds(200);
  auto uploader = Make(&rpc, options);
  uint64_t last = 0;
  for (int i = 1; i <= 3; ++i) {
    uploader->Add(Sample(0, i));
    last = uploader->AddGpuSample(Gpu(0, i));
  }
  // One ticket counter for both kinds: the last GPU sample covers everything.
  EXPECT_EQ(last, 6u);
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_EQ(rpc.call_sizes(), (std::vector<int>{4, 4, 2}));  // a failed try, then 4 + 2
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 3));
  auto gpu = rpc.accepted_gpu();
  ASSERT_EQ(gpu.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(gpu[i].seq(), i + 1);
    EXPECT_EQ(gpu[i].power_w(), 300.0);
    EXPECT_EQ(gpu[i].gpu_uuid(), "GPU-fake-0");
  }
  auto stats = uploader->stats();
  EXPECT_EQ(stats.added, 3u);
  EXPECT_EQ(stats.acknowledged, 3u);
  EXPECT_EQ(stats.gpu_added, 3u);
  EXPECT_EQ(stats.gpu_acknowledged, 3u);
  EXPECT_EQ(stats.batches, 2u);
  EXPECT_EQ(stats.failed_uploads, 1u);
}

TEST_P(SampleUploaderTest, WaitDeliveredOnAGpuTicketWaitsForTheAcknowledgement) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  auto uploader = Make(&rpc, FastOptions());
  uint64_t ticket = uploader->AddGpuSample(Gpu(2, 1));
  std::atomic<bool> delivered{false};
  std::thread waiter([&] { delivered = uploader->WaitDelivered(ticket); });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(delivered);
  rpc.set_down(false);
  waiter.join();
  EXPECT_TRUE(delivered);
  EXPECT_EQ(rpc.accepted_gpu().size(), 1u);
}

TEST(InMemorySampleUploaderTest, TheBoundCountsBothKinds) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  SampleUploaderOptions options = FastOptions();
  options.max_queued = 4;
  SampleUploader uploader(&rpc, options);
  uploader.AddGpuSample(Gpu(0, 1));
  uploader.AddGpuSample(Gpu(0, 2));
  uint64_t last = 0;
  for (int i = 1; i <= 4; ++i) last = uploader.Add(Sample(0, i));
  auto stats = uploader.stats();
  EXPECT_EQ(stats.gpu_dropped, 2u);
  EXPECT_EQ(stats.dropped, 0u);
  rpc.set_down(false);
  ASSERT_TRUE(uploader.WaitDelivered(last));
  EXPECT_TRUE(rpc.accepted_gpu().empty());
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 4));
}

TEST_P(SampleUploaderTest, ConcurrentProducersWithFlakyUploadsLoseNothing) {
  FakeUploadRpc rpc;
  rpc.FailEvery(3);
  SampleUploaderOptions options = FastOptions();
  options.max_batch = 500;
  auto uploader = Make(&rpc, options);
  constexpr int kRanks = 4, kIterations = 5000;
  std::vector<std::thread> producers;
  std::vector<uint64_t> last(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    producers.emplace_back([&, rank] {
      for (int i = 1; i <= kIterations; ++i) last[rank] = uploader->Add(Sample(rank, i));
    });
  }
  for (auto& producer : producers) producer.join();
  for (uint64_t ticket : last) ASSERT_TRUE(uploader->WaitDelivered(ticket));
  ASSERT_TRUE(uploader->Drain(absl::Now() + absl::Seconds(10)));
  auto accepted = rpc.accepted();
  EXPECT_EQ(accepted.size(), static_cast<size_t>(kRanks * kIterations));
  std::set<std::tuple<int, int>> identities;
  for (const auto& sample : accepted) identities.emplace(sample.rank(), sample.iteration());
  EXPECT_EQ(identities.size(), static_cast<size_t>(kRanks * kIterations));
  for (int size : rpc.call_sizes()) EXPECT_LE(size, 500);
  EXPECT_GT(uploader->stats().failed_uploads, 0u);
}

class SpooledUploaderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(temp_.ok()); }
  std::unique_ptr<Spool> OpenSpool(uint64_t max_bytes = uint64_t{1} << 30) {
    SpoolOptions options;
    options.max_bytes = max_bytes;
    return OpenSpoolIn(temp_, "samples", options);
  }
  TempDir temp_{"spooled_uploader_test_"};
};

TEST_F(SpooledUploaderTest, DeliversInOrderAndEmptiesTheSpool) {
  FakeUploadRpc rpc;
  rpc.FailEvery(3);
  auto spool = OpenSpool();
  SampleUploaderOptions options = FastOptions();
  options.max_batch = 100;
  options.agent = "agent-s";
  {
    SampleUploader uploader(&rpc, options, spool.get());
    uint64_t last = 0;
    for (int i = 1; i <= 450; ++i) {
      last = uploader.Add(Sample(0, i));
      if (i % 10 == 0) last = uploader.AddGpuSample(Gpu(0, i / 10));
    }
    ASSERT_TRUE(uploader.WaitDelivered(last));
    ASSERT_TRUE(uploader.Drain(absl::Now() + absl::Seconds(10)));
    auto stats = uploader.stats();
    EXPECT_EQ(stats.acknowledged, 450u);
    EXPECT_EQ(stats.gpu_acknowledged, 45u);
    EXPECT_EQ(stats.dropped + stats.gpu_dropped, 0u);
  }
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 450));
  EXPECT_EQ(rpc.accepted_gpu().size(), 45u);
  for (int size : rpc.call_sizes()) EXPECT_LE(size, 100);
  EXPECT_EQ(rpc.agents(), (std::set<std::string>{"agent-s"}));
  spool.reset();
  EXPECT_EQ(OpenSpool()->pending_at_open(), 0u) << "everything acknowledged";
}

TEST_F(SpooledUploaderTest, UnacknowledgedSamplesAreReplayedByTheNextUploader) {
  {
    FakeUploadRpc down;
    down.set_down(true);
    auto spool = OpenSpool();
    SampleUploader uploader(&down, FastOptions(), spool.get());
    for (int i = 1; i <= 20; ++i) uploader.Add(Sample(1, i));
    uploader.AddGpuSample(Gpu(1, 1));
    EXPECT_FALSE(uploader.Drain(absl::Now() + absl::Milliseconds(50)));
    EXPECT_TRUE(down.accepted().empty());
  }  // the agent stops (or dies) with the controller away
  FakeUploadRpc rpc;
  auto spool = OpenSpool();
  ASSERT_EQ(spool->pending_at_open(), 21u);
  SampleUploaderOptions options = FastOptions();
  options.agent = "agent-r";
  SampleUploader uploader(&rpc, options, spool.get());
  EXPECT_EQ(uploader.stats().replayed, 21u);
  // Replayed samples take the first tickets; new ones follow them.
  uint64_t ticket = uploader.Add(Sample(1, 21));
  EXPECT_EQ(ticket, 22u);
  ASSERT_TRUE(uploader.WaitDelivered(ticket));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 21));
  EXPECT_EQ(rpc.accepted_gpu().size(), 1u);
  EXPECT_EQ(rpc.agents(), (std::set<std::string>{"agent-r"}));
}

TEST_P(SampleUploaderTest, PausedSendsNothingUntilResumed) {
  FakeUploadRpc rpc;
  SampleUploaderOptions options = FastOptions();
  options.start_paused = true;
  auto uploader = Make(&rpc, options);
  uint64_t last = 0;
  for (int i = 1; i <= 5; ++i) last = uploader->Add(Sample(0, i));
  EXPECT_FALSE(uploader->Drain(absl::Now() + absl::Milliseconds(100)));
  EXPECT_TRUE(rpc.call_sizes().empty());
  uploader->Resume();
  ASSERT_TRUE(uploader->WaitDelivered(last));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, 5));
}

TEST_P(SampleUploaderTest, DiscardPendingForgetsTheQueueWithoutSendingIt) {
  FakeUploadRpc rpc;
  SampleUploaderOptions options = FastOptions();
  options.start_paused = true;
  auto uploader = Make(&rpc, options);
  for (int i = 1; i <= 3; ++i) uploader->Add(Sample(0, i));
  uint64_t gpu = uploader->AddGpuSample(Gpu(0, 1));
  EXPECT_EQ(uploader->DiscardPending(), 4u);
  EXPECT_TRUE(uploader->WaitDelivered(gpu)) << "discarded samples are given up on";
  uint64_t next = uploader->Add(Sample(0, 4));
  uploader->Resume();
  ASSERT_TRUE(uploader->WaitDelivered(next));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(4, 4));
  EXPECT_TRUE(rpc.accepted_gpu().empty());
  EXPECT_EQ(uploader->stats().discarded, 4u);
}

TEST_F(SpooledUploaderTest, APausedUploaderDoesNotReplayAndDiscardEmptiesTheSpool) {
  {
    FakeUploadRpc down;
    down.set_down(true);
    auto spool = OpenSpool();
    SampleUploader uploader(&down, FastOptions(), spool.get());
    for (int i = 1; i <= 10; ++i) uploader.Add(Sample(1, i));
    uploader.AddGpuSample(Gpu(1, 1));
    EXPECT_FALSE(uploader.Drain(absl::Now() + absl::Milliseconds(50)));
  }
  FakeUploadRpc rpc;
  auto spool = OpenSpool();
  ASSERT_EQ(spool->pending_at_open(), 11u);
  SampleUploaderOptions options = FastOptions();
  options.start_paused = true;
  {
    SampleUploader uploader(&rpc, options, spool.get());
    EXPECT_FALSE(uploader.Drain(absl::Now() + absl::Milliseconds(100)));
    EXPECT_TRUE(rpc.call_sizes().empty()) << "nothing replayed while paused";
    uploader.Add(Sample(1, 11));  // written while paused: discarded with the rest
    EXPECT_EQ(uploader.DiscardPending(), 12u);
    uint64_t next = uploader.Add(Sample(2, 1));
    uploader.Resume();
    ASSERT_TRUE(uploader.WaitDelivered(next));
    ASSERT_EQ(rpc.accepted().size(), 1u);
    EXPECT_EQ(rpc.accepted()[0].rank(), 2);
    EXPECT_TRUE(rpc.accepted_gpu().empty());
  }
  spool.reset();
  EXPECT_EQ(OpenSpool()->pending_at_open(), 0u);
}

TEST_F(SpooledUploaderTest, ABatchInRetryIsNotSentAfterADiscard) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  auto spool = OpenSpool();
  SampleUploader uploader(&rpc, FastOptions(), spool.get());
  for (int i = 1; i <= 5; ++i) uploader.Add(Sample(0, i));
  EXPECT_FALSE(uploader.Drain(absl::Now() + absl::Milliseconds(50)));  // retrying
  uploader.Pause();
  absl::SleepFor(absl::Milliseconds(50));  // an attempt in flight (failing) returns
  EXPECT_EQ(uploader.DiscardPending(), 5u);
  rpc.set_down(false);
  uint64_t next = uploader.Add(Sample(0, 6));
  uploader.Resume();
  ASSERT_TRUE(uploader.WaitDelivered(next));
  EXPECT_EQ(Iterations(rpc.accepted()), Range(6, 6));
}

TEST_F(SpooledUploaderTest, ConcurrentProducersWithFlakyUploadsLoseNothing) {
  FakeUploadRpc rpc;
  rpc.FailEvery(3);
  auto spool = OpenSpool();
  SampleUploaderOptions options = FastOptions();
  options.max_batch = 2000;
  SampleUploader uploader(&rpc, options, spool.get());
  constexpr int kRanks = 4, kIterations = 25000;
  std::vector<std::thread> producers;
  std::vector<uint64_t> last(kRanks);
  absl::Time start = absl::Now();
  for (int rank = 0; rank < kRanks; ++rank) {
    producers.emplace_back([&, rank] {
      for (int i = 1; i <= kIterations; ++i) last[rank] = uploader.Add(Sample(rank, i));
    });
  }
  for (auto& producer : producers) producer.join();
  absl::Duration adding = absl::Now() - start;
  for (uint64_t ticket : last) ASSERT_TRUE(uploader.WaitDelivered(ticket));
  ASSERT_TRUE(uploader.Drain(absl::Now() + absl::Seconds(30)));
  std::printf("spooled %d samples in %s, delivered after %s\n", kRanks * kIterations,
              absl::FormatDuration(adding).c_str(),
              absl::FormatDuration(absl::Now() - start).c_str());
  std::set<std::tuple<int, int>> identities;
  for (const auto& sample : rpc.accepted()) identities.emplace(sample.rank(), sample.iteration());
  EXPECT_EQ(identities.size(), static_cast<size_t>(kRanks * kIterations));
  EXPECT_EQ(uploader.stats().acknowledged, static_cast<uint64_t>(kRanks * kIterations));
  EXPECT_GT(uploader.stats().failed_uploads, 0u);
}

TEST_F(SpooledUploaderTest, AFullSpoolDropsNewSamplesAndCountsThem) {
  FakeUploadRpc rpc;
  rpc.set_down(true);
  const uint64_t max_bytes = 16 * 1024;
  auto spool = OpenSpool(max_bytes);
  SampleUploader uploader(&rpc, FastOptions(), spool.get());
  ::testing::internal::CaptureStderr();
  uint64_t last = 0;
  for (int i = 1; i <= 2000; ++i) last = uploader.Add(Sample(0, i));
  std::string log = ::testing::internal::GetCapturedStderr();
  auto stats = uploader.stats();
  EXPECT_GT(stats.dropped, 0u);
  EXPECT_LT(stats.dropped, 2000u);
  EXPECT_LE(spool->bytes(), max_bytes);
  EXPECT_NE(log.find("dropping samples"), std::string::npos) << log;
  EXPECT_NE(log.find("is full"), std::string::npos) << log;
  const int kept = 2000 - static_cast<int>(stats.dropped);
  rpc.set_down(false);
  ASSERT_TRUE(uploader.WaitDelivered(last));
  // The oldest were kept (the queue is on disk): the newest were dropped.
  EXPECT_EQ(Iterations(rpc.accepted()), Range(1, kept));
  // With room again, samples are accepted again.
  uint64_t ticket = uploader.Add(Sample(0, 5000));
  ASSERT_TRUE(uploader.WaitDelivered(ticket));
  EXPECT_EQ(rpc.accepted().back().iteration(), 5000);
}

}  // namespace
}  // namespace bench::agent

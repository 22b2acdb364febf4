// Direct tests of the Outbox send loop (outbox.h) against a scripted fake OutboxRpc, on
// each store the agent uses: the bounded in-memory store, the memory store mirrored to a
// spool (status reports), and the spool as the queue (samples), the spools in a temporary
// state directory as production lays them out. No test sleeps to let something happen:
// positive waits are condition waits with a generous timeout; the few "nothing happens"
// checks wait a short window in which, with the contract kept, nothing can happen.
#include "worker/agent/outbox.h"

#include <stdlib.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "worker/agent/outbox_store.h"
#include "worker/agent/spool.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

// Long enough never to fire on a loaded machine when the contract is kept.
constexpr absl::Duration kWait = absl::Seconds(20);
// The window in which something that must not happen would have happened.
constexpr absl::Duration kQuiet = absl::Milliseconds(150);

OutboxRecord Record(const std::string& payload, SpoolKind kind = SpoolKind::kIterationSample) {
  return OutboxRecord{kind, payload};
}

// "r1", "r2", ... (the payload of the record with that ticket in most tests).
std::vector<std::string> Names(int first, int last) {
  std::vector<std::string> out;
  for (int i = first; i <= last; ++i) out.push_back("r" + std::to_string(i));
  return out;
}

uint64_t Sum(const std::array<uint64_t, 4>& counts) {
  return counts[0] + counts[1] + counts[2] + counts[3];
}

// A controller with a script: the Nth SendBatch returns the Nth scripted status (OK once
// the script is used up). Records every batch it is asked to send (the payloads, and the
// agent field). A send or a StartBatch can be held (it blocks until released) so that a
// test can act while the outbox is in the middle of it. Payloads starting with "bad"
// cannot be carried.
class FakeRpc : public OutboxRpc {
 public:
  struct Send {
    std::string agent;
    std::vector<std::string> payloads;
  };

  void StartBatch() override {
    absl::MutexLock lock(&mu_);
    building_.clear();
    const int call = ++starts_;
    if (hold_starts_.count(call) > 0) {
      mu_.Await(absl::Condition(
          +[](FakeRpc* self) { return self->open_ || self->starts_released_ >= self->starts_; },
          this));
    }
  }
  bool AddToBatch(const OutboxRecord& record) override {
    absl::MutexLock lock(&mu_);
    if (record.payload.rfind("bad", 0) == 0) return false;
    building_.push_back(record.payload);
    return true;
  }
  absl::Status SendBatch(const std::string& agent) override {
    absl::MutexLock lock(&mu_);
    sends_.push_back(Send{agent, building_});
    const int call = static_cast<int>(sends_.size());
    absl::Status status = absl::OkStatus();
    if (!script_.empty()) {
      status = script_.front();
      script_.pop_front();
    }
    if (hold_sends_.count(call) > 0) {
      mu_.Await(absl::Condition(
          +[](FakeRpc* self) {
            return self->open_ || self->sends_released_ >= static_cast<int>(self->sends_.size());
          },
          this));
    }
    return status;
  }
  std::string DescribeBatch() const override { return "a fake batch"; }

  // The next sends return these, in order.
  void Script(std::vector<absl::Status> statuses) {
    absl::MutexLock lock(&mu_);
    script_.insert(script_.end(), statuses.begin(), statuses.end());
  }
  // The `call`th SendBatch (1-based) blocks until ReleaseSend().
  void HoldSend(int call) {
    absl::MutexLock lock(&mu_);
    hold_sends_.insert(call);
  }
  void ReleaseSend() {
    absl::MutexLock lock(&mu_);
    sends_released_ = static_cast<int>(sends_.size());
  }
  // The `call`th StartBatch blocks until ReleaseStart().
  void HoldStart(int call) {
    absl::MutexLock lock(&mu_);
    hold_starts_.insert(call);
  }
  void ReleaseStart() {
    absl::MutexLock lock(&mu_);
    starts_released_ = starts_;
  }
  // Releases everything held and holds nothing more (so that a failed test still ends).
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  // Until at least `n` sends have started (a held one is blocked inside); false on timeout.
  bool WaitForSends(int n, absl::Duration timeout = kWait) {
    absl::MutexLock lock(&mu_);
    WaitArg arg{this, n};
    return mu_.AwaitWithTimeout(
        absl::Condition(
            +[](WaitArg* a) { return static_cast<int>(a->self->sends_.size()) >= a->n; }, &arg),
        timeout);
  }
  // Until at least `n` StartBatch calls have begun.
  bool WaitForStarts(int n, absl::Duration timeout = kWait) {
    absl::MutexLock lock(&mu_);
    WaitArg arg{this, n};
    return mu_.AwaitWithTimeout(absl::Condition(
                                    +[](WaitArg* a) { return a->self->starts_ >= a->n; }, &arg),
                                timeout);
  }
  std::vector<Send> sends() const {
    absl::MutexLock lock(&mu_);
    return sends_;
  }
  std::vector<std::string> payloads(size_t send) const {
    absl::MutexLock lock(&mu_);
    return send < sends_.size() ? sends_[send].payloads : std::vector<std::string>{};
  }
  // Every payload sent, in order, once per send.
  std::vector<std::string> all_payloads() const {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const Send& send : sends_)
      out.insert(out.end(), send.payloads.begin(), send.payloads.end());
    return out;
  }

 private:
  struct WaitArg {
    FakeRpc* self;
    int n;
  };

  mutable absl::Mutex mu_;
  std::vector<std::string> building_ ABSL_GUARDED_BY(mu_);
  std::vector<Send> sends_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> script_ ABSL_GUARDED_BY(mu_);
  std::set<int> hold_sends_ ABSL_GUARDED_BY(mu_);
  std::set<int> hold_starts_ ABSL_GUARDED_BY(mu_);
  int sends_released_ ABSL_GUARDED_BY(mu_) = 0;
  int starts_ ABSL_GUARDED_BY(mu_) = 0;
  int starts_released_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

// How the agent queues: memory (optionally bounded), memory written through to a spool
// (the status reporter), the spool itself (the sample uploader).
enum class Store { kMemory, kMirrored, kSpool };

class OutboxTest : public ::testing::TestWithParam<Store> {
 protected:
  void SetUp() override { ASSERT_TRUE(temp_.ok()); }
  void TearDown() override {
    rpc_.Open();
    outbox_.reset();
    store_.reset();
    spool_.reset();
  }

  // Opens the store (and its spool, in the state directory's place for it).
  void OpenStore(Store kind, size_t max_records = 0, SpoolOptions spool_options = {}) {
    store_.reset();
    spool_.reset();
    if (kind != Store::kMemory) {
      spool_ = OpenSpoolIn(temp_, "spool/samples", spool_options);
      ASSERT_NE(spool_, nullptr);
    }
    if (kind == Store::kSpool) {
      store_ = std::make_unique<SpoolOutboxStore>(spool_.get());
    } else {
      store_ = std::make_unique<MemoryOutboxStore>(max_records, spool_.get());
    }
  }
  static OutboxOptions Fast() {
    OutboxOptions options;
    options.noun = "test records";
    options.max_batch = 3;
    options.linger = absl::ZeroDuration();
    options.initial_backoff = absl::Milliseconds(1);
    options.max_backoff = absl::Milliseconds(5);
    options.max_permanent_failures = 3;
    options.agent = "agent-1";
    return options;
  }
  // Opens the parameter's store (unless one is open) and starts an outbox on it.
  void Start(OutboxOptions options = Fast()) {
    if (store_ == nullptr) OpenStore(GetParam());
    outbox_ = std::make_unique<Outbox>(store_.get(), &rpc_, std::move(options));
  }
  static OutboxOptions Paused(OutboxOptions options = Fast()) {
    options.start_paused = true;
    return options;
  }
  // Adds r<first> .. r<last>, checking that each gets its ticket (the number in its name).
  void AddRange(int first, int last) {
    for (int i = first; i <= last; ++i) {
      ASSERT_EQ(outbox_->Add(Record("r" + std::to_string(i))), static_cast<uint64_t>(i));
    }
  }
  // The payloads the store still holds (its front, up to 1000).
  std::vector<std::string> Queued() {
    std::vector<std::string> out;
    for (const OutboxRecord& record : store_->ReadFront(1000).records)
      out.push_back(record.payload);
    return out;
  }

  TempDir temp_{"outbox_test_"};
  std::unique_ptr<Spool> spool_;
  std::unique_ptr<OutboxStore> store_;
  FakeRpc rpc_;
  std::unique_ptr<Outbox> outbox_;  // destroyed first: it uses the others
};

INSTANTIATE_TEST_SUITE_P(Stores, OutboxTest,
                         ::testing::Values(Store::kMemory, Store::kMirrored, Store::kSpool),
                         [](const ::testing::TestParamInfo<Store>& info) {
                           switch (info.param) {
                             case Store::kMemory: return "Memory";
                             case Store::kMirrored: return "Mirrored";
                             case Store::kSpool: return "Spool";
                           }
                           return "Unknown";
                         });

TEST_P(OutboxTest, SendsBatchesOfAtMostMaxBatchInOrder) {
  Start(Paused());
  AddRange(1, 7);
  outbox_->Add(Record("g8", SpoolKind::kGpuSample));
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(8));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 3u);
  EXPECT_EQ(sends[0].payloads, Names(1, 3));
  EXPECT_EQ(sends[1].payloads, Names(4, 6));
  EXPECT_EQ(sends[2].payloads, (std::vector<std::string>{"r7", "g8"}));
  for (const FakeRpc::Send& send : sends) EXPECT_EQ(send.agent, "agent-1");
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.batches, 3u);
  EXPECT_EQ(stats.added[1], 7u);
  EXPECT_EQ(stats.added[2], 1u);
  EXPECT_EQ(stats.acknowledged[1], 7u);
  EXPECT_EQ(stats.acknowledged[2], 1u);
  EXPECT_EQ(Sum(stats.dropped), 0u);
  EXPECT_EQ(stats.failed_sends, 0u);
  EXPECT_TRUE(Queued().empty());
}

TEST_P(OutboxTest, AFullBatchDoesNotWaitForTheLinger) {
  OutboxOptions options = Fast();
  options.linger = absl::Hours(1);
  Start(options);
  AddRange(1, 3);  // max_batch
  ASSERT_TRUE(rpc_.WaitForSends(1)) << "a full batch waited for the linger";
  EXPECT_EQ(rpc_.payloads(0), Names(1, 3));
  EXPECT_TRUE(outbox_->WaitDelivered(3));
}

TEST_P(OutboxTest, SetAgentNamesTheAgentInLaterSends) {
  Start(Paused());
  AddRange(1, 1);
  outbox_->SetAgent("agent-2");
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(1));
  ASSERT_EQ(rpc_.sends().size(), 1u);
  EXPECT_EQ(rpc_.sends()[0].agent, "agent-2");
}

TEST_P(OutboxTest, AFailedSendIsRetriedWithTheSameBatchAndReleasedOnlyAfterOk) {
  rpc_.Script({absl::UnavailableError("away"), absl::DeadlineExceededError("slow")});
  rpc_.HoldSend(2);  // the second attempt: a record arrives meanwhile
  rpc_.HoldSend(3);  // the third, acknowledged, attempt
  Start(Paused());
  AddRange(1, 2);
  outbox_->Resume();
  ASSERT_TRUE(rpc_.WaitForSends(2));
  AddRange(3, 3);  // not part of the batch being retried
  rpc_.ReleaseSend();
  ASSERT_TRUE(rpc_.WaitForSends(3));
  // The acknowledged attempt is in flight: nothing has left the store yet.
  EXPECT_FALSE(outbox_->IsDelivered(1));
  EXPECT_EQ(Queued(), Names(1, 3));
  rpc_.ReleaseSend();
  ASSERT_TRUE(outbox_->WaitDelivered(2));
  ASSERT_TRUE(outbox_->WaitDelivered(3));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 4u);
  EXPECT_EQ(sends[0].payloads, Names(1, 2));
  EXPECT_EQ(sends[1].payloads, Names(1, 2)) << "a retry is the same batch";
  EXPECT_EQ(sends[2].payloads, Names(1, 2)) << "a retry is the same batch";
  EXPECT_EQ(sends[3].payloads, Names(3, 3));
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.failed_sends, 2u);
  EXPECT_EQ(stats.batches, 2u);
  EXPECT_EQ(stats.acknowledged[1], 3u);
  EXPECT_EQ(Sum(stats.dropped), 0u);
  EXPECT_TRUE(Queued().empty());
}

TEST_P(OutboxTest, TransientErrorsNeverDropABatch) {
  // Twice max_permanent_failures transient errors in a row, then OK.
  rpc_.Script(std::vector<absl::Status>(6, absl::UnavailableError("away")));
  Start(Paused());
  AddRange(1, 2);
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(2));
  ASSERT_EQ(rpc_.sends().size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(rpc_.payloads(i), Names(1, 2)) << "send " << i;
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.failed_sends, 6u);
  EXPECT_EQ(stats.acknowledged[1], 2u);
  EXPECT_EQ(Sum(stats.dropped), 0u);
}

TEST_P(OutboxTest, APermanentlyRejectedBatchIsDroppedAndTheNextRecordsStillGo) {
  rpc_.Script({absl::InvalidArgumentError("poison"), absl::InvalidArgumentError("poison"),
               absl::InvalidArgumentError("poison")});  // max_permanent_failures
  Start(Paused());
  AddRange(1, 5);
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(5));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sends[i].payloads, Names(1, 3)) << "send " << i;
  EXPECT_EQ(sends[3].payloads, Names(4, 5));
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.dropped[1], 3u);
  EXPECT_EQ(stats.acknowledged[1], 2u);
  EXPECT_EQ(stats.failed_sends, 3u);
  EXPECT_EQ(stats.batches, 1u);
  EXPECT_TRUE(Queued().empty());
}

TEST_P(OutboxTest, OneRejectionFewerThanTheLimitIsRetriedNotDropped) {
  rpc_.Script({absl::InvalidArgumentError("poison"), absl::InvalidArgumentError("poison")});
  Start(Paused());
  AddRange(1, 2);
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(2));
  ASSERT_EQ(rpc_.sends().size(), 3u);
  EXPECT_EQ(rpc_.payloads(2), Names(1, 2));
  EXPECT_EQ(outbox_->stats().acknowledged[1], 2u);
  EXPECT_EQ(Sum(outbox_->stats().dropped), 0u);
}

TEST_P(OutboxTest, RecordsTheRpcCannotCarryAreDroppedAndCounted) {
  Start(Paused());
  outbox_->Add(Record("r1"));
  outbox_->Add(Record("bad2"));
  outbox_->Add(Record("r3"));
  outbox_->Add(Record("bad4", SpoolKind::kGpuSample));
  outbox_->Add(Record("bad5"));
  outbox_->Add(Record("bad6"));  // a batch of nothing carriable: released, never sent
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(6));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends[0].payloads, (std::vector<std::string>{"r1", "r3"}));
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.dropped[1], 3u);
  EXPECT_EQ(stats.dropped[2], 1u);
  EXPECT_EQ(stats.acknowledged[1], 2u);
  EXPECT_TRUE(Queued().empty());
}

TEST_P(OutboxTest, TicketsIncreaseAndDeliveryIsReportedAsDocumented) {
  Start(Paused());
  AddRange(1, 4);  // tickets 1, 2, 3, 4
  EXPECT_FALSE(outbox_->IsDelivered(1));
  // Paused: nothing can be delivered, so Drain returns false at its deadline.
  EXPECT_FALSE(outbox_->Drain(absl::Now() + absl::Milliseconds(20)));
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(4));
  for (uint64_t ticket = 1; ticket <= 4; ++ticket) EXPECT_TRUE(outbox_->IsDelivered(ticket));
  EXPECT_FALSE(outbox_->IsDelivered(5)) << "not given yet";
  EXPECT_TRUE(outbox_->Drain(absl::Now() + kWait));
  EXPECT_TRUE(outbox_->WaitDelivered(0));
  EXPECT_EQ(outbox_->Add(Record("r5")), 5u);
  EXPECT_TRUE(outbox_->Drain(absl::Now() + kWait));
  EXPECT_TRUE(outbox_->IsDelivered(5));
}

TEST_P(OutboxTest, WaitDeliveredAndDrainReturnFalseOnceShutDown) {
  Start(Paused());
  AddRange(1, 2);
  bool delivered = true;
  std::thread waiter([&] { delivered = outbox_->WaitDelivered(2); });
  outbox_->Shutdown();
  waiter.join();
  EXPECT_FALSE(delivered);
  EXPECT_FALSE(outbox_->IsDelivered(1));
  EXPECT_FALSE(outbox_->Drain(absl::Now() + kWait));  // returns at once
  EXPECT_TRUE(rpc_.sends().empty());
  outbox_->Shutdown();  // idempotent
}

TEST_P(OutboxTest, PauseHoldsEverythingEvenARetryAndResumeReleases) {
  rpc_.Script({absl::UnavailableError("away")});
  rpc_.HoldSend(1);
  Start();
  AddRange(1, 1);
  ASSERT_TRUE(rpc_.WaitForSends(1));
  outbox_->Pause();
  rpc_.ReleaseSend();  // the send fails while paused: its retry must wait
  AddRange(2, 2);
  EXPECT_FALSE(rpc_.WaitForSends(2, kQuiet)) << "sent while paused";
  EXPECT_FALSE(outbox_->IsDelivered(1));
  EXPECT_EQ(Queued(), Names(1, 2));
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(2));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 3u);
  EXPECT_EQ(sends[1].payloads, Names(1, 1)) << "the retry is the same batch";
  EXPECT_EQ(sends[2].payloads, Names(2, 2));
}

TEST_P(OutboxTest, PauseWhileABatchIsBeingBuiltHoldsItsSend) {
  rpc_.HoldStart(1);
  Start();
  AddRange(1, 1);
  ASSERT_TRUE(rpc_.WaitForStarts(1));  // the outbox thread is reading the batch
  outbox_->Pause();
  rpc_.ReleaseStart();
  EXPECT_FALSE(rpc_.WaitForSends(1, kQuiet)) << "sent after Pause() returned";
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(1));
  EXPECT_EQ(rpc_.all_payloads(), Names(1, 1));
}

TEST_P(OutboxTest, StartPausedSendsNothingUntilResumed) {
  Start(Paused());
  AddRange(1, 3);
  EXPECT_FALSE(rpc_.WaitForSends(1, kQuiet));
  outbox_->Resume();
  EXPECT_TRUE(outbox_->WaitDelivered(3));
  EXPECT_EQ(rpc_.all_payloads(), Names(1, 3));
}

TEST_P(OutboxTest, DiscardPendingForgetsQueuedRecordsAndCountsThem) {
  Start(Paused());
  AddRange(1, 5);
  EXPECT_EQ(outbox_->DiscardPending(), 5u);
  EXPECT_TRUE(outbox_->IsDelivered(5)) << "discarded records count as delivered";
  EXPECT_TRUE(outbox_->WaitDelivered(5));
  EXPECT_TRUE(outbox_->Drain(absl::Now() + kWait));
  EXPECT_TRUE(Queued().empty());
  EXPECT_EQ(outbox_->DiscardPending(), 0u);
  AddRange(6, 6);  // tickets go on
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(6));
  EXPECT_EQ(rpc_.all_payloads(), Names(6, 6));
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.discarded, 5u);
  EXPECT_EQ(stats.acknowledged[1], 1u);
  EXPECT_EQ(Sum(stats.dropped), 0u);
}

TEST_P(OutboxTest, DiscardPendingDuringASendForgetsThatBatchToo) {
  rpc_.HoldSend(1);
  Start(Paused());
  AddRange(1, 3);
  outbox_->Resume();
  ASSERT_TRUE(rpc_.WaitForSends(1));
  AddRange(4, 4);
  EXPECT_EQ(outbox_->DiscardPending(), 4u) << "the batch in flight and record 4";
  EXPECT_TRUE(outbox_->IsDelivered(4));
  rpc_.ReleaseSend();  // acknowledged, but discarded already: not released by it
  AddRange(5, 5);
  ASSERT_TRUE(outbox_->WaitDelivered(5));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].payloads, Names(1, 3));
  EXPECT_EQ(sends[1].payloads, Names(5, 5)) << "record 4 was discarded";
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.discarded, 4u);
  EXPECT_EQ(stats.acknowledged[1], 1u);
  EXPECT_TRUE(Queued().empty());
}

TEST_P(OutboxTest, ShutdownAbandonsWhatIsNotAcknowledged) {
  // Every send fails, so that nothing is acknowledged whenever Shutdown comes.
  rpc_.Script(std::vector<absl::Status>(10000, absl::UnavailableError("away")));
  rpc_.HoldSend(1);
  Start();
  AddRange(1, 2);
  ASSERT_TRUE(rpc_.WaitForSends(1));
  std::thread stopper([&] { outbox_->Shutdown(); });  // waits for the send in flight
  rpc_.ReleaseSend();
  stopper.join();
  EXPECT_FALSE(outbox_->IsDelivered(1));
  EXPECT_EQ(Queued(), Names(1, 2)) << "the unacknowledged records stay in the store";
}

// Stores that outlive the agent: what one outbox left is replayed by the next.
class OutboxDurableTest : public OutboxTest {};

INSTANTIATE_TEST_SUITE_P(Stores, OutboxDurableTest,
                         ::testing::Values(Store::kMirrored, Store::kSpool),
                         [](const ::testing::TestParamInfo<Store>& info) {
                           return info.param == Store::kMirrored ? "Mirrored" : "Spool";
                         });

TEST_P(OutboxDurableTest, ARestartedAgentReplaysTheOldSpoolFirst) {
  // The first agent queues five records and stops with none acknowledged (every send fails).
  rpc_.Script(std::vector<absl::Status>(10000, absl::UnavailableError("away")));
  rpc_.HoldSend(1);
  Start();
  AddRange(1, 3);
  ASSERT_TRUE(rpc_.WaitForSends(1));
  AddRange(4, 5);
  std::thread stopper([&] { outbox_->Shutdown(); });
  rpc_.ReleaseSend();
  stopper.join();
  outbox_.reset();

  // The next agent opens the same spool: the old records take tickets 1..5 and go first.
  OpenStore(GetParam());
  ASSERT_EQ(spool_->pending_at_open(), 5u);
  FakeRpc next_rpc;
  OutboxOptions options = Paused();
  options.agent = "agent-restarted";
  outbox_ = std::make_unique<Outbox>(store_.get(), &next_rpc, options);
  EXPECT_EQ(outbox_->stats().replayed, 5u);
  EXPECT_FALSE(outbox_->IsDelivered(1));
  EXPECT_EQ(outbox_->Add(Record("r6")), 6u);
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(6));
  const std::vector<FakeRpc::Send> sends = next_rpc.sends();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].payloads, Names(1, 3));
  EXPECT_EQ(sends[1].payloads, Names(4, 6));
  EXPECT_EQ(sends[0].agent, "agent-restarted");
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.acknowledged[1], 6u);
  EXPECT_EQ(stats.added[1], 1u) << "replayed records are not added";
  outbox_.reset();

  // Everything was acknowledged in the spool: a third agent has nothing to replay.
  OpenStore(GetParam());
  EXPECT_EQ(spool_->pending_at_open(), 0u);
  EXPECT_EQ(store_->replayed(), 0u);
}

TEST_P(OutboxDurableTest, DiscardedRecordsAreNotReplayed) {
  Start(Paused());
  AddRange(1, 4);
  EXPECT_EQ(outbox_->DiscardPending(), 4u);
  outbox_.reset();
  OpenStore(GetParam());
  EXPECT_EQ(spool_->pending_at_open(), 0u);
  EXPECT_EQ(store_->replayed(), 0u);
}

class OutboxSpoolTest : public OutboxTest {};

INSTANTIATE_TEST_SUITE_P(Stores, OutboxSpoolTest, ::testing::Values(Store::kSpool),
                         [](const ::testing::TestParamInfo<Store>&) { return "Spool"; });

TEST_P(OutboxSpoolTest, AFullSpoolRefusesARecordAndItsTicketIsThePreviousOne) {
  SpoolOptions small;
  small.max_bytes = 64 << 10;
  OpenStore(Store::kSpool, 0, small);
  Start(Paused());
  const std::string big(900, 'x');
  uint64_t last = 0;
  int accepted = 0;
  for (; accepted < 1000; ++accepted) {
    const uint64_t ticket = outbox_->Add(Record("r" + big));
    if (ticket == last) break;  // refused
    ASSERT_EQ(ticket, last + 1);
    last = ticket;
  }
  ASSERT_GT(accepted, 0);
  ASSERT_LT(accepted, 1000) << "the spool never filled";
  EXPECT_EQ(outbox_->stats().dropped[1], 1u);
  EXPECT_TRUE(outbox_->IsDelivered(0));
  EXPECT_FALSE(outbox_->IsDelivered(last));
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(last));
  EXPECT_EQ(rpc_.all_payloads().size(), static_cast<size_t>(accepted));
  EXPECT_EQ(outbox_->stats().acknowledged[1], static_cast<uint64_t>(accepted));
  // Acknowledged segments are freed: the spool takes records again, with the next ticket.
  EXPECT_EQ(outbox_->Add(Record("r" + big)), last + 1);
  EXPECT_TRUE(outbox_->WaitDelivered(last + 1));
}

// The bounded memory store drops its oldest record to make room (MemoryOutboxStore).
// What the contract promises when that happens to records of a batch being sent or
// retried: an evicted record is given up on at once (delivered, counted once in dropped);
// the records that survive still go, in order, and leave the store only when acknowledged;
// the retry cannot be the same batch (its front is gone), so the front is read again.
class OutboxEvictionTest : public OutboxTest {};

INSTANTIATE_TEST_SUITE_P(Stores, OutboxEvictionTest, ::testing::Values(Store::kMemory),
                         [](const ::testing::TestParamInfo<Store>&) { return "BoundedMemory"; });

TEST_P(OutboxEvictionTest, EvictionDropsTheOldestAndCountsIt) {
  OpenStore(Store::kMemory, /*max_records=*/3);
  Start(Paused());
  AddRange(1, 5);  // evicts r1 and r2
  EXPECT_TRUE(outbox_->IsDelivered(2));
  EXPECT_FALSE(outbox_->IsDelivered(3));
  EXPECT_EQ(outbox_->stats().dropped[1], 2u);
  EXPECT_EQ(Queued(), Names(3, 5));
  outbox_->Resume();
  ASSERT_TRUE(outbox_->WaitDelivered(5));
  EXPECT_EQ(rpc_.all_payloads(), Names(3, 5));
  EXPECT_EQ(outbox_->stats().acknowledged[1], 3u);
}

TEST_P(OutboxEvictionTest, EvictionWhileABatchIsRetriedResendsTheSurvivorsInOrder) {
  OpenStore(Store::kMemory, /*max_records=*/4);
  OutboxOptions options = Paused();
  options.max_batch = 4;
  rpc_.Script({absl::UnavailableError("away")});
  rpc_.HoldSend(1);
  Start(options);
  AddRange(1, 4);
  outbox_->Resume();
  ASSERT_TRUE(rpc_.WaitForSends(1));
  AddRange(5, 6);  // evicts r1 and r2, which are in the failing batch
  EXPECT_TRUE(outbox_->IsDelivered(2)) << "an evicted record is given up on at once";
  EXPECT_TRUE(outbox_->WaitDelivered(2));
  EXPECT_FALSE(outbox_->IsDelivered(3));
  EXPECT_EQ(outbox_->stats().dropped[1], 2u);
  rpc_.ReleaseSend();
  ASSERT_TRUE(outbox_->WaitDelivered(6));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].payloads, Names(1, 4));
  EXPECT_EQ(sends[1].payloads, Names(3, 6)) << "the retry starts at the new front";
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.dropped[1], 2u);
  EXPECT_EQ(stats.acknowledged[1], 4u);
  EXPECT_EQ(stats.acknowledged[1] + stats.dropped[1], stats.added[1]) << "each record once";
  EXPECT_TRUE(Queued().empty());
}

TEST_P(OutboxEvictionTest, RecordsEvictedFromAnAcknowledgedBatchAreCountedOnce) {
  OpenStore(Store::kMemory, /*max_records=*/4);
  OutboxOptions options = Paused();
  options.max_batch = 4;
  rpc_.HoldSend(1);
  Start(options);
  AddRange(1, 4);
  outbox_->Resume();
  ASSERT_TRUE(rpc_.WaitForSends(1));
  AddRange(5, 6);  // evicts r1 and r2 while their batch is in flight
  EXPECT_EQ(Queued(), Names(3, 6));
  rpc_.ReleaseSend();  // acknowledged: r3, r4 leave; r5, r6 stay
  ASSERT_TRUE(outbox_->WaitDelivered(6));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[1].payloads, Names(5, 6)) << "r3 and r4 were acknowledged";
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.added[1], 6u);
  EXPECT_EQ(stats.dropped[1], 2u);
  EXPECT_EQ(stats.acknowledged[1], 4u);
  EXPECT_EQ(stats.acknowledged[1] + stats.dropped[1], stats.added[1]) << "each record once";
}

TEST_P(OutboxEvictionTest, RecordsEvictedFromAGivenUpBatchAreCountedOnce) {
  OpenStore(Store::kMemory, /*max_records=*/4);
  OutboxOptions options = Paused();
  options.max_batch = 4;
  options.max_permanent_failures = 1;
  rpc_.Script({absl::InvalidArgumentError("poison")});
  rpc_.HoldSend(1);
  Start(options);
  AddRange(1, 4);
  outbox_->Resume();
  ASSERT_TRUE(rpc_.WaitForSends(1));
  AddRange(5, 6);      // evicts r1 and r2 while their batch is in flight
  rpc_.ReleaseSend();  // rejected: the batch is given up on
  ASSERT_TRUE(outbox_->WaitDelivered(6));
  const std::vector<FakeRpc::Send> sends = rpc_.sends();
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[1].payloads, Names(5, 6));
  const OutboxStats stats = outbox_->stats();
  EXPECT_EQ(stats.dropped[1], 4u) << "r1, r2 evicted; r3, r4 given up on";
  EXPECT_EQ(stats.acknowledged[1], 2u);
  EXPECT_EQ(stats.acknowledged[1] + stats.dropped[1], stats.added[1]) << "each record once";
}

}  // namespace
}  // namespace bench::agent

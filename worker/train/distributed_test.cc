#include "worker/train/distributed.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "worker/train/test_ports.h"
#include "worker/train/two_ranks.h"
#include <torch/nn/functional/loss.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "worker/train/models.h"

namespace bench_train {
namespace {

RendezvousOptions Loopback(int rank, int world_size, int port, int timeout_s) {
  RendezvousOptions rdv;
  rdv.rank = rank;
  rdv.world_size = world_size;
  rdv.local_rank = rank;
  rdv.master_addr = "127.0.0.1";
  rdv.master_port = port;
  rdv.timeout_s = timeout_s;
  return rdv;
}

std::shared_ptr<ImageClassifier> SeededModel(uint64_t seed) {
  torch::manual_seed(seed);
  auto model = MakeClassifier("resnet50", 10);
  EXPECT_TRUE(model.ok());
  (*model)->eval();  // BN on running stats: per-sample independent, so shards add up
  return *model;
}

std::vector<torch::Tensor> State(ImageClassifier& model) {
  std::vector<torch::Tensor> state = model.parameters();
  for (const auto& buffer : model.buffers()) state.push_back(buffer);
  return state;
}

// Two ranks (threads) over real TCPStore + Gloo, each on half of a batch of 4,
// must end with the gradients of one process on the whole batch. Rank 1 starts
// from other weights: the initial broadcast must replace them with rank 0's.
TEST(DistributedTest, AveragedGradientsEqualFullBatchGradients) {
  auto reference = SeededModel(7);
  std::vector<std::shared_ptr<ImageClassifier>> ranks = {SeededModel(7), SeededModel(8)};
  ASSERT_FALSE(torch::equal(reference->parameters()[0], ranks[1]->parameters()[0]));

  torch::manual_seed(123);
  const torch::Tensor images = torch::randn({4, 3, 32, 32});
  const torch::Tensor labels = torch::randint(0, 10, {4}, torch::kLong);
  torch::nn::functional::cross_entropy(reference->forward(images), labels).backward();

  std::vector<std::string> backends(2);
  const std::vector<Status> statuses = RunTwoRanks(
      [&](int rank, Communicator& communicator) {
        backends[rank] = communicator.backend_name();
        ImageClassifier& model = *ranks[rank];
        BroadcastTensors(State(model), communicator, /*root=*/0);
        const torch::Tensor shard = images.narrow(0, 2 * rank, 2);
        const torch::Tensor shard_labels = labels.narrow(0, 2 * rank, 2);
        torch::nn::functional::cross_entropy(model.forward(shard), shard_labels).backward();
        // Small buckets: many collectives per step.
        AverageGradients(model.parameters(), communicator, /*bucket_bytes=*/4 << 20);
      },
      /*timeout_s=*/30);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].message();
    EXPECT_EQ(backends[rank], "gloo");
  }

  const auto expected = reference->named_parameters();
  int compared = 0;
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& item : ranks[rank]->named_parameters()) {
      const torch::Tensor& want = expected[item.key()];
      ASSERT_TRUE(torch::equal(item.value(), want)) << "rank " << rank << " weight " << item.key();
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      const torch::Tensor& got = item.value().grad();
      EXPECT_TRUE(torch::allclose(got, want.grad(), /*rtol=*/1e-4, /*atol=*/1e-5))
          << "rank " << rank << " grad " << item.key() << " max abs diff "
          << (got - want.grad()).abs().max().item<double>();
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2 * 161);
}

// Rank 1 of 2 with nobody serving the store: it keeps trying to reach the store until
// it times out, then fails with Unavailable naming the store and the timeout. An
// early failure of another kind (e.g. a libtorch that cannot create a store at all)
// must not pass for it.
TEST(DistributedTest, MissingPeerTimesOutWithUnavailable) {
  const int port = PickFreeLoopbackPort();
  ASSERT_GT(port, 0);
  const auto start = std::chrono::steady_clock::now();
  auto communicator = ConnectProcessGroup(Loopback(1, 2, port, 2), Backend::kGloo);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(communicator.ok());
  const std::string& message = communicator.status().message();
  EXPECT_EQ(communicator.status().code(), StatusCode::kUnavailable) << message;
  EXPECT_NE(message.find("rendezvous at 127.0.0.1:" + std::to_string(port) +
                         " (rank 1 of 2, timeout 2 s) failed: "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("timed out"), std::string::npos) << message;  // libtorch's own words
  EXPECT_EQ(message.find("libuv"), std::string::npos) << message;
  // libtorch 1.13's client gives up after about half the timeout (2.x: all of it); an
  // error that is not a timeout comes at once.
  EXPECT_GE(waited, 0.9) << "gave up without waiting for the store: " << message;
  EXPECT_LT(waited, 30.0);
}

// Shutdown ends the group on every rank after the last collective; it is safe to call
// twice (and from the destructor), and a collective after it is an error, not a hang.
TEST(DistributedTest, ShutdownEndsTheGroupOnceAndLaterCollectivesThrow) {
  std::vector<float> sums(2, 0.0f);
  // One byte per rank, not std::vector<bool>: its bits share a word, and the two rank
  // threads writing theirs at once could lose one (a rank's `true` read back false).
  std::vector<char> shut_down(2, 0);
  std::vector<char> threw_after(2, 0);
  const std::vector<Status> statuses = RunTwoRanks(
      [&](int rank, Communicator& group) {
        torch::Tensor value = torch::full({4}, static_cast<float>(rank + 1));
        group.AllReduceSum({value});
        sums[rank] = value[0].item<float>();
        EXPECT_FALSE(group.is_shut_down());
        group.Shutdown();
        group.Shutdown();  // again: nothing happens
        shut_down[rank] = group.is_shut_down();
        try {
          group.AllReduceSum({value});
        } catch (const std::logic_error& e) {
          threw_after[rank] = std::string(e.what()).find("after Shutdown") != std::string::npos;
        }
        // The destructor (when RunTwoRanks' communicator goes) calls Shutdown once more.
      },
      /*timeout_s=*/30);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank].message();
    EXPECT_EQ(sums[rank], 3.0f) << "rank " << rank;
    EXPECT_TRUE(shut_down[rank]) << "rank " << rank;
    EXPECT_TRUE(threw_after[rank]) << "rank " << rank;
  }
}

TEST(DistributedTest, SingleProcessNeedsNoGroup) {
  EXPECT_EQ(ConnectProcessGroup(Loopback(0, 1, 1, 1), Backend::kGloo).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bench_train

// For bench-train's tests: runs ranks 0 and 1 of a real two-rank group on two
// threads, each with its own TCPStore + Gloo communicator on loopback. Header-only.
#ifndef BENCHFLEET_WORKER_TRAIN_TWO_RANKS_H_
#define BENCHFLEET_WORKER_TRAIN_TWO_RANKS_H_

#include <functional>
#include <thread>
#include <vector>

#include "worker/train/distributed.h"
#include "worker/train/status.h"
#include "worker/train/test_ports.h"

namespace bench_train {

// Calls `body(rank, communicator)` on both ranks once they are connected and
// returns each rank's connect status (OK where `body` ran).
inline std::vector<Status> RunTwoRanks(const std::function<void(int rank, Communicator&)>& body,
                                       int timeout_s = 60) {
  const int port = PickFreeLoopbackPort();
  if (port <= 0) return std::vector<Status>(2, InternalError("no free loopback port"));
  std::vector<Status> statuses(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      RendezvousOptions rendezvous;
      rendezvous.rank = rank;
      rendezvous.world_size = 2;
      rendezvous.local_rank = rank;
      rendezvous.master_addr = "127.0.0.1";
      rendezvous.master_port = port;
      rendezvous.timeout_s = timeout_s;
      auto communicator = ConnectProcessGroup(rendezvous, Backend::kGloo);
      if (!communicator.ok()) {
        statuses[rank] = communicator.status();
        return;
      }
      body(rank, **communicator);
    });
  }
  for (auto& thread : threads) thread.join();
  return statuses;
}

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TWO_RANKS_H_

// The simulated job's one meeting (bench-sim-train): rank 0 listens on MASTER_ADDR:
// MASTER_PORT, every other rank connects and sends its rank, GPU index and node, and rank 0
// answers each with the whole table and a common start time (Unix seconds), from which
// every rank computes the same schedule. Standard library and POSIX sockets only.
//
// Wire format, one line each: a rank sends "hello RANK GPU NODE\n"; rank 0 answers
// "table START_UNIX_S WORLD\n", WORLD lines "RANK GPU NODE\n" and "end\n".
#pragma once

#include <string>
#include <vector>

#include "worker/sim/sim_model.h"

namespace bench::sim {

struct RendezvousResult {
  double start_unix_s = 0;        // iteration 1 of every rank starts then
  std::vector<RankPlace> places;  // index: global rank
};

// A world of one meets no one. false with *error saying what failed (a peer that did not
// come within `timeout_s`, a malformed or duplicate hello, a socket error), naming the
// address.
bool Rendezvous(int rank, int world_size, const std::string& master_addr, int master_port,
                const RankPlace& self, double timeout_s, RendezvousResult* out, std::string* error);

}  // namespace bench::sim

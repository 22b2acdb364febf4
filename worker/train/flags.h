// bench-train's command line: its arguments (argv without the program name) → the
// TrainOptions main.cc hands to RunTrainer. The flags the agent launches a rank with are
// named in common/trainer_contract.h; the trainer's own (--lr, --seed, ...) here.
//
// Torch-free and pure: no I/O, no environment (main.cc reads torchrun's variables
// through RendezvousFromEnv, options.h), so that tests parse an agent's launch with it.
#ifndef BENCHFLEET_WORKER_TRAIN_FLAGS_H_
#define BENCHFLEET_WORKER_TRAIN_FLAGS_H_

#include <string>
#include <vector>

#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

struct ParsedFlags {
  TrainOptions options;
  bool image_size_given = false;   // else the model's default (common/names.h)
  bool num_classes_given = false;  // else the model's default
  int rendezvous_timeout_s = 60;
  bool help = false;     // --help or -h: nothing after it is read
  bool version = false;  // --version: nothing after it is read
};

// INVALID_ARGUMENT naming the flag for an unknown flag, a missing or malformed value, or
// a value out of its range; names and ranges across flags are ValidateTrainOptions's.
// `--flag value` and `--flag=value` both work; a model's default image size and classes
// fill what the flags leave out.
Status ParseTrainFlags(const std::vector<std::string>& args, ParsedFlags* parsed);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_FLAGS_H_

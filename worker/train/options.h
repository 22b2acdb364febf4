// Options for one bench-train rank, and their validation.
//
// Torch-free. main.cc is the only reader of flags and environment variables: it
// fills a TrainOptions (flags) and its RendezvousOptions (torchrun's environment,
// via RendezvousFromEnv) and hands them to RunTrainer (trainer.h).
#ifndef BENCHFLEET_WORKER_TRAIN_OPTIONS_H_
#define BENCHFLEET_WORKER_TRAIN_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/names.h"
#include "common/spec_defaults.h"
#include "worker/train/fault_injection.h"
#include "worker/train/status.h"

namespace bench_train {

inline constexpr char kBenchTrainVersion[] = "0.1.0";

// The names every binary uses (common/names.h): --precision fp32 (TF32 off), tf32 (CUDA,
// compute capability >= 8.0), amp (fp16 + loss scaling on CUDA, bf16 on the CPU), bf16
// (bf16 autocast, no scaling); --data synthetic or imagefolder (JPEGs, one sub-folder
// per class).
using bench::kDataImageFolder;
using bench::kDataSynthetic;
using bench::kPrecisionAmp;
using bench::kPrecisionBf16;
using bench::kPrecisionFp32;
using bench::kPrecisionTf32;

enum class Toggle { kAuto, kOn, kOff };
// The network downsamples by 32; smaller images leave no spatial extent.
inline constexpr int kMinImageSize = 32;

// How this process joins its peers. Filled from the variables torchrun sets
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). world_size == 1 means
// no process group at all.
struct RendezvousOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Bounds the TCPStore connect/wait and the process group's setup and
  // collectives: a missing peer becomes an error, not a hang.
  int timeout_s = 60;
  // GLOO_SOCKET_IFNAME, as in PyTorch: the network interface Gloo binds to.
  // Empty: 127.0.0.1 when MASTER_ADDR is a loopback address, else the address
  // this host's name resolves to.
  std::string gloo_interface;

  bool distributed() const { return world_size > 1; }
};

struct TrainOptions {
  // Model, precision ("fp32", "tf32", "amp" or "bf16"), iterations (warm-up included),
  // warm-up (excluded from the summary) and image size default as a job spec's do
  // (common/spec_defaults.h); the batch is per rank.
  std::string model = bench::kDefaultModel;
  std::string precision = bench::kDefaultPrecision;
  int64_t batch_size = 32;
  int64_t iterations = bench::kDefaultIterations;
  int64_t warmup_iterations = bench::kDefaultWarmupIterations;
  int64_t image_size = bench::kDefaultImageSize;
  int64_t num_classes = 1000;
  std::string data = kDataSynthetic;       // "synthetic" or "imagefolder"
  std::string data_dir;                    // imagefolder: the root (one folder per class)
  int loader_threads = 0;                  // JPEG decode threads; 0: hardware threads
  // After the run on real data, the same configuration again on synthetic data (compute
  // alone); the summary gives both throughputs and their ratio. Not with synthetic data.
  bool data_vs_compute = false;
  std::string device = "cpu";              // "cpu", "cuda" (= cuda:LOCAL_RANK), "cuda:N"
  int threads = 0;                         // 0: libtorch's default intra-op threads
  uint64_t seed = 1;
  // Test only (environment BENCH_TRAIN_TEST_STEP_SLEEP_MS): the CPU loop sleeps this
  // long inside every step, as a slow device would take longer, so that tests of the
  // per-GPU variability report can inject a slow rank. 0 in any real run.
  int test_step_sleep_ms = 0;
  // Fault injection (--fault-scenario FILE, fault_injection.h): off (empty) by default.
  // main.cc loads this rank's rules into `faults`; the CPU only.
  std::string fault_scenario;
  RankFaults faults;
  // kAuto: channels_last on CUDA, contiguous NCHW on the CPU.
  Toggle channels_last = Toggle::kAuto;
  // kAuto: captured when world_size == 1 on CUDA and the per-GPU batch is <= 128.
  Toggle cuda_graphs = Toggle::kAuto;
  // kAuto: on for --device cpu. Keep freed host memory for reuse (host_memory.h).
  Toggle host_memory_cache = Toggle::kAuto;
  // NVIDIA's ResNet-50 v1.5 recipe. lr <= 0: 0.256 x global batch / 256.
  double lr = 0;
  double momentum = 0.875;
  double weight_decay = 3.0517578125e-05;
  bool bn_weight_decay = false;       // false: no weight decay on BatchNorm and biases
  double label_smoothing = 0.1;
  int64_t lr_warmup_iterations = -1;  // linear warm-up, then cosine to 0; -1: = warmup
  bool zero_init_residual = false;    // last BN gamma of each residual block starts at 0
  // With more than one rank: rank 0's BatchNorm running statistics overwrite every
  // rank's before each forward, as PyTorch DDP's broadcast_buffers=True (its default).
  bool broadcast_buffers = true;
  // The run ends with "loss diverged" once this many iterations in a row had a
  // non-finite loss (every iteration is still reported); 0: never.
  int64_t max_nonfinite_iters = 20;
  RendezvousOptions rendezvous;
};

// Names accepted by --model (see models.h for the registry itself; kept here so
// that flag validation needs no torch).
const std::vector<std::string>& KnownModelNames();

// The learning rate in effect: options.lr, or 0.256 x (batch_size x world_size) / 256.
double EffectiveLearningRate(const TrainOptions& options);
// lr_warmup_iterations in effect (-1 resolved to warmup_iterations).
int64_t EffectiveLrWarmup(const TrainOptions& options);

// Checks ranges and names. The message names the offending flag (e.g. "--bs").
Status ValidateTrainOptions(const TrainOptions& options);

// Reads torchrun's variables through `getenv` (nullptr = unset). All absent, or
// WORLD_SIZE == 1: a single process. WORLD_SIZE > 1 requires RANK, MASTER_ADDR and
// MASTER_PORT; LOCAL_RANK defaults to RANK; GLOO_SOCKET_IFNAME is optional.
// `timeout_s` is copied into the result.
StatusOr<RendezvousOptions> RendezvousFromEnv(
    const std::function<const char*(const char*)>& getenv, int timeout_s);

// Strict integer parsing: the whole string must be a base-10 integer.
bool ParseInt64(const std::string& text, int64_t* out);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_OPTIONS_H_

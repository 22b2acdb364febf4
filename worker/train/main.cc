// bench-train: trains one model for a fixed number of iterations on synthetic
// data or a folder of JPEGs, and prints JSON-lines events on stdout (docs/trainer-events.md).
//
//   bench-train --model resnet50 --precision amp --bs 64 --iters 100 --warmup 10
//
// Multi-process data parallelism: launch one process per rank with torchrun's
// variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
// Exit status: 0 on success; 2 for bad flags, options or environment; 1 for any
// other failure. Every non-zero exit follows an `error` event.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/build_info.h"
#include "common/log.h"
#include "common/trainer_contract.h"
#include "worker/train/event_writer.h"
#include "worker/train/fatal_signal.h"
#include "worker/train/fault_injection.h"
#include "worker/train/flags.h"
#include "worker/train/options.h"
#include "worker/train/status.h"
#include "worker/train/trainer.h"

namespace {

using bench_train::Status;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    "usage: bench-train [flags]\n"
    "  --model NAME              resnet18|resnet34|resnet50|resnet101|resnet152|ssd_resnet34\n"
    "                            (resnet50; ssd_resnet34: MLPerf's SSD300, 300x300, 81 classes)\n"
    "  --precision P             fp32|tf32|amp|bf16 (fp32). fp32: TF32 off; tf32: CUDA only;\n"
    "                            amp: fp16 autocast + dynamic loss scaling on CUDA, bf16\n"
    "                            autocast on CPU; bf16: bf16 autocast, no scaling\n"
    "  --bs N                    batch size per rank (32)\n"
    "  --iters N                 iterations, warm-up included (100)\n"
    "  --warmup N                warm-up iterations, 0 <= N < iters (10)\n"
    "  --image-size N            square image side, >= 32 (the model's: 224 for ResNets)\n"
    "  --num-classes N           classes (the model's: 1000 for ResNets)\n"
    "  --data SOURCE             synthetic | imagefolder:PATH | coco:PATH (synthetic)\n"
    "  --data-dir PATH           = --data imagefolder:PATH (JPEGs, one sub-folder per class);\n"
    "                            with a later --data coco: the COCO folder (annotations/\n"
    "                            instances_*.json, images in its split's folder, e.g. train2017/)\n"
    "  --loader-threads N        JPEG decode threads (0: hardware threads)\n"
    "  --data-vs-compute         then run again on synthetic data: both img/s and their ratio\n"
    "  --channels-last, --no-channels-last   memory format (default: on for CUDA only)\n"
    "  --cuda-graphs M           auto|on|off (auto: on for CUDA, 1 rank, batch <= 128,\n"
    "                            warm-up > 3: the step is captured during warm-up)\n"
    "  --host-memory-cache M     auto|on|off (auto: on for the CPU): malloc keeps freed\n"
    "                            memory for the next step instead of faulting it in again\n"
    "  --lr X                    peak learning rate (0.256 x global batch / 256)\n"
    "  --lr-warmup-iters N       linear warm-up, then cosine (default: --warmup)\n"
    "  --momentum X              SGD momentum (0.875)\n"
    "  --weight-decay X          (3.0517578125e-05)\n"
    "  --bn-weight-decay         also decay BatchNorm weights and biases (off)\n"
    "  --label-smoothing X       (0.1)\n"
    "  --zero-init-residual      last BatchNorm gamma of each block starts at 0 (off)\n"
    "  --no-broadcast-buffers    ranks keep their own BatchNorm running statistics\n"
    "                            (default: rank 0's are broadcast before each forward, as DDP)\n"
    "  --max-nonfinite-iters N   end with 'loss diverged' after N iterations in a row\n"
    "                            with a non-finite loss (20; 0: never)\n"
    "  --device D                cpu|cuda|cuda:N (cpu); cuda = cuda:LOCAL_RANK\n"
    "  --threads N               intra-op CPU threads (libtorch default)\n"
    "  --seed N                  random seed (1)\n"
    "  --rendezvous-timeout-s N  how long to wait for peers (60)\n"
    "  --fault-scenario FILE     fault injection, for tests and demonstrations only (off):\n"
    "                            this rank's rules of a scenario file slow its forward and\n"
    "                            backward (extra_compute) or stall its data (data_stall_s)\n"
    "                            over an iteration range; the CPU only (docs/trainer-events.md)\n"
    "  --help, --version         this text; the version and build id (exit 0)\n"
    "Ranks: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as set by torchrun.\n";

// The rank for error events written before the environment is validated.
int BestEffortRank() {
  int64_t rank = 0;
  const char* text = std::getenv(bench::trainer_contract::kEnvRank);
  if (text != nullptr && bench_train::ParseInt64(text, &rank) && rank >= 0 && rank < (1 << 20)) {
    return static_cast<int>(rank);
  }
  return 0;
}

int Fail(bench_train::EventWriter& events, int rank, const Status& status, int exit_code) {
  bench::Log("rank ", rank, ": error: ", status.message());
  events.Write(bench_train::ErrorEvent{rank, status.message()});
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  bench::SetLogComponent("bench-train");  // human logs on stderr; events stay on stdout
  bench_train::InstallFatalSignalReporter(BestEffortRank());  // a crash becomes an error event
  bench_train::EventWriter events(stdout);
  bench_train::ParsedFlags parsed;
  Status status =
      bench_train::ParseTrainFlags(std::vector<std::string>(argv + 1, argv + argc), &parsed);
  if (!status.ok()) return Fail(events, BestEffortRank(), status, kExitUsage);
  if (parsed.help) {
    std::fputs(kUsage, stderr);
    return 0;
  }
  if (parsed.version) {
    std::printf("%s\n", bench::VersionLine("bench-train").c_str());
    return 0;
  }

  auto rendezvous = bench_train::RendezvousFromEnv(
      [](const char* name) -> const char* { return std::getenv(name); },
      parsed.rendezvous_timeout_s);
  if (!rendezvous.ok()) return Fail(events, BestEffortRank(), rendezvous.status(), kExitUsage);
  parsed.options.rendezvous = rendezvous.value();
  const int rank = parsed.options.rendezvous.rank;
  if (const char* sleep_ms = std::getenv("BENCH_TRAIN_TEST_STEP_SLEEP_MS")) {
    int64_t value = 0;
    if (!bench_train::ParseInt64(sleep_ms, &value) || value < 0 || value > 60000) {
      return Fail(events, rank,
                  bench_train::Status(bench_train::StatusCode::kInvalidArgument,
                                      "BENCH_TRAIN_TEST_STEP_SLEEP_MS: expected 0..60000"),
                  kExitUsage);
    }
    parsed.options.test_step_sleep_ms = static_cast<int>(value);
  }

  bench_train::TrainerTestOptions test;
  if (const char* capture_failure = std::getenv("BENCH_TRAIN_TEST_CAPTURE_FAILURE")) {
    const std::string value = capture_failure;
    if (value != "0" && value != "1") {
      return Fail(events, rank,
                  bench_train::Status(
                      bench_train::StatusCode::kInvalidArgument,
                      "BENCH_TRAIN_TEST_CAPTURE_FAILURE: expected 0 or 1, got '" + value + "'"),
                  kExitUsage);
    }
    test.capture_failure = value == "1";
  }

  status = bench_train::ValidateTrainOptions(parsed.options);
  if (!status.ok()) return Fail(events, rank, status, kExitUsage);
  if (!parsed.options.fault_scenario.empty()) {  // fault injection: tests and demos only
    auto faults = bench_train::LoadRankFaults(parsed.options.fault_scenario, rank);
    if (!faults.ok()) return Fail(events, rank, faults.status(), kExitUsage);
    parsed.options.faults = std::move(faults).value();
    bench::Log("rank ", rank, ": fault injection from ", parsed.options.fault_scenario);
  }

  status = bench_train::RunTrainer(parsed.options, events, test);
  if (!status.ok()) {
    return Fail(events, rank, status,
                status.code() == bench_train::StatusCode::kInvalidArgument ? kExitUsage
                                                                           : kExitFailure);
  }
  return 0;
}

// bench-train: trains one model for a fixed number of iterations on synthetic
// data or a folder of JPEGs, and prints JSON-lines events on stdout (docs/trainer-events.md).
//
//   bench-train --model resnet50 --precision amp --bs 64 --iters 100 --warmup 10
//
// Multi-process data parallelism: launch one process per rank with torchrun's
// variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
// Exit status: 0 on success; 2 for bad flags, options or environment; 1 for any
// other failure. Every non-zero exit follows an `error` event.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/build_info.h"
#include "common/log.h"
#include "common/names.h"
#include "worker/train/event_writer.h"
#include "worker/train/fatal_signal.h"
#include "worker/train/options.h"
#include "worker/train/status.h"
#include "worker/train/trainer.h"

namespace {

using bench_train::InvalidArgumentError;
using bench_train::Status;
using bench_train::TrainOptions;

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
    "  --help, --version         this text; the version and build id (exit 0)\n"
    "Ranks: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as set by torchrun.\n";

struct ParsedFlags {
  TrainOptions options;
  bool image_size_given = false;  // else the model's default (common/names.h)
  bool num_classes_given = false;  // else the model's default
  int rendezvous_timeout_s = 60;
  bool help = false;
  bool version = false;
};

Status ParseInt(const std::string& flag, const std::string& value, int64_t* out) {
  if (!bench_train::ParseInt64(value, out)) {
    return InvalidArgumentError(flag + " expects an integer, got '" + value + "'");
  }
  return Status::Ok();
}

Status ParseDouble(const std::string& flag, const std::string& value, double* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || errno != 0) {
    return InvalidArgumentError(flag + " expects a number, got '" + value + "'");
  }
  return Status::Ok();
}

Status ParseToggle(const std::string& flag, const std::string& value, bench_train::Toggle* out) {
  if (value == "auto") {
    *out = bench_train::Toggle::kAuto;
  } else if (value == "on") {
    *out = bench_train::Toggle::kOn;
  } else if (value == "off") {
    *out = bench_train::Toggle::kOff;
  } else {
    return InvalidArgumentError(flag + " expects auto, on or off, got '" + value + "'");
  }
  return Status::Ok();
}

Status ParseFlags(int argc, char** argv, ParsedFlags* parsed) {
  TrainOptions& o = parsed->options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      parsed->help = true;
      return Status::Ok();
    }
    if (flag == "--version") {
      parsed->version = true;
      return Status::Ok();
    }
    if (flag.rfind("--", 0) != 0) return InvalidArgumentError("unexpected argument '" + flag + "'");
    if (flag == "--channels-last" || flag == "--no-channels-last") {
      o.channels_last = flag == "--channels-last" ? bench_train::Toggle::kOn
                                                  : bench_train::Toggle::kOff;
      continue;
    }
    if (flag == "--zero-init-residual") {
      o.zero_init_residual = true;
      continue;
    }
    if (flag == "--data-vs-compute") {
      o.data_vs_compute = true;
      continue;
    }
    if (flag == "--broadcast-buffers" || flag == "--no-broadcast-buffers") {
      o.broadcast_buffers = flag == "--broadcast-buffers";
      continue;
    }
    if (flag == "--bn-weight-decay" || flag == "--no-bn-weight-decay") {
      o.bn_weight_decay = flag == "--bn-weight-decay";
      continue;
    }
    std::string value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return InvalidArgumentError(flag + " needs a value");
    }
    int64_t number = 0;
    if (flag == "--model") {
      o.model = value;
    } else if (flag == "--precision") {
      o.precision = value;
    } else if (flag == "--data") {
      const std::string prefix = std::string(bench_train::kDataImageFolder) + ":";
      const std::string coco_prefix = std::string(bench::kDataCoco) + ":";
      if (value.rfind(prefix, 0) == 0) {
        o.data = bench_train::kDataImageFolder;
        o.data_dir = value.substr(prefix.size());
      } else if (value.rfind(coco_prefix, 0) == 0) {
        o.data = bench::kDataCoco;
        o.data_dir = value.substr(coco_prefix.size());
      } else {
        o.data = value;
      }
    } else if (flag == "--data-dir") {
      o.data = bench_train::kDataImageFolder;
      o.data_dir = value;
    } else if (flag == "--loader-threads") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &number));
      if (number < 0 || number > 1024) return InvalidArgumentError("--loader-threads out of range");
      o.loader_threads = static_cast<int>(number);
    } else if (flag == "--cuda-graphs") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseToggle(flag, value, &o.cuda_graphs));
    } else if (flag == "--host-memory-cache") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseToggle(flag, value, &o.host_memory_cache));
    } else if (flag == "--lr") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseDouble(flag, value, &o.lr));
    } else if (flag == "--momentum") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseDouble(flag, value, &o.momentum));
    } else if (flag == "--weight-decay") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseDouble(flag, value, &o.weight_decay));
    } else if (flag == "--label-smoothing") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseDouble(flag, value, &o.label_smoothing));
    } else if (flag == "--max-nonfinite-iters") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.max_nonfinite_iters));
    } else if (flag == "--lr-warmup-iters") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.lr_warmup_iterations));
    } else if (flag == "--device") {
      o.device = value;
    } else if (flag == "--bs" || flag == "--batch-size") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.batch_size));
    } else if (flag == "--iters") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.iterations));
    } else if (flag == "--warmup") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.warmup_iterations));
    } else if (flag == "--image-size") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.image_size));
      parsed->image_size_given = true;
    } else if (flag == "--num-classes") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.num_classes));
      parsed->num_classes_given = true;
    } else if (flag == "--threads") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &number));
      if (number < 0 || number > 4096) return InvalidArgumentError("--threads out of range");
      o.threads = static_cast<int>(number);
    } else if (flag == "--seed") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &number));
      if (number < 0) return InvalidArgumentError("--seed must be >= 0");
      o.seed = static_cast<uint64_t>(number);
    } else if (flag == "--rendezvous-timeout-s") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &number));
      if (number <= 0 || number > 86400) {
        return InvalidArgumentError("--rendezvous-timeout-s must be in 1..86400");
      }
      parsed->rendezvous_timeout_s = static_cast<int>(number);
    } else {
      return InvalidArgumentError("unknown flag '" + flag + "' (see --help)");
    }
  }
  if (const bench::ModelInfo* model = bench::FindModel(o.model)) {
    if (!parsed->image_size_given) o.image_size = model->default_image_size;
    if (!parsed->num_classes_given) o.num_classes = model->default_num_classes;
  }
  return Status::Ok();
}

// The rank for error events written before the environment is validated.
int BestEffortRank() {
  int64_t rank = 0;
  const char* text = std::getenv("RANK");
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
  ParsedFlags parsed;
  Status status = ParseFlags(argc, argv, &parsed);
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

  status = bench_train::RunTrainer(parsed.options, events, test);
  if (!status.ok()) {
    return Fail(events, rank, status,
                status.code() == bench_train::StatusCode::kInvalidArgument ? kExitUsage
                                                                           : kExitFailure);
  }
  return 0;
}

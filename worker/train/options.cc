#include "worker/train/options.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <iterator>
#include <string>

#include "common/trainer_contract.h"

namespace bench_train {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

bool IsCudaDevice(const std::string& device) {
  if (device == "cuda") return true;
  if (device.rfind("cuda:", 0) != 0) return false;
  int64_t index = 0;
  return ParseInt64(device.substr(5), &index) && index >= 0;
}

Status EnvInt(const std::function<const char*(const char*)>& getenv, const char* name,
              int64_t min, int64_t max, int* out) {
  const char* text = getenv(name);
  if (text == nullptr) return InvalidArgumentError(std::string(name) + " is not set");
  int64_t value = 0;
  if (!ParseInt64(text, &value) || value < min || value > max) {
    return InvalidArgumentError(std::string("bad ") + name + "='" + text + "'");
  }
  *out = static_cast<int>(value);
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& KnownModelNames() {
  static const std::vector<std::string> kNames(std::begin(bench::kModelNames),
                                               std::end(bench::kModelNames));
  return kNames;
}

double EffectiveLearningRate(const TrainOptions& options) {
  if (options.lr > 0) return options.lr;
  return 0.256 * static_cast<double>(options.batch_size * options.rendezvous.world_size) / 256.0;
}

int64_t EffectiveLrWarmup(const TrainOptions& options) {
  return options.lr_warmup_iterations < 0 ? options.warmup_iterations
                                          : options.lr_warmup_iterations;
}

bool ParseInt64(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (*begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end;
}

Status ValidateTrainOptions(const TrainOptions& options) {
  const auto& models = KnownModelNames();
  if (std::find(models.begin(), models.end(), options.model) == models.end()) {
    return InvalidArgumentError("unknown --model '" + options.model + "' (known: " +
                                Join(models) + ")");
  }
  if (options.precision != kPrecisionFp32 && options.precision != kPrecisionTf32 &&
      options.precision != kPrecisionAmp && options.precision != kPrecisionBf16) {
    return InvalidArgumentError("unknown --precision '" + options.precision + "' (known: " +
                                bench::JoinNames(bench::kPrecisionNames, ", ", ", ") + ")");
  }
  if (options.data != kDataSynthetic && options.data != kDataImageFolder &&
      options.data != bench::kDataCoco) {
    return InvalidArgumentError("unknown --data '" + options.data +
                                "' (known: synthetic, imagefolder:PATH, coco:PATH)");
  }
  if (options.data != kDataSynthetic && options.data_dir.empty()) {
    return InvalidArgumentError("--data " + options.data + " needs a folder (--data " +
                                options.data + ":PATH or --data-dir PATH)");
  }
  const bench::ModelInfo* model = bench::FindModel(options.model);
  const bool detection = model != nullptr && model->data_kind == bench::DataKind::kDetection;
  if (options.data == bench::kDataCoco && !detection) {
    return InvalidArgumentError("--data coco is detection data: --model " + options.model +
                                " is a classifier (use --data imagefolder or synthetic)");
  }
  if (detection) {
    if (options.data == kDataImageFolder) {
      return InvalidArgumentError("--model " + options.model +
                                  " (detection) trains on --data synthetic or coco, not "
                                  "imagefolder");
    }
    if (options.image_size != model->default_image_size) {
      return InvalidArgumentError("--image-size must be " +
                                  std::to_string(model->default_image_size) + " for --model " +
                                  options.model + " (its default boxes are defined for it; got " +
                                  std::to_string(options.image_size) + ")");
    }
    if (options.num_classes < 2) {
      return InvalidArgumentError("--num-classes must be >= 2 for --model " + options.model +
                                  " (the background and at least one class)");
    }
  }
  if (options.loader_threads < 0) return InvalidArgumentError("--loader-threads must be >= 0");
  if (options.data_vs_compute && options.data == kDataSynthetic) {
    return InvalidArgumentError(
        "--data-vs-compute compares a run on real data with one on synthetic data: give "
        "--data imagefolder or coco");
  }
  if (!(options.lr >= 0) || !(options.momentum >= 0 && options.momentum < 1) ||
      !(options.weight_decay >= 0)) {
    return InvalidArgumentError("--lr, --momentum (0..1) and --weight-decay must be >= 0");
  }
  if (!(options.label_smoothing >= 0 && options.label_smoothing < 1)) {
    return InvalidArgumentError("--label-smoothing must be in [0, 1)");
  }
  if (options.lr_warmup_iterations < -1) {
    return InvalidArgumentError("--lr-warmup-iters must be >= 0");
  }
  if (options.max_nonfinite_iters < 0) {
    return InvalidArgumentError("--max-nonfinite-iters must be >= 0 (0: never stop)");
  }
  if (options.batch_size <= 0) {
    return InvalidArgumentError("--bs must be > 0 (got " + std::to_string(options.batch_size) +
                                ")");
  }
  if (options.iterations <= 0) {
    return InvalidArgumentError("--iters must be > 0 (got " +
                                std::to_string(options.iterations) + ")");
  }
  if (options.warmup_iterations < 0 || options.warmup_iterations >= options.iterations) {
    return InvalidArgumentError("--warmup must be >= 0 and < --iters (got warmup " +
                                std::to_string(options.warmup_iterations) + ", iters " +
                                std::to_string(options.iterations) + ")");
  }
  if (options.image_size < kMinImageSize) {
    return InvalidArgumentError("--image-size must be >= " + std::to_string(kMinImageSize) +
                                " (ResNets downsample by 32; got " +
                                std::to_string(options.image_size) + ")");
  }
  if (options.num_classes <= 0) {
    return InvalidArgumentError("--num-classes must be > 0");
  }
  if (options.device != "cpu" && !IsCudaDevice(options.device)) {
    return InvalidArgumentError("unknown --device '" + options.device +
                                "' (known: cpu, cuda, cuda:N)");
  }
  if (!options.fault_scenario.empty() && options.device != "cpu") {
    return InvalidArgumentError(std::string(bench::trainer_contract::kFlagFaultScenario) +
                                ": fault injection runs on the CPU only (--device " +
                                options.device + ")");
  }
  if (options.threads < 0) return InvalidArgumentError("--threads must be >= 0");
  const RendezvousOptions& rdv = options.rendezvous;
  if (rdv.timeout_s <= 0) return InvalidArgumentError("--rendezvous-timeout-s must be > 0");
  if (rdv.world_size < 1 || rdv.rank < 0 || rdv.rank >= rdv.world_size) {
    return InvalidArgumentError("RANK " + std::to_string(rdv.rank) + " is outside WORLD_SIZE " +
                                std::to_string(rdv.world_size));
  }
  return Status::Ok();
}

StatusOr<RendezvousOptions> RendezvousFromEnv(
    const std::function<const char*(const char*)>& getenv, int timeout_s) {
  namespace contract = bench::trainer_contract;  // torchrun's variables, set by the agent
  RendezvousOptions rdv;
  rdv.timeout_s = timeout_s;
  if (getenv(contract::kEnvWorldSize) == nullptr) {
    if (getenv(contract::kEnvRank) != nullptr) {
      return InvalidArgumentError(std::string(contract::kEnvRank) + " is set but " +
                                  contract::kEnvWorldSize + " is not");
    }
    return rdv;
  }
  BENCH_TRAIN_RETURN_IF_ERROR(EnvInt(getenv, contract::kEnvWorldSize, 1, 1 << 20, &rdv.world_size));
  if (rdv.world_size == 1) {
    const char* rank = getenv(contract::kEnvRank);
    if (rank != nullptr && std::string(rank) != "0") {
      return InvalidArgumentError(std::string(contract::kEnvRank) + "=" + rank + " with " +
                                  contract::kEnvWorldSize + "=1");
    }
    return rdv;
  }
  BENCH_TRAIN_RETURN_IF_ERROR(EnvInt(getenv, contract::kEnvRank, 0, rdv.world_size - 1, &rdv.rank));
  if (getenv(contract::kEnvLocalRank) != nullptr) {
    BENCH_TRAIN_RETURN_IF_ERROR(
        EnvInt(getenv, contract::kEnvLocalRank, 0, 1 << 20, &rdv.local_rank));
  } else {
    rdv.local_rank = rdv.rank;
  }
  const char* addr = getenv(contract::kEnvMasterAddr);
  if (addr == nullptr || *addr == '\0') {
    return InvalidArgumentError(std::string(contract::kEnvMasterAddr) + " is not set");
  }
  rdv.master_addr = addr;
  BENCH_TRAIN_RETURN_IF_ERROR(EnvInt(getenv, contract::kEnvMasterPort, 1, 65535, &rdv.master_port));
  if (const char* ifname = getenv("GLOO_SOCKET_IFNAME")) rdv.gloo_interface = ifname;
  return rdv;
}

}  // namespace bench_train

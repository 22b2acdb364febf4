#include "worker/train/flags.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "common/names.h"
#include "common/trainer_contract.h"

namespace bench_train {
namespace {

namespace contract = bench::trainer_contract;

Status ParseInt(const std::string& flag, const std::string& value, int64_t* out) {
  if (!ParseInt64(value, out)) {
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

Status ParseToggle(const std::string& flag, const std::string& value, Toggle* out) {
  if (value == "auto") {
    *out = Toggle::kAuto;
  } else if (value == "on") {
    *out = Toggle::kOn;
  } else if (value == "off") {
    *out = Toggle::kOff;
  } else {
    return InvalidArgumentError(flag + " expects auto, on or off, got '" + value + "'");
  }
  return Status::Ok();
}

}  // namespace

Status ParseTrainFlags(const std::vector<std::string>& args, ParsedFlags* parsed) {
  TrainOptions& o = parsed->options;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
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
      o.channels_last = flag == "--channels-last" ? Toggle::kOn : Toggle::kOff;
      continue;
    }
    if (flag == "--zero-init-residual") {
      o.zero_init_residual = true;
      continue;
    }
    if (flag == contract::kFlagDataVsCompute) {
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
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return InvalidArgumentError(flag + " needs a value");
    }
    int64_t number = 0;
    if (flag == contract::kFlagModel) {
      o.model = value;
    } else if (flag == contract::kFlagPrecision) {
      o.precision = value;
    } else if (flag == contract::kFlagData) {
      const std::string prefix = std::string(kDataImageFolder) + ":";
      const std::string coco_prefix = std::string(bench::kDataCoco) + ":";
      if (value.rfind(prefix, 0) == 0) {
        o.data = kDataImageFolder;
        o.data_dir = value.substr(prefix.size());
      } else if (value.rfind(coco_prefix, 0) == 0) {
        o.data = bench::kDataCoco;
        o.data_dir = value.substr(coco_prefix.size());
      } else {
        o.data = value;
      }
    } else if (flag == contract::kFlagDataDir) {
      o.data = kDataImageFolder;
      o.data_dir = value;
    } else if (flag == contract::kFlagLoaderThreads) {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &number));
      if (number < 0 || number > 1024) return InvalidArgumentError(flag + " out of range");
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
    } else if (flag == contract::kFlagFaultScenario) {
      if (value.empty()) return InvalidArgumentError(flag + " needs a file");
      o.fault_scenario = value;
    } else if (flag == contract::kFlagDevice) {
      o.device = value;
    } else if (flag == contract::kFlagBatchSize || flag == "--batch-size") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.batch_size));
    } else if (flag == contract::kFlagIterations) {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.iterations));
    } else if (flag == contract::kFlagWarmup) {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.warmup_iterations));
    } else if (flag == contract::kFlagImageSize) {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.image_size));
      parsed->image_size_given = true;
    } else if (flag == "--num-classes") {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &o.num_classes));
      parsed->num_classes_given = true;
    } else if (flag == contract::kFlagThreads) {
      BENCH_TRAIN_RETURN_IF_ERROR(ParseInt(flag, value, &number));
      if (number < 0 || number > 4096) return InvalidArgumentError(flag + " out of range");
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

}  // namespace bench_train

#include "server/http/sample_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/json_escape.h"

namespace bench {
namespace {

// A double as protobuf's JSON printer writes it: the shortest of %.15g and %.17g that
// reads back as the same value; NaN and the infinities as strings.
void AppendDouble(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  if (std::strtod(text, nullptr) != value) std::snprintf(text, sizeof text, "%.17g", value);
  out += text;
}

void AppendField(std::string& out, const char* name, double value) {
  absl::StrAppend(&out, ",\"", name, "\":");
  AppendDouble(out, value);
}

void AppendField(std::string& out, const char* name, const std::optional<double>& value) {
  if (value) AppendField(out, name, *value);
}

// int32: a number.
void AppendField(std::string& out, const char* name, const std::optional<int>& value) {
  if (value) absl::StrAppend(&out, ",\"", name, "\":", *value);
}

// int64 and uint64: a string.
template <typename Int64>
void AppendInt64(std::string& out, const char* name, Int64 value) {
  absl::StrAppend(&out, ",\"", name, "\":\"", value, "\"");
}

template <typename Int64>
void AppendInt64(std::string& out, const char* name, const std::optional<Int64>& value) {
  if (value) AppendInt64(out, name, *value);
}

}  // namespace

void AppendSampleJson(std::string& out, const IterationSample& s) {
  out += "{\"job_id\":";
  AppendJsonString(&out, s.job_id);
  absl::StrAppend(&out, ",\"attempt\":", s.attempt, ",\"rank\":", s.rank, ",\"iteration\":",
                  s.iteration);
  AppendField(out, "step_time_s", s.step_time_s);
  absl::StrAppend(&out, ",\"images\":", s.images);
  AppendField(out, "loss", s.loss);
  AppendField(out, "data_time_s", s.data_time_s);
  AppendField(out, "elapsed_s", s.elapsed_s);
  absl::StrAppend(&out, ",\"warmup\":", s.warmup ? "true" : "false");
  AppendInt64(out, "received_unix_ns", s.received_unix_ns);
  AppendField(out, "compute_time_s", s.compute_time_s);
  AppendField(out, "forward_backward_time_s", s.forward_backward_time_s);
  AppendField(out, "allreduce_wait_time_s", s.allreduce_wait_time_s);
  AppendField(out, "optimizer_time_s", s.optimizer_time_s);
  out += "}";
}

void AppendGpuSampleJson(std::string& out, const GpuSample& g) {
  out += "{\"job_id\":";
  AppendJsonString(&out, g.job_id);
  absl::StrAppend(&out, ",\"attempt\":", g.attempt, ",\"rank\":", g.rank);
  AppendInt64(out, "seq", g.seq);
  out += ",\"gpu_uuid\":";
  AppendJsonString(&out, g.gpu_uuid);
  absl::StrAppend(&out, ",\"gpu_index\":", g.gpu_index);
  AppendInt64(out, "time_unix_ns", g.time_unix_ns);
  AppendField(out, "power_w", g.power_w);
  AppendField(out, "power_average_w", g.power_average_w);
  AppendField(out, "energy_j", g.energy_j);
  AppendField(out, "sm_clock_mhz", g.sm_clock_mhz);
  AppendField(out, "memory_clock_mhz", g.memory_clock_mhz);
  AppendField(out, "temperature_c", g.temperature_c);
  AppendField(out, "gpu_utilization_pct", g.gpu_utilization_pct);
  AppendField(out, "memory_utilization_pct", g.memory_utilization_pct);
  AppendInt64(out, "memory_used_bytes", g.memory_used_bytes);
  AppendInt64(out, "throttle_reasons", g.throttle_reasons);
  AppendField(out, "pcie_gen", g.pcie_gen);
  AppendField(out, "pcie_gen_max", g.pcie_gen_max);
  AppendField(out, "pcie_width", g.pcie_width);
  AppendField(out, "pcie_width_max", g.pcie_width_max);
  AppendField(out, "max_sm_clock_mhz", g.max_sm_clock_mhz);
  AppendField(out, "max_memory_clock_mhz", g.max_memory_clock_mhz);
  AppendField(out, "power_limit_w", g.power_limit_w);
  AppendInt64(out, "ecc_corrected", g.ecc_corrected);
  AppendInt64(out, "ecc_uncorrected", g.ecc_uncorrected);
  AppendInt64(out, "xid_errors", g.xid_errors);
  out += "}";
}

}  // namespace bench

// The hand-written sample JSON is byte for byte what the proto JSON mapping prints
// (report::ToJson of ToProto), over random samples and readings: every optional set or
// not, doubles of every magnitude, NaN and the infinities, int64 extremes.
#include "server/http/sample_json.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "benchfleet/v1/types.pb.h"
#include "report/json_output.h"
#include "server/rpc/proto_convert.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;

std::string ProtoJson(const google::protobuf::Message& message) {
  std::string json = report::ToJson(message);
  json.pop_back();  // its newline
  return json;
}

class RandomValues {
 public:
  explicit RandomValues(uint32_t seed) : rng_(seed) {}
  double Double() {
    switch (Pick(8)) {
      case 0: return 0.0;
      case 1: return std::nan("");
      case 2: return Pick(2) ? INFINITY : -INFINITY;
      case 3: return -0.0;
      case 4: return static_cast<double>(Pick(100000));         // integral
      case 5: return Pick(1000) / 1000.0;                        // short decimals
      case 6: return std::ldexp(Uniform(), static_cast<int>(Pick(600)) - 300);  // any magnitude
      default: return Uniform() * 1000;
    }
  }
  std::optional<double> MaybeDouble() { return Pick(3) == 0 ? std::nullopt : std::optional(Double()); }
  int64_t Int64() {
    switch (Pick(4)) {
      case 0: return std::numeric_limits<int64_t>::max();
      case 1: return std::numeric_limits<int64_t>::min();
      default: return static_cast<int64_t>(rng_()) * (Pick(2) ? 1 : -1);
    }
  }
  int Int() { return static_cast<int>(rng_()); }
  uint64_t Pick(uint64_t n) { return rng_() % n; }

 private:
  double Uniform() { return std::uniform_real_distribution<double>(-1, 1)(rng_); }
  std::mt19937_64 rng_;
};

TEST(SampleJsonTest, IterationSamplesAreWhatTheProtoMappingPrints) {
  RandomValues r(27);
  for (int i = 0; i < 5000; ++i) {
    IterationSample s;
    s.job_id = "job-" + std::to_string(r.Pick(1000000)) + (r.Pick(10) == 0 ? "\"\\\n\xc3\xa9" : "");
    s.attempt = r.Int();
    s.rank = r.Int();
    s.iteration = r.Int();
    s.step_time_s = r.Double();
    s.images = r.Int();
    s.loss = r.Double();
    s.data_time_s = r.Double();
    s.elapsed_s = r.Double();
    s.warmup = r.Pick(2) == 1;
    s.received_unix_ns = r.Int64();
    s.compute_time_s = r.MaybeDouble();
    s.forward_backward_time_s = r.MaybeDouble();
    s.allreduce_wait_time_s = r.MaybeDouble();
    s.optimizer_time_s = r.MaybeDouble();
    v1::IterationSample proto;
    ToProto(s, &proto);
    std::string json;
    AppendSampleJson(json, s);
    ASSERT_EQ(json, ProtoJson(proto)) << i;
  }
}

TEST(SampleJsonTest, GpuReadingsAreWhatTheProtoMappingPrints) {
  RandomValues r(28);
  auto maybe_int = [&r]() { return r.Pick(3) == 0 ? std::nullopt : std::optional<int>(r.Int()); };
  auto maybe_int64 = [&r]() {
    return r.Pick(3) == 0 ? std::nullopt : std::optional<int64_t>(r.Int64());
  };
  for (int i = 0; i < 5000; ++i) {
    GpuSample g;
    g.job_id = "job-" + std::to_string(r.Pick(1000000));
    g.attempt = r.Int();
    g.rank = r.Int();
    g.seq = r.Int64();
    g.gpu_uuid = "GPU-" + std::to_string(r.Pick(1u << 31)) + (r.Pick(10) == 0 ? "\t\x01" : "");
    g.gpu_index = r.Int();
    g.time_unix_ns = r.Int64();
    g.power_w = r.MaybeDouble();
    g.power_average_w = r.MaybeDouble();
    g.energy_j = r.MaybeDouble();
    g.sm_clock_mhz = r.MaybeDouble();
    g.memory_clock_mhz = r.MaybeDouble();
    g.temperature_c = r.MaybeDouble();
    g.gpu_utilization_pct = r.MaybeDouble();
    g.memory_utilization_pct = r.MaybeDouble();
    g.memory_used_bytes = maybe_int64();
    if (r.Pick(3) != 0) g.throttle_reasons = static_cast<uint64_t>(r.Int64());
    g.pcie_gen = maybe_int();
    g.pcie_gen_max = maybe_int();
    g.pcie_width = maybe_int();
    g.pcie_width_max = maybe_int();
    g.max_sm_clock_mhz = r.MaybeDouble();
    g.max_memory_clock_mhz = r.MaybeDouble();
    g.power_limit_w = r.MaybeDouble();
    g.ecc_corrected = maybe_int64();
    g.ecc_uncorrected = maybe_int64();
    g.xid_errors = maybe_int64();
    v1::GpuSample proto;
    ToProto(g, &proto);
    std::string json;
    AppendGpuSampleJson(json, g);
    ASSERT_EQ(json, ProtoJson(proto)) << i;
  }
}

}  // namespace
}  // namespace bench

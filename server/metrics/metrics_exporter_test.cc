// RenderMetrics writes the text format itself (text_exposition.h): its text, read back into
// prometheus-cpp's MetricFamily structures and written again by prometheus-cpp's own
// TextSerializer, is the same byte for byte, over every kind of series benchd exposes
// (gauges, counters, the histogram, simulated jobs, ended jobs, label values to escape,
// values from 0 to 1e21, NaN and infinities).
#include "server/metrics/metrics_exporter.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "server/metrics/text_exposition.h"

namespace bench {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// `"value"` with \\, \" and \n undone, from `at` (the opening quote); `at` ends past it.
std::string Unquote(std::string_view line, size_t& at) {
  std::string value;
  for (++at; at < line.size() && line[at] != '"'; ++at) {
    if (line[at] == '\\' && at + 1 < line.size()) {
      ++at;
      value += line[at] == 'n' ? '\n' : line[at];
    } else {
      value += line[at];
    }
  }
  ++at;
  return value;
}

double Number(std::string_view text) {
  if (text == "Nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  return std::strtod(std::string(text).c_str(), nullptr);
}

// The exposition read back as prometheus-cpp's structures (what its serializer takes).
std::vector<MetricFamily> Parse(const std::string& text) {
  std::vector<MetricFamily> families;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.rfind("# HELP ", 0) == 0) {
      line.remove_prefix(7);
      const size_t space = line.find(' ');
      families.push_back(MetricFamily{std::string(line.substr(0, space)),
                                      std::string(line.substr(space + 1)),
                                      MetricType::Untyped,
                                      {}});
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      line.remove_prefix(7);
      const size_t space = line.find(' ');
      const std::string name(line.substr(0, space));
      if (families.empty() || families.back().name != name) {
        families.push_back(MetricFamily{name, "", MetricType::Untyped, {}});
      }
      const std::string_view type = line.substr(space + 1);
      families.back().type = type == "counter"     ? MetricType::Counter
                             : type == "gauge"     ? MetricType::Gauge
                             : type == "histogram" ? MetricType::Histogram
                                                   : MetricType::Untyped;
      continue;
    }
    MetricFamily& family = families.back();
    const size_t name_end = line.find_first_of("{ ");
    const std::string_view suffix = line.substr(family.name.size(), name_end - family.name.size());
    ClientMetric::Label le{"", ""};
    std::vector<ClientMetric::Label> labels;
    size_t at = name_end;
    if (line[at] == '{') {
      ++at;
      while (line[at] != '}') {
        const size_t equals = line.find('=', at);
        ClientMetric::Label label{std::string(line.substr(at, equals - at)), ""};
        at = equals + 1;
        label.value = Unquote(line, at);
        (label.name == "le" ? le : labels.emplace_back()) = label;
        if (line[at] == ',') ++at;
      }
      ++at;
    }
    const std::string_view value = line.substr(at + 1);
    if (family.type != MetricType::Histogram) {
      ClientMetric& metric = family.metric.emplace_back();
      metric.label = labels;
      (family.type == MetricType::Counter ? metric.counter.value : metric.gauge.value) =
          Number(value);
      continue;
    }
    if (suffix == "_count") {
      family.metric.emplace_back().label = labels;
      family.metric.back().histogram.sample_count = std::strtoull(value.data(), nullptr, 10);
    } else if (suffix == "_sum") {
      family.metric.back().histogram.sample_sum = Number(value);
    } else if (le.value != "+Inf") {  // the serializer writes +Inf itself
      family.metric.back().histogram.bucket.push_back(
          {std::strtoull(value.data(), nullptr, 10), Number(le.value)});
    }
  }
  return families;
}

TEST(MetricsExporter, TheTextIsPrometheusCppsTextSerializersByteForByte) {
  LiveMetrics live;
  live.JobStarted("job-7", {"resnet50", "amp", 256, 2});
  live.JobStarted("job-8", {"resnet101", "fp32", 64, 1, true});
  live.JobStarted("job-9", {"ssd_resnet34", "amp", 32, 1});
  for (int i = 1; i <= 12; ++i) {
    for (int rank = 0; rank < 2; ++rank) {
      IterationSample s;
      s.job_id = "job-7";
      s.rank = rank;
      s.iteration = i;
      s.elapsed_s = i / 3.0;
      s.images = 256;
      live.RecordIteration("job-7", rank == 0 ? "dgx-\"a\"\\b" : "dgx-2", s);
    }
  }
  std::vector<GpuSample> readings;
  for (int rank = 0; rank < 2; ++rank) {
    GpuSample g;
    g.job_id = "job-7";
    g.rank = rank;
    g.seq = 3;
    g.gpu_index = rank;
    g.gpu_uuid = "GPU-line\nbreak";
    g.power_w = rank == 0 ? 653.25 : std::numeric_limits<double>::quiet_NaN();
    g.power_average_w = 1.0 / 3;
    g.energy_j = 1e21;
    g.sm_clock_mhz = 1980;
    g.memory_clock_mhz = std::numeric_limits<double>::infinity();
    g.temperature_c = -0.0;
    g.gpu_utilization_pct = 97;
    g.memory_used_bytes = int64_t{64424509440};
    g.throttle_reasons = 0x24;
    readings.push_back(g);
  }
  live.RecordGpuSamples("dgx-2", readings);
  GpuSample partial;  // only some fields: the others' series are absent
  partial.job_id = "job-8";
  partial.seq = 1;
  partial.power_average_w = 250.5;
  live.RecordGpuSample("job-8", "cpu-box", partial);
  live.JobEnded("job-9", 1234.5678901234567, absl::Now());
  live.SetEnergyPerImage("job-9", 0.27);
  live.CountStored(10, 4, 1);
  live.CountIngestErrors("bad_time", 2);
  live.CountRankReportRejected("bad_summary");
  live.agent_rpcs().CountCall(AgentRpcCounters::Method::kHeartbeat, absl::StatusCode::kOk);
  live.agent_rpcs().CountCall(AgentRpcCounters::Method::kUploadSamples,
                              absl::StatusCode::kUnavailable);
  live.agent_rpcs().CountUpload(160, 80);
  live.agent_rpcs().CountUpload(2000, 0);
  live.agent_rpcs().CountUpload(1, 5000);
  FleetCounts fleet;
  fleet.queued = 2;
  fleet.running = 3;
  fleet.agents_connected = 2;
  fleet.nodes.push_back({"dgx-\"a\"\\b", "cuda", 8, 1});
  fleet.nodes.push_back({"cpu-box", "cpu", 4, 0});

  const std::string text = RenderMetrics(fleet, live.Take(absl::Now()));
  EXPECT_EQ(prometheus::TextSerializer().Serialize(Parse(text)), text);
  // The parse read what was written (not an empty exposition compared with itself).
  EXPECT_THAT(text, ::testing::HasSubstr("uuid=\"GPU-line\\nbreak\""));
  EXPECT_THAT(text, ::testing::HasSubstr("node=\"dgx-\\\"a\\\"\\\\b\""));
  EXPECT_THAT(text, ::testing::HasSubstr("} Nan\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("} +Inf\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("} 1e+21\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("bench_upload_batch_samples_bucket{kind=\"gpu\","
                                         "le=\"+Inf\"} 2\n"));
  EXPECT_GE(Parse(text).size(), 24u);
}

TEST(TextExposition, ValuesAsPrometheusCppWritesThem) {
  for (double value :
       {0.0, -0.0, 1.0, 0.97, 1.0 / 3, 1980e6, 64424509440.0, 1e21, 1e-7, 9007199254740993.0,
        std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    ExpositionFamily family("x", "", ExpositionFamily::Type::kGauge);
    family.Add("", value);
    std::string ours;
    family.AppendTo(ours);
    MetricFamily theirs{"x", "", MetricType::Gauge, {}};
    theirs.metric.emplace_back().gauge.value = value;
    EXPECT_EQ(ours, prometheus::TextSerializer().Serialize({theirs})) << value;
  }
}

}  // namespace
}  // namespace bench

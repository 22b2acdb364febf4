// Prometheus's text exposition format (0.0.4) written straight into strings, byte for
// byte as prometheus-cpp 1.0's TextSerializer writes it (metrics_exporter_test checks it
// against that serializer): a family's "# HELP" line (none for an empty help) and
// "# TYPE" line, then one line per series, `name{label="value",...} value`; values as
// "%.16g" ("Nan", "+Inf", "-Inf"); label values escaped (\\, \", \n).
//
// Why not prometheus-cpp's structures: /metrics over 8,192 GPUs has about 90,000 series;
// a ClientMetric per series with its labels copied, then an std::ostream writing label
// values a character at a time, cost most of a scrape (docs/PERFORMANCE.md, "/metrics
// over 8,192 GPUs"). Here a series is one append of its labels' text, made once and
// shared by the families that carry the same labels. Not thread-safe; plain data.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace bench {

using ExpositionLabel = std::pair<std::string_view, std::string_view>;

// `name="value"` pairs joined by commas, values escaped: what goes between a series' braces.
std::string LabelText(std::initializer_list<ExpositionLabel> labels);
// Appends `,name="value"` (or `name="value"` to an empty text).
void AppendLabel(std::string& text, std::string_view name, std::string_view value);

// One family: its header, then its series in the order they are added.
class ExpositionFamily {
 public:
  enum class Type { kCounter, kGauge, kHistogram };
  ExpositionFamily(std::string_view name, std::string_view help, Type type);

  // A counter's or gauge's series; `labels` as LabelText makes them ("" for none).
  void Add(std::string_view labels, double value);
  void Add(std::initializer_list<ExpositionLabel> labels, double value) {
    Add(LabelText(labels), value);
  }
  // A histogram's series: _count, _sum, then a _bucket per bound with its cumulative
  // count (`le` added to `labels`) and le="+Inf" with the count.
  void AddHistogram(std::string_view labels, uint64_t count, double sum,
                    const std::pair<double, uint64_t>* buckets, size_t bucket_count);

  // Appends the family's text to `out`.
  void AppendTo(std::string& out) const;
  size_t size() const { return text_.size(); }

 private:
  void Line(std::string_view suffix, std::string_view labels, std::string_view extra_label,
            std::string_view value);

  std::string name_;
  std::string text_;
};

// `value` as prometheus-cpp writes a double: %.16g, "Nan", "+Inf", "-Inf".
void AppendValue(std::string& out, double value);

}  // namespace bench

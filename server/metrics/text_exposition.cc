#include "server/metrics/text_exposition.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bench {
namespace {

void AppendEscaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

std::string_view TypeText(ExpositionFamily::Type type) {
  switch (type) {
    case ExpositionFamily::Type::kCounter: return "counter";
    case ExpositionFamily::Type::kGauge: return "gauge";
    case ExpositionFamily::Type::kHistogram: return "histogram";
  }
  return "untyped";
}

// `value` as text in `buffer`.
std::string_view ValueText(double value, char (&buffer)[32]) {
  if (std::isnan(value)) return "Nan";
  if (std::isinf(value)) return value < 0 ? "-Inf" : "+Inf";
  const int n = absl::SNPrintF(buffer, sizeof(buffer), "%.16g", value);  // any locale
  return std::string_view(buffer, static_cast<size_t>(n));
}

}  // namespace

void AppendValue(std::string& out, double value) {
  char buffer[32];
  out.append(ValueText(value, buffer));
}

void AppendLabel(std::string& text, std::string_view name, std::string_view value) {
  if (!text.empty()) text += ',';
  text.append(name);
  text += "=\"";
  AppendEscaped(text, value);
  text += '"';
}

std::string LabelText(std::initializer_list<ExpositionLabel> labels) {
  std::string text;
  for (const auto& [name, value] : labels) AppendLabel(text, name, value);
  return text;
}

ExpositionFamily::ExpositionFamily(std::string_view name, std::string_view help, Type type)
    : name_(name) {
  if (!help.empty()) {
    text_ += "# HELP ";
    text_.append(name);
    text_ += ' ';
    text_.append(help);
    text_ += '\n';
  }
  text_ += "# TYPE ";
  text_.append(name);
  text_ += ' ';
  text_.append(TypeText(type));
  text_ += '\n';
}

void ExpositionFamily::Line(std::string_view suffix, std::string_view labels,
                            std::string_view extra_label, std::string_view value) {
  text_.append(name_);
  text_.append(suffix);
  if (!labels.empty() || !extra_label.empty()) {
    text_ += '{';
    text_.append(labels);
    if (!labels.empty() && !extra_label.empty()) text_ += ',';
    text_.append(extra_label);
    text_ += '}';
  }
  text_ += ' ';
  text_.append(value);
  text_ += '\n';
}

void ExpositionFamily::Add(std::string_view labels, double value) {
  char buffer[32];
  Line("", labels, "", ValueText(value, buffer));
}

void ExpositionFamily::AddHistogram(std::string_view labels, uint64_t count, double sum,
                                    const std::pair<double, uint64_t>* buckets,
                                    size_t bucket_count) {
  Line("_count", labels, "", absl::StrCat(count));
  char buffer[32];
  Line("_sum", labels, "", ValueText(sum, buffer));
  for (size_t i = 0; i < bucket_count; ++i) {
    std::string bound;
    AppendLabel(bound, "le", ValueText(buckets[i].first, buffer));
    Line("_bucket", labels, bound, absl::StrCat(buckets[i].second));
  }
  Line("_bucket", labels, "le=\"+Inf\"", absl::StrCat(count));
}

void ExpositionFamily::AppendTo(std::string& out) const { out.append(text_); }

}  // namespace bench

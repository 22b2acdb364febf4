// End-to-end: runs the built bench-train binary (BENCH_TRAIN_BINARY) as a real
// process and checks its stdout against docs/trainer-events.md.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "worker/train/test_ports.h"
#ifdef BENCH_WITH_JPEG
#include "worker/train/test_jpeg.h"
#endif

namespace {

// A JSON value, enough to check the event stream: kind plus the top-level
// members of an object (values kept as their raw text) or a string's content.
struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kObject, kArray } kind = kNull;
  std::string text;                           // raw text (strings: unescaped content)
  std::map<std::string, JsonValue> members;   // objects
};

// A strict little JSON parser (RFC 8259 grammar; \u escapes are validated and
// kept verbatim). Returns false on any syntax error or trailing garbage.
class JsonParser {
 public:
  static bool Parse(const std::string& text, JsonValue* out) {
    JsonParser parser(text);
    parser.SkipSpace();
    if (!parser.Value(out)) return false;
    parser.SkipSpace();
    return parser.pos_ == text.size();
  }

 private:
  explicit JsonParser(const std::string& text) : s_(text) {}

  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool Value(JsonValue* v) {
    if (pos_ >= s_.size()) return false;
    const size_t begin = pos_;
    const char c = s_[pos_];
    bool ok = false;
    if (c == '{') {
      v->kind = JsonValue::kObject, ok = Object(v);
    } else if (c == '[') {
      v->kind = JsonValue::kArray, ok = Array();
    } else if (c == '"') {
      v->kind = JsonValue::kString;
      return String(&v->text);
    } else if (c == 't' || c == 'f') {
      v->kind = JsonValue::kBool, ok = Literal(c == 't' ? "true" : "false");
    } else if (c == 'n') {
      v->kind = JsonValue::kNull, ok = Literal("null");
    } else {
      v->kind = JsonValue::kNumber, ok = Number();
    }
    if (ok) v->text = s_.substr(begin, pos_ - begin);
    return ok;
  }
  bool Object(JsonValue* v) {
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"' || !String(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
      SkipSpace();
      JsonValue member;
      if (!Value(&member)) return false;
      if (!v->members.emplace(key, member).second) return false;  // duplicate key
      SkipSpace();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      return s_[pos_++] == '}';
    }
  }
  bool Array() {
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    while (true) {
      SkipSpace();
      JsonValue element;
      if (!Value(&element)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      return s_[pos_++] == ']';
    }
  }
  bool String(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u':
          if (pos_ + 4 > s_.size()) return false;
          for (int i = 0; i < 4; ++i) {
            if (!isxdigit(static_cast<unsigned char>(s_[pos_ + i]))) return false;
          }
          out->append("\\u").append(s_, pos_, 4);
          pos_ += 4;
          break;
        default:
          return false;
      }
    }
    return false;
  }
  bool Digits() {
    const size_t begin = pos_;
    while (pos_ < s_.size() && isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return pos_ > begin;
  }
  bool Number() {
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!Digits()) {
      return false;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!Digits()) return false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!Digits()) return false;
    }
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

struct RunResult {
  int exit_code = -1;
  std::vector<JsonValue> events;
  std::vector<std::string> bad_lines;  // stdout lines that are not JSON objects
};

struct Process {
  FILE* pipe = nullptr;
};

// Starts `env BENCH_TRAIN_BINARY args` with stdout piped back (stderr goes to
// the test's stderr, for the log).
Process Start(const std::string& env, const std::string& args) {
  const std::string command = env + " '" BENCH_TRAIN_BINARY "' " + args;
  return Process{popen(command.c_str(), "r")};
}

RunResult Finish(Process process) {
  RunResult result;
  if (process.pipe == nullptr) return result;
  std::string out;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), process.pipe)) > 0) out.append(buffer, n);
  const int status = pclose(process.pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  size_t begin = 0;
  while (begin < out.size()) {
    size_t end = out.find('\n', begin);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(begin, end - begin);
    JsonValue value;
    if (JsonParser::Parse(line, &value) && value.kind == JsonValue::kObject) {
      result.events.push_back(value);
    } else {
      result.bad_lines.push_back(line);
    }
    begin = end + 1;
  }
  return result;
}

RunResult RunBenchTrain(const std::string& args, const std::string& env = "env -u RANK -u WORLD_SIZE") {
  return Finish(Start(env, args));
}

std::vector<JsonValue> OfKind(const RunResult& result, const std::string& kind) {
  std::vector<JsonValue> out;
  for (const auto& event : result.events) {
    auto it = event.members.find("event");
    if (it != event.members.end() && it->second.text == kind) out.push_back(event);
  }
  return out;
}

// What a run did, for failure messages: its exit code, its events' kinds and any
// error message (so that a failed run says why instead of failing further on).
std::string Describe(const RunResult& result) {
  std::string text = "exit code " + std::to_string(result.exit_code) + ", events:";
  for (const auto& event : result.events) {
    auto kind = event.members.find("event");
    text += " " + (kind == event.members.end() ? std::string("?") : kind->second.text);
    auto message = event.members.find("message");
    if (message != event.members.end()) text += " (" + message->second.text + ")";
  }
  if (!result.bad_lines.empty()) text += "; first non-JSON line: " + result.bad_lines.front();
  return text;
}

void ExpectFields(const JsonValue& event, const std::map<std::string, JsonValue::Kind>& fields) {
  for (const auto& [name, kind] : fields) {
    auto it = event.members.find(name);
    ASSERT_NE(it, event.members.end()) << "missing field " << name;
    if (name == "loss" && it->second.kind == JsonValue::kNull) continue;  // NaN loss
    EXPECT_EQ(it->second.kind, kind) << "field " << name << " = " << it->second.text;
  }
}

double Number(const JsonValue& event, const std::string& name) {
  return std::stod(event.members.at(name).text);
}

// The schema of docs/trainer-events.md: every field each event always has.
const std::map<std::string, JsonValue::Kind> kStartFields = {
    {"event", JsonValue::kString},       {"rank", JsonValue::kNumber},
    {"model", JsonValue::kString},       {"parameters", JsonValue::kNumber},
    {"precision", JsonValue::kString},   {"device", JsonValue::kString},
    {"world_size", JsonValue::kNumber},  {"local_rank", JsonValue::kNumber},
    {"batch_size", JsonValue::kNumber},  {"image_size", JsonValue::kNumber},
    {"iterations", JsonValue::kNumber},  {"warmup_iterations", JsonValue::kNumber},
    {"backend", JsonValue::kString},     {"versions", JsonValue::kObject},
    {"requested_precision", JsonValue::kString}, {"loss_scaling", JsonValue::kBool},
    {"data", JsonValue::kString},        {"dataset_images", JsonValue::kNumber},
    {"dataset_classes", JsonValue::kNumber}, {"loader_threads", JsonValue::kNumber},
    {"channels_last", JsonValue::kBool}, {"cuda_graphs", JsonValue::kBool},
    {"host_memory_cache", JsonValue::kBool},
    {"lr", JsonValue::kNumber},          {"lr_warmup_iterations", JsonValue::kNumber},
    {"momentum", JsonValue::kNumber},    {"weight_decay", JsonValue::kNumber},
    {"bn_weight_decay", JsonValue::kBool}, {"label_smoothing", JsonValue::kNumber},
    {"zero_init_residual", JsonValue::kBool}, {"allreduce_buckets", JsonValue::kNumber},
    {"broadcast_buffers", JsonValue::kBool}, {"model_kind", JsonValue::kString}};
const std::map<std::string, JsonValue::Kind> kIterFields = {
    {"event", JsonValue::kString},       {"rank", JsonValue::kNumber},
    {"iteration", JsonValue::kNumber},   {"step_time_s", JsonValue::kNumber},
    {"images", JsonValue::kNumber},      {"loss", JsonValue::kNumber},
    {"data_time_s", JsonValue::kNumber}, {"elapsed_s", JsonValue::kNumber},
    {"warmup", JsonValue::kBool},        {"compute_time_s", JsonValue::kNumber},
    {"lr", JsonValue::kNumber}};
const std::map<std::string, JsonValue::Kind> kSummaryFields = {
    {"event", JsonValue::kString},
    {"rank", JsonValue::kNumber},
    {"measured_iterations", JsonValue::kNumber},
    {"measured_images", JsonValue::kNumber},
    {"window_s", JsonValue::kNumber},
    {"images_per_second", JsonValue::kNumber},
    {"step_time_median_s", JsonValue::kNumber},
    {"step_time_p50_s", JsonValue::kNumber},
    {"step_time_p90_s", JsonValue::kNumber},
    {"step_time_p99_s", JsonValue::kNumber},
    {"data_time_total_s", JsonValue::kNumber},
    {"compute_time_total_s", JsonValue::kNumber},
    {"compute_images_per_second", JsonValue::kNumber},
    {"skipped_steps", JsonValue::kNumber},
    {"nonfinite_losses", JsonValue::kNumber},
    {"corrupt_files", JsonValue::kNumber},
    {"max_rss_bytes", JsonValue::kNumber}};
// Fields an event may carry (fp16 loss scaling: iter.loss_scale; CUDA:
// summary.peak_memory_bytes; the step split, absent for a replayed CUDA graph).
const std::map<std::string, std::map<std::string, JsonValue::Kind>> kOptionalFields = {
    {"iter",
     {{"loss_scale", JsonValue::kNumber},
      {"forward_backward_time_s", JsonValue::kNumber},
      {"allreduce_wait_time_s", JsonValue::kNumber},
      {"optimizer_time_s", JsonValue::kNumber}}},
    {"summary",
     {{"peak_memory_bytes", JsonValue::kNumber},
      {"forward_backward_time_total_s", JsonValue::kNumber},
      {"allreduce_wait_time_total_s", JsonValue::kNumber},
      {"optimizer_time_total_s", JsonValue::kNumber}}}};

// The step split of a CPU iteration (docs/trainer-events.md): the three fields, each >= 0;
// they cut the compute time (so they sum to it) and with the data wait they make up the
// step but for the instants between the loop's marks; one rank waits for nobody.
void ExpectStepSplit(const JsonValue& it, int world_size) {
  for (const char* field :
       {"forward_backward_time_s", "allreduce_wait_time_s", "optimizer_time_s"}) {
    ASSERT_EQ(it.members.count(field), 1u)
        << "iteration " << it.members.at("iteration").text << " has no " << field;
    EXPECT_GE(Number(it, field), 0) << field;
  }
  const double split = Number(it, "forward_backward_time_s") + Number(it, "allreduce_wait_time_s") +
                       Number(it, "optimizer_time_s");
  EXPECT_NEAR(split, Number(it, "compute_time_s"), 1e-9);
  const double step = Number(it, "step_time_s");
  EXPECT_LE(Number(it, "data_time_s") + split, step + 1e-9);
  EXPECT_GE(Number(it, "data_time_s") + split, 0.5 * step);
  if (world_size == 1) {
    EXPECT_EQ(it.members.at("allreduce_wait_time_s").text, "0");
  }
}

// Every field of `event` is documented: required or optional for its kind.
void ExpectNoUndocumentedFields(const JsonValue& event,
                                const std::map<std::string, JsonValue::Kind>& required) {
  const std::string kind = event.members.at("event").text;
  for (const auto& [name, value] : event.members) {
    if (required.count(name) != 0) continue;
    auto optional = kOptionalFields.find(kind);
    const bool known = optional != kOptionalFields.end() && optional->second.count(name) != 0;
    EXPECT_TRUE(known) << kind << " has undocumented field " << name;
    if (known) {
      EXPECT_EQ(value.kind, optional->second.at(name)) << name;
    }
  }
}

const std::map<std::string, JsonValue::Kind> kErrorFields = {
    {"event", JsonValue::kString}, {"rank", JsonValue::kNumber}, {"message", JsonValue::kString}};

// Checks a successful single rank's stream: start, `iters` iters, summary. Fails
// fatally (wrap it in ASSERT_NO_FATAL_FAILURE) when the stream is not that shape.
void ExpectSuccessfulStream(const RunResult& result, int rank, int world_size, int iters,
                            int warmup, int bs) {
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  EXPECT_TRUE(result.bad_lines.empty()) << "not JSON: " << result.bad_lines.front();
  ASSERT_EQ(result.events.size(), static_cast<size_t>(iters + 2)) << Describe(result);
  ASSERT_EQ(OfKind(result, "start").size(), 1u);
  ASSERT_EQ(OfKind(result, "iter").size(), static_cast<size_t>(iters));
  ASSERT_EQ(OfKind(result, "summary").size(), 1u);
  EXPECT_EQ(result.events.front().members.at("event").text, "start");
  EXPECT_EQ(result.events.back().members.at("event").text, "summary");

  const JsonValue start = OfKind(result, "start")[0];
  ExpectFields(start, kStartFields);
  ExpectNoUndocumentedFields(start, kStartFields);
  EXPECT_EQ(start.members.at("model").text, "resnet50");
  EXPECT_EQ(start.members.at("parameters").text, "25557032");
  EXPECT_EQ(start.members.at("precision").text, "fp32");
  EXPECT_EQ(start.members.at("device").text, "cpu");
  EXPECT_EQ(Number(start, "rank"), rank);
  EXPECT_EQ(Number(start, "world_size"), world_size);
  EXPECT_EQ(start.members.at("backend").text, world_size > 1 ? "gloo" : "none");
  EXPECT_EQ(start.members.at("versions").members.count("torch"), 1u);
  EXPECT_EQ(start.members.at("versions").members.count("bench_train"), 1u);
  EXPECT_EQ(start.members.at("versions").members.count("bench_train_build"), 1u);

  const auto iters_seen = OfKind(result, "iter");
  double last_elapsed = 0;
  for (int i = 0; i < iters; ++i) {
    const JsonValue& it = iters_seen[i];
    ExpectFields(it, kIterFields);
    ExpectNoUndocumentedFields(it, kIterFields);
    EXPECT_EQ(Number(it, "iteration"), i + 1);
    EXPECT_GE(Number(it, "compute_time_s"), 0);
    EXPECT_LE(Number(it, "compute_time_s"), Number(it, "step_time_s") + 1e-9);
    EXPECT_EQ(Number(it, "images"), bs);
    EXPECT_EQ(it.members.at("warmup").text, i < warmup ? "true" : "false");
    EXPECT_GT(Number(it, "step_time_s"), 0);
    EXPECT_GE(Number(it, "elapsed_s"), last_elapsed);
    last_elapsed = Number(it, "elapsed_s");
    EXPECT_NO_FATAL_FAILURE(ExpectStepSplit(it, world_size));
  }

  const JsonValue summary = OfKind(result, "summary")[0];
  ExpectFields(summary, kSummaryFields);
  ExpectNoUndocumentedFields(summary, kSummaryFields);
  EXPECT_LE(Number(summary, "step_time_p50_s"), Number(summary, "step_time_p90_s"));
  EXPECT_LE(Number(summary, "step_time_p90_s"), Number(summary, "step_time_p99_s"));
  EXPECT_EQ(Number(summary, "step_time_p50_s"), Number(summary, "step_time_median_s"));
  EXPECT_GT(Number(summary, "compute_images_per_second"), 0);
  EXPECT_GT(Number(summary, "max_rss_bytes"), 0);
  EXPECT_EQ(Number(summary, "measured_iterations"), iters - warmup);
  EXPECT_EQ(Number(summary, "measured_images"), (iters - warmup) * bs);
  EXPECT_GT(Number(summary, "window_s"), 0);
  EXPECT_NEAR(Number(summary, "images_per_second"),
              Number(summary, "measured_images") / Number(summary, "window_s"), 1e-6);
  double fb_total = 0;
  for (int i = warmup; i < iters; ++i) fb_total += Number(iters_seen[i], "forward_backward_time_s");
  ASSERT_EQ(summary.members.count("forward_backward_time_total_s"), 1u);
  EXPECT_NEAR(Number(summary, "forward_backward_time_total_s"), fb_total, 1e-6);
  EXPECT_EQ(summary.members.count("allreduce_wait_time_total_s"), 1u);
  EXPECT_EQ(summary.members.count("optimizer_time_total_s"), 1u);
}

// The one error event of a failed run.
JsonValue ExpectOneError(const RunResult& result) {
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(result.bad_lines.empty()) << "not JSON: " << result.bad_lines.front();
  const auto errors = OfKind(result, "error");
  EXPECT_EQ(errors.size(), 1u) << Describe(result);
  if (errors.empty()) {
    JsonValue none;  // an empty message: the caller's checks on it fail, nothing crashes
    none.members["message"] = JsonValue();
    none.members["rank"].text = "-1";
    return none;
  }
  ExpectFields(errors[0], kErrorFields);
  EXPECT_EQ(result.events.back().members.at("event").text, "error");
  return errors[0];
}

TEST(JsonParserTest, AcceptsAndRejects) {
  JsonValue v;
  EXPECT_TRUE(JsonParser::Parse(R"({"a":[1,-2.5e3,true,null],"b":{"c":"\n\u00e9"}})", &v));
  EXPECT_EQ(v.members.at("b").members.at("c").text, "\n\\u00e9");
  for (const char* bad : {"", "{", R"({"a":1,})", R"({"a":01})", R"({"a":1}x)", "{'a':1}",
                          R"({"a":"x
"})", R"({"a":1,"a":2})", R"({"a":NaN})"}) {
    EXPECT_FALSE(JsonParser::Parse(bad, &v)) << bad;
  }
}

TEST(BenchTrainE2eTest, SmallRunEmitsStartItersSummary) {
  const RunResult result =
      RunBenchTrain("--model resnet50 --image-size 32 --bs 2 --iters 3 --warmup 1 --threads 1");
  ASSERT_NO_FATAL_FAILURE(ExpectSuccessfulStream(result, /*rank=*/0, /*world_size=*/1,
                                                 /*iters=*/3, /*warmup=*/1, /*bs=*/2));
}

// The detection model at its defaults (300x300, 81 classes), as a user would run it.
TEST(BenchTrainE2eTest, SsdResNet34RunsOnSyntheticDetectionData) {
  const RunResult result =
      RunBenchTrain("--model ssd_resnet34 --iters 3 --warmup 1 --bs 2 --threads 1");
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  ASSERT_EQ(result.events.size(), 5u) << Describe(result);
  const auto start = OfKind(result, "start");
  ASSERT_EQ(start.size(), 1u) << Describe(result);
  ExpectFields(start[0], kStartFields);
  ExpectNoUndocumentedFields(start[0], kStartFields);
  EXPECT_EQ(start[0].members.at("model").text, "ssd_resnet34");
  EXPECT_EQ(start[0].members.at("model_kind").text, "detection");
  EXPECT_EQ(start[0].members.at("parameters").text, "19972534");
  EXPECT_EQ(Number(start[0], "image_size"), 300);
  EXPECT_EQ(Number(start[0], "label_smoothing"), 0);
  for (const JsonValue& it : OfKind(result, "iter")) {
    ASSERT_EQ(it.members.at("loss").kind, JsonValue::kNumber) << Describe(result);
    EXPECT_GT(Number(it, "loss"), 0);
    EXPECT_EQ(Number(it, "images"), 2);
  }
  const auto summary = OfKind(result, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(Number(summary[0], "measured_images"), 4);
  EXPECT_EQ(Number(summary[0], "nonfinite_losses"), 0);
  EXPECT_NEAR(Number(summary[0], "images_per_second"),
              Number(summary[0], "measured_images") / Number(summary[0], "window_s"), 1e-6);

  const RunResult amp =
      RunBenchTrain("--model ssd_resnet34 --iters 2 --warmup 1 --bs 1 --precision amp");
  ASSERT_EQ(amp.exit_code, 0) << Describe(amp);
  ASSERT_EQ(OfKind(amp, "start").size(), 1u) << Describe(amp);
  EXPECT_EQ(OfKind(amp, "start")[0].members.at("precision").text, "amp_bf16");
  for (const JsonValue& it : OfKind(amp, "iter")) {
    EXPECT_EQ(it.members.at("loss").kind, JsonValue::kNumber) << Describe(amp);
  }

  const RunResult wrong_size = RunBenchTrain("--model ssd_resnet34 --image-size 224 --iters 2");
  EXPECT_EQ(wrong_size.exit_code, 2);
  EXPECT_NE(ExpectOneError(wrong_size).members.at("message").text.find("--image-size must be 300"),
            std::string::npos);
}

TEST(BenchTrainE2eTest, NoWarmupAndAmp) {
  const RunResult result = RunBenchTrain("--image-size 32 --bs 2 --iters 2 --warmup 0 --precision amp");
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  const auto start = OfKind(result, "start");
  ASSERT_EQ(start.size(), 1u) << Describe(result);
  ASSERT_EQ(OfKind(result, "iter").size(), 2u) << Describe(result);
  EXPECT_EQ(start[0].members.at("precision").text, "amp_bf16");
  EXPECT_EQ(start[0].members.at("requested_precision").text, "amp");
  EXPECT_EQ(start[0].members.at("loss_scaling").text, "false");
  EXPECT_EQ(start[0].members.at("host_memory_cache").text, "true");  // on for the CPU by default
  EXPECT_EQ(start[0].members.at("broadcast_buffers").text, "false");  // one rank: nothing to sync
  // No loss scaling on the CPU: no loss_scale in iter events.
  EXPECT_EQ(OfKind(result, "iter")[0].members.count("loss_scale"), 0u);
  const auto summary = OfKind(result, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(Number(summary[0], "measured_iterations"), 2);
  EXPECT_EQ(Number(summary[0], "measured_images"), 4);
  // The window starts at the beginning of iteration 1: it spans both steps.
  EXPECT_NEAR(Number(summary[0], "window_s"),
              Number(OfKind(result, "iter")[1], "elapsed_s"), 0.05);
}

TEST(BenchTrainE2eTest, Bf16IsBf16AutocastAndTf32IsAClearErrorOnTheCpu) {
  const RunResult bf16 = RunBenchTrain(
      "--model resnet18 --image-size 32 --bs 2 --iters 2 --warmup 1 --precision bf16");
  ASSERT_EQ(bf16.exit_code, 0) << Describe(bf16);
  ASSERT_EQ(OfKind(bf16, "start").size(), 1u) << Describe(bf16);
  EXPECT_EQ(OfKind(bf16, "start")[0].members.at("precision").text, "amp_bf16");
  EXPECT_EQ(OfKind(bf16, "start")[0].members.at("requested_precision").text, "bf16");
  const RunResult tf32 = RunBenchTrain("--image-size 32 --bs 2 --iters 2 --warmup 1 --precision tf32");
  EXPECT_EQ(tf32.exit_code, 2);
  const JsonValue error = ExpectOneError(tf32);
  EXPECT_NE(error.members.at("message").text.find("tf32 needs a CUDA device"), std::string::npos)
      << error.members.at("message").text;
  EXPECT_TRUE(OfKind(tf32, "start").empty());
}

TEST(BenchTrainE2eTest, RecipeFlagsAreReportedInTheStartEvent) {
  const RunResult result = RunBenchTrain(
      "--model resnet18 --image-size 32 --bs 2 --iters 3 --warmup 1 --lr 0.5 --lr-warmup-iters 2 "
      "--momentum 0.9 --weight-decay 1e-4 --bn-weight-decay --label-smoothing 0 "
      "--zero-init-residual --channels-last --cuda-graphs off --host-memory-cache off "
      "--no-broadcast-buffers");
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  ASSERT_EQ(OfKind(result, "start").size(), 1u) << Describe(result);
  const JsonValue start = OfKind(result, "start")[0];
  EXPECT_EQ(Number(start, "lr"), 0.5);
  EXPECT_EQ(Number(start, "lr_warmup_iterations"), 2);
  EXPECT_EQ(Number(start, "momentum"), 0.9);
  EXPECT_EQ(Number(start, "weight_decay"), 1e-4);
  EXPECT_EQ(start.members.at("bn_weight_decay").text, "true");
  EXPECT_EQ(Number(start, "label_smoothing"), 0);
  EXPECT_EQ(start.members.at("zero_init_residual").text, "true");
  EXPECT_EQ(start.members.at("channels_last").text, "true");
  EXPECT_EQ(start.members.at("cuda_graphs").text, "false");
  EXPECT_EQ(start.members.at("host_memory_cache").text, "false");
  const auto iters = OfKind(result, "iter");
  ASSERT_EQ(iters.size(), 3u);
  EXPECT_NEAR(Number(iters[0], "lr"), 0.25, 1e-6);  // warm-up: 0.5 x 1/2
  EXPECT_NEAR(Number(iters[1], "lr"), 0.5, 1e-6);
  EXPECT_NEAR(Number(iters[2], "lr"), 0.5, 1e-6);  // cosine starts at the peak
}

#ifdef BENCH_WITH_JPEG
// A greyish width x height JPEG (each row's bytes `level` + 0..6), libjpeg's default quality.
void WriteJpeg(const std::string& path, int width, int height, uint8_t level) {
  bench_train::TestJpeg image{width, height, 3, 75, [level](int x, int, int c) {
                                return static_cast<uint8_t>(level + (x * 3 + c) % 7);
                              }};
  ASSERT_TRUE(bench_train::WriteTestJpeg(path, image)) << path;
}

TEST(BenchTrainE2eTest, ImageFolderRunCountsAndSkipsACorruptFile) {
  char pattern[] = "/tmp/bench_train_e2e_XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  for (const char* name : {"n01", "n02", "n03"}) ::mkdir((root + "/" + name).c_str(), 0755);
  WriteJpeg(root + "/n01/a.jpg", 80, 60, 40);
  WriteJpeg(root + "/n01/b.jpg", 50, 70, 90);
  WriteJpeg(root + "/n02/a.jpg", 64, 64, 140);
  WriteJpeg(root + "/n03/a.jpg", 120, 90, 200);
  WriteJpeg(root + "/n03/b.jpg", 40, 40, 10);
  std::ofstream(root + "/n02/broken.jpg") << "this is not a JPEG";
  // 3 steps of 4 images = 12 samples: the first epoch of 6 files meets every file.
  const RunResult result = RunBenchTrain(
      "--model resnet18 --image-size 32 --bs 4 --iters 3 --warmup 1 --num-classes 3 "
      "--loader-threads 2 --data imagefolder:" + root);
  std::system(("rm -rf '" + root + "'").c_str());
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  ASSERT_EQ(OfKind(result, "start").size(), 1u) << Describe(result);
  ASSERT_EQ(OfKind(result, "summary").size(), 1u) << Describe(result);
  const JsonValue start = OfKind(result, "start")[0];
  EXPECT_EQ(start.members.at("data").text, "imagefolder");
  EXPECT_EQ(Number(start, "dataset_images"), 6);
  EXPECT_EQ(Number(start, "dataset_classes"), 3);
  EXPECT_EQ(Number(start, "loader_threads"), 2);
  const auto iters = OfKind(result, "iter");
  ASSERT_EQ(iters.size(), 3u);
  for (const auto& it : iters) EXPECT_GE(Number(it, "data_time_s"), 0);
  const JsonValue summary = OfKind(result, "summary")[0];
  EXPECT_EQ(Number(summary, "corrupt_files"), 1);
}

TEST(BenchTrainE2eTest, DataVsComputeRunsAgainOnSyntheticDataAndGivesTheRatio) {
  char pattern[] = "/tmp/bench_train_e2e_XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  for (const char* name : {"n01", "n02"}) ::mkdir((root + "/" + name).c_str(), 0755);
  WriteJpeg(root + "/n01/a.jpg", 80, 60, 40);
  WriteJpeg(root + "/n02/a.jpg", 64, 64, 140);
  const RunResult result = RunBenchTrain(
      "--model resnet18 --image-size 32 --bs 2 --iters 4 --warmup 1 --num-classes 2 "
      "--loader-threads 1 --data-vs-compute --data imagefolder:" + root);
  std::system(("rm -rf '" + root + "'").c_str());
  ASSERT_EQ(result.exit_code, 0) << Describe(result);
  // One start, the real run's iterations only, one summary with both figures.
  ASSERT_EQ(OfKind(result, "start").size(), 1u) << Describe(result);
  EXPECT_EQ(OfKind(result, "start")[0].members.at("data").text, "imagefolder");
  EXPECT_EQ(OfKind(result, "iter").size(), 4u);
  ASSERT_EQ(OfKind(result, "summary").size(), 1u) << Describe(result);
  const JsonValue summary = OfKind(result, "summary")[0];
  const double real = Number(summary, "images_per_second");
  const double synthetic = Number(summary, "synthetic_images_per_second");
  EXPECT_GT(real, 0);
  EXPECT_GT(synthetic, 0);
  EXPECT_NEAR(Number(summary, "data_vs_compute"), real / synthetic, 1e-6 * real / synthetic);
}

#endif  // BENCH_WITH_JPEG

TEST(BenchTrainE2eTest, DataVsComputeOnSyntheticDataIsRefusedNamingTheFlag) {
  const RunResult result = RunBenchTrain("--image-size 32 --bs 2 --iters 2 --data-vs-compute");
  EXPECT_EQ(result.exit_code, 2);
  const JsonValue error = ExpectOneError(result);
  EXPECT_NE(error.members.at("message").text.find("--data-vs-compute"), std::string::npos);
}

TEST(BenchTrainE2eTest, MissingDataFolderIsAnErrorBeforeTraining) {
  const RunResult result = RunBenchTrain(
      "--image-size 32 --bs 2 --iters 2 --warmup 1 --data-dir /nonexistent/imagenet/train");
  EXPECT_EQ(result.exit_code, 2);
  const JsonValue error = ExpectOneError(result);
  EXPECT_NE(error.members.at("message").text.find("/nonexistent/imagenet/train"),
            std::string::npos);
  EXPECT_TRUE(OfKind(result, "start").empty());
}

TEST(BenchTrainE2eTest, BadBatchSizeIsAnErrorNamingTheFlag) {
  const RunResult result = RunBenchTrain("--bs 0");
  EXPECT_EQ(result.exit_code, 2);
  const JsonValue error = ExpectOneError(result);
  EXPECT_NE(error.members.at("message").text.find("bs"), std::string::npos);
  EXPECT_TRUE(OfKind(result, "start").empty());
}

TEST(BenchTrainE2eTest, BadFlagsAndNamesExitWithUsageError) {
  for (const char* args : {"--model vgg16", "--precision fp16", "--data imagenet", "--precision fp8",
                           "--cuda-graphs maybe", "--host-memory-cache yes", "--lr x",
                           "--label-smoothing 1", "--image-size 16", "--warmup 5 --iters 5",
                           "--bs two", "--nope 1"}) {
    const RunResult result = RunBenchTrain(args);
    EXPECT_EQ(result.exit_code, 2) << args;
    ExpectOneError(result);
  }
}

TEST(BenchTrainE2eTest, CudaDeviceWithoutCudaBuildIsAClearError) {
#ifdef BENCH_WITH_CUDA
  GTEST_SKIP() << "this bench-train has CUDA";
#else
  const RunResult result = RunBenchTrain("--device cuda --image-size 32 --bs 2 --iters 2 --warmup 1");
  const JsonValue error = ExpectOneError(result);
  EXPECT_NE(error.members.at("message").text.find("built without CUDA"), std::string::npos)
      << error.members.at("message").text;
#endif
}

TEST(BenchTrainE2eTest, TwoRanksOverGlooLikeTorchrun) {
  const std::string port = std::to_string(bench_train::PickFreeLoopbackPort());
  const std::string common =
      "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " OMP_NUM_THREADS=1 ";
  const std::string args = "--image-size 32 --bs 2 --iters 3 --warmup 1 --rendezvous-timeout-s 60";
  Process rank0 = Start("env RANK=0 LOCAL_RANK=0 " + common, args);
  Process rank1 = Start("env RANK=1 LOCAL_RANK=1 " + common, args);
  const RunResult result1 = Finish(rank1);
  const RunResult result0 = Finish(rank0);
  // Both checked before either can end the test.
  EXPECT_NO_FATAL_FAILURE(ExpectSuccessfulStream(result0, 0, 2, 3, 1, 2)) << "rank 0";
  EXPECT_NO_FATAL_FAILURE(ExpectSuccessfulStream(result1, 1, 2, 3, 1, 2)) << "rank 1";
  for (const RunResult* result : {&result0, &result1}) {
    const auto start = OfKind(*result, "start");
    ASSERT_EQ(start.size(), 1u) << Describe(*result);
    EXPECT_EQ(start[0].members.at("broadcast_buffers").text, "true");
  }
}

// Fault injection (--fault-scenario, docs/trainer-events.md): this rank's rules of the
// file slow the planted iterations and no other, and the run is otherwise a normal one
// (every event, the split summing to the compute time). The data stall is a sleep inside
// the data wait, so data_time_s >= the stall under any load; extra compute is inside
// forward_backward_time_s (its arithmetic is HostClockTest's, on a fake clock).
TEST(BenchTrainE2eTest, FaultScenarioStallsAndSlowsOnlyThisRanksPlantedIterations) {
  char pattern[] = "/tmp/bench_train_e2e_XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  const std::string scenario = root + "/scenario.txt";
  std::ofstream(scenario) << "benchfleet-scenario 1\n"
                             "# rank 0 is this process (no RANK)\n"
                             "rank rank=0 iterations=3-4 extra_compute=50%\n"
                             "rank rank=0 iterations=2 data_stall_s=0.3\n"
                             "rank rank=1 iterations=* data_stall_s=30\n"  // not this rank
                             "gpu node=* gpu=* throttle=hw_thermal\n";     // the fake NVML's
  const RunResult result = RunBenchTrain(
      "--image-size 32 --bs 2 --iters 5 --warmup 1 --threads 1 --fault-scenario " + scenario);
  std::system(("rm -rf '" + root + "'").c_str());
  ASSERT_NO_FATAL_FAILURE(ExpectSuccessfulStream(result, 0, 1, 5, 1, 2));
  const auto iters = OfKind(result, "iter");
  EXPECT_GE(Number(iters[1], "data_time_s"), 0.3);
  for (int i : {0, 2, 3, 4}) {
    EXPECT_LT(Number(iters[i], "data_time_s"), 30) << "iteration " << i + 1;
  }
}

TEST(BenchTrainE2eTest, ABadFaultScenarioIsAnErrorNamingTheFileAndLine) {
  char pattern[] = "/tmp/bench_train_e2e_XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  const std::string scenario = root + "/bad.txt";
  std::ofstream(scenario) << "benchfleet-scenario 1\n"
                             "rank rank=0 iterations=2 extra_compute=lots\n";
  const RunResult bad =
      RunBenchTrain("--image-size 32 --bs 2 --iters 2 --warmup 1 --fault-scenario " + scenario);
  const RunResult missing = RunBenchTrain(
      "--image-size 32 --bs 2 --iters 2 --warmup 1 --fault-scenario " + root + "/none.txt");
  std::system(("rm -rf '" + root + "'").c_str());
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);
  const std::string message = ExpectOneError(bad).members.at("message").text;
  EXPECT_NE(message.find(scenario + ": line 2"), std::string::npos) << message;
  EXPECT_NE(message.find("--fault-scenario"), std::string::npos) << message;
  EXPECT_TRUE(OfKind(bad, "start").empty());
  EXPECT_EQ(missing.exit_code, 2) << Describe(missing);
  const std::string unread = ExpectOneError(missing).members.at("message").text;
  EXPECT_NE(unread.find(root + "/none.txt: cannot read"), std::string::npos) << unread;
}

// Rank 1 with nobody serving the store: it must try to reach the store until it times
// out, then fail with an error that says so (not any early error, such as a libtorch
// that cannot start a store at all, which fails at once).
TEST(BenchTrainE2eTest, MissingPeerIsAnErrorNotAHang) {
  const std::string port = std::to_string(bench_train::PickFreeLoopbackPort());
  const auto start = std::chrono::steady_clock::now();
  const RunResult result =
      RunBenchTrain("--image-size 32 --bs 2 --iters 2 --warmup 1 --rendezvous-timeout-s 2",
          "env RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.exit_code, 1) << Describe(result);
  const JsonValue error = ExpectOneError(result);
  EXPECT_EQ(error.members.at("rank").text, "1");
  const std::string& message = error.members.at("message").text;
  EXPECT_NE(message.find("rendezvous at 127.0.0.1:" + port + " (rank 1 of 2, timeout 2 s)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("timed out"), std::string::npos) << message;  // libtorch's own words
  EXPECT_EQ(message.find("libuv"), std::string::npos) << message;
  // libtorch 1.13's client gives up after about half the timeout, 2.x after all of it;
  // an error that is not a timeout comes at once.
  EXPECT_GE(waited, 1.0) << "gave up without waiting for the store: " << message;
  EXPECT_LT(waited, 60.0);
  EXPECT_TRUE(OfKind(result, "start").empty());
}

// A process that reads bench-train's stdout line by line while it runs.
struct LiveProcess {
  pid_t pid = -1;
  FILE* out = nullptr;
};

LiveProcess Spawn(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::unsetenv("RANK");
    ::unsetenv("WORLD_SIZE");
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(BENCH_TRAIN_BINARY));
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(BENCH_TRAIN_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  return LiveProcess{pid, ::fdopen(pipe_fds[0], "r")};
}

// A fatal signal inside bench-train (here sent from outside, as a crash in libtorch
// would raise it) ends the rank with an error event naming it, and exit status 1.
TEST(BenchTrainE2eTest, FatalSignalBecomesAnErrorEvent) {
  LiveProcess process = Spawn({"--model", "resnet18", "--image-size", "32", "--bs", "2",
                               "--iters", "100000", "--warmup", "1", "--threads", "1"});
  ASSERT_GT(process.pid, 0);
  ASSERT_NE(process.out, nullptr);
  RunResult result;
  std::string line;
  bool killed = false;
  int c = 0;
  while ((c = std::fgetc(process.out)) != EOF) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    JsonValue value;
    if (JsonParser::Parse(line, &value) && value.kind == JsonValue::kObject) {
      result.events.push_back(value);
      if (!killed && value.members.count("event") != 0 && value.members["event"].text == "iter") {
        ::kill(process.pid, SIGSEGV);  // once training runs
        killed = true;
      }
    } else {
      result.bad_lines.push_back(line);
    }
    line.clear();
  }
  std::fclose(process.out);
  int status = 0;
  ::waitpid(process.pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  ASSERT_TRUE(killed) << Describe(result);
  EXPECT_EQ(result.exit_code, 1) << Describe(result);
  const JsonValue error = ExpectOneError(result);
  const std::string& message = error.members.at("message").text;
  EXPECT_NE(message.find("bench-train rank 0 died of SIGSEGV (invalid memory access, sent by "
                         "process "),
            std::string::npos)
      << message;
  EXPECT_EQ(OfKind(result, "start").size(), 1u) << Describe(result);
}

}  // namespace

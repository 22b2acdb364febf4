// RunMeasured on the CPU with a scripted CUDA-graph capture and two data sources of
// different shapes, as on a GPU with --data-vs-compute: the real data's uint8 NHWC batch,
// then the synthetic float NCHW one. Each run must get its own runner, whose capture records
// its own run's batch, and the first runner must be gone before the second is made.
#include "worker/train/measured_runs.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "worker/train/captured_events.h"

namespace bench_train {
namespace {

using Log = std::vector<std::string>;

std::string Shape(const at::Tensor& tensor) {
  std::ostringstream out;
  out << tensor.scalar_type() << " " << tensor.sizes();
  return out.str();
}

// The same tensors every step, as both real sources hand out on a GPU.
class FixedBatch : public DataSource {
 public:
  explicit FixedBatch(at::Tensor images)
      : images_(std::move(images)), labels_(at::zeros({images_.size(0)}, at::kLong)) {}
  StatusOr<DeviceBatch> Next() override {
    return DeviceBatch{next_++, images_, labels_, at::Tensor()};
  }

 private:
  int64_t next_ = 0;
  at::Tensor images_;
  at::Tensor labels_;
};

// A CUDA graph's meaning on the CPU: Capture runs the step's host code once (as a capture
// does, recording instead of running its kernels) and notes the batch it saw; each replay
// runs the step on those same tensors.
class RecordingCapture : public StepCapture {
 public:
  RecordingCapture(Log& log, int id, const std::string& last_images)
      : log_(log), id_(id), last_images_(last_images) {}
  ~RecordingCapture() override { log_.push_back("release capture " + std::to_string(id_)); }
  at::Tensor Capture(const std::function<at::Tensor()>& step) override {
    step_ = step;
    outputs_ = step_();
    log_.push_back("capture " + std::to_string(id_) + ": " + last_images_);
    return outputs_;
  }
  void Replay() override { outputs_.copy_(step_()); }
  void Abandon() override { log_.push_back("abandon " + std::to_string(id_)); }

 private:
  Log& log_;
  int id_;
  const std::string& last_images_;
  std::function<at::Tensor()> step_;
  at::Tensor outputs_;
};

struct Fixture {
  Log log;
  std::string last_images;  // the batch the step last ran on
  int runners = 0;
  std::vector<TrainOptions> synthetic_opened;
  CapturedEvents events;

  StepFunction Step() {
    return [this](const at::Tensor& images, const at::Tensor&, const at::Tensor&) {
      last_images = Shape(images);
      log.push_back("step " + last_images);
      return PackStepOutputs(at::scalar_tensor(2.0, at::kFloat), at::scalar_tensor(0.1, at::kFloat),
                             at::Tensor());
    };
  }
  RunnerFactory GraphRunners() {
    return [this]() -> std::unique_ptr<StepRunner> {
      ++runners;
      log.push_back("make runner " + std::to_string(runners));
      return MakeGraphRunner(Step(), std::make_unique<RecordingCapture>(log, runners, last_images),
                             /*eager_steps=*/2);
    };
  }
  DataOpener SyntheticOpener() {
    return [this](const TrainOptions& options) -> StatusOr<std::unique_ptr<DataSource>> {
      synthetic_opened.push_back(options);
      return std::unique_ptr<DataSource>(new FixedBatch(at::randn({2, 3, 4, 4})));
    };
  }
  StatusOr<SummaryEvent> Run(const TrainOptions& options) {
    FixedBatch real(at::zeros({2, 4, 4, 3}, at::kByte));
    auto clock = MakeHostClock();
    StepReporter reporter(options, events.writer());
    return RunMeasured(
        options, GraphRunners(), real, *clock, reporter,
        [&](const StepRunner& settled) {
          StartEvent start;
          start.cuda_graphs = settled.graphed();
          reporter.WriteStart(start);
        },
        SyntheticOpener(),
        [](const TrainOptions&, const DataSource&, const StepRunner&) { return StartEvent(); });
  }
};

TrainOptions RealDataOptions(bool data_vs_compute) {
  TrainOptions options;
  options.iterations = 5;
  options.warmup_iterations = 3;
  options.batch_size = 2;
  options.data = kDataImageFolder;
  options.data_dir = "/data/train";
  options.data_vs_compute = data_vs_compute;
  return options;
}

const char kRealShape[] = "Byte [2, 4, 4, 3]";
const char kSyntheticShape[] = "Float [2, 3, 4, 4]";

TEST(MeasuredRunsTest, TheSyntheticRunCapturesItsOwnGraphOnItsOwnBatch) {
  Fixture fixture;
  StatusOr<SummaryEvent> summary = InternalError("not run");
  try {
    summary = fixture.Run(RealDataOptions(/*data_vs_compute=*/true));
  } catch (const c10::Error& e) {
    FAIL() << "threw: " << e.what_without_backtrace()
           << "\nlog: " << ::testing::PrintToString(fixture.log);
  } catch (const std::exception& e) {
    FAIL() << "threw: " << e.what() << "\nlog: " << ::testing::PrintToString(fixture.log);
  }
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  const Log& log = fixture.log;

  EXPECT_EQ(fixture.runners, 2);
  std::vector<std::string> captures;
  std::copy_if(log.begin(), log.end(), std::back_inserter(captures),
               [](const std::string& entry) { return entry.rfind("capture ", 0) == 0; });
  EXPECT_EQ(captures, (std::vector<std::string>{std::string("capture 1: ") + kRealShape,
                                                std::string("capture 2: ") + kSyntheticShape}));
  // The first runner (and its capture) is gone before the second is made.
  const auto at = [&](const std::string& entry) {
    return std::find(log.begin(), log.end(), entry) - log.begin();
  };
  EXPECT_LT(at("release capture 1"), at("make runner 2"));
  EXPECT_EQ(std::count(log.begin(), log.end(), "abandon 1"), 0);
  EXPECT_EQ(std::count(log.begin(), log.end(), "abandon 2"), 0);
  // Every step of the first run ran on the real batch, every one of the second on the
  // synthetic one: 6 calls each (2 eager steps, the capture's, a replay for each of
  // iterations 3 to 5).
  const auto second = log.begin() + at("make runner 2");
  EXPECT_EQ(std::count(log.begin(), second, std::string("step ") + kRealShape), 6);
  EXPECT_EQ(std::count(second, log.end(), std::string("step ") + kSyntheticShape), 6);
  EXPECT_EQ(std::count(second, log.end(), std::string("step ") + kRealShape), 0);

  ASSERT_EQ(fixture.synthetic_opened.size(), 1u);
  EXPECT_EQ(fixture.synthetic_opened[0].data, kDataSynthetic);
  EXPECT_EQ(fixture.synthetic_opened[0].data_dir, "");
  ASSERT_TRUE(summary->synthetic_images_per_second.has_value());
  EXPECT_GT(*summary->synthetic_images_per_second, 0);
  ASSERT_TRUE(summary->data_vs_compute.has_value());
  EXPECT_DOUBLE_EQ(*summary->data_vs_compute,
                   summary->images_per_second / *summary->synthetic_images_per_second);
  // Only the real run's events: its start and its 5 iterations.
  const auto lines = fixture.events.Lines();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_TRUE(StartsWith(lines[0], R"({"event":"start")"));
  EXPECT_NE(lines[0].find(R"("cuda_graphs":true)"), std::string::npos) << lines[0];
}

TEST(MeasuredRunsTest, WithoutDataVsComputeOneRunOnTheRealData) {
  Fixture fixture;
  StatusOr<SummaryEvent> summary = fixture.Run(RealDataOptions(/*data_vs_compute=*/false));
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(fixture.runners, 1);
  EXPECT_TRUE(fixture.synthetic_opened.empty());
  EXPECT_FALSE(summary->synthetic_images_per_second.has_value());
  EXPECT_FALSE(summary->data_vs_compute.has_value());
  EXPECT_EQ(fixture.events.Lines().size(), 6u);
}

}  // namespace
}  // namespace bench_train

// The one training loop, driven on the CPU with a scripted clock, data source
// and step: steps read one step late, the warm-up boundary, the measured
// window, the start event after a graph capture (and its fallback, which
// abandons the capture before the next eager step), a diverged loss ending
// the run; the host clock's step split on a fake time source, and fault injection.
#include "worker/train/training_loop.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/fault_scenario.h"
#include "worker/train/captured_events.h"

namespace bench_train {
namespace {

using Log = std::vector<std::string>;

// A clock whose steps take scripted times; everything it sees goes to `log`.
class ScriptedClock : public StepClock {
 public:
  struct ScriptedMarks : Marks {
    int id = 0;
    double start = 0;
    double end = 0;
    std::vector<float> outputs;
  };
  ScriptedClock(Log& log, std::vector<double> step_seconds)
      : log_(log), step_seconds_(std::move(step_seconds)) {}

  std::unique_ptr<Marks> Begin() override {
    auto marks = std::make_unique<ScriptedMarks>();
    marks->id = ++steps_;
    marks->start = now_;
    log_.push_back("begin " + std::to_string(marks->id));
    return marks;
  }
  void ComputeBegins(Marks& marks) override {
    log_.push_back("compute " + std::to_string(static_cast<ScriptedMarks&>(marks).id));
  }
  void End(Marks& marks, const at::Tensor& outputs) override {
    auto& scripted = static_cast<ScriptedMarks&>(marks);
    now_ += step_seconds_.at(scripted.id - 1);
    scripted.end = now_;
    const at::Tensor values = outputs.contiguous();
    scripted.outputs.assign(values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
    log_.push_back("end " + std::to_string(scripted.id));
  }
  StepReading Read(Marks& marks) override {
    auto& scripted = static_cast<ScriptedMarks&>(marks);
    log_.push_back("read " + std::to_string(scripted.id));
    StepReading reading;
    reading.step_time_s = scripted.end - scripted.start;
    reading.compute_time_s = reading.step_time_s;
    reading.elapsed_s = scripted.end;
    reading.outputs = scripted.outputs;
    return reading;
  }
  double Synchronize() override {
    now_ += 100;  // time passing outside any step is outside the window's steps
    log_.push_back("sync");
    return now_;
  }

 private:
  Log& log_;
  std::vector<double> step_seconds_;
  int steps_ = 0;
  double now_ = 0;
};

class NumberedBatches : public DataSource {
 public:
  explicit NumberedBatches(Log& log) : log_(log) {}
  StatusOr<DeviceBatch> Next() override {
    return DeviceBatch{next_++, at::zeros({2, 3}), at::zeros({2}, at::kLong), at::Tensor()};
  }
  void Done(int64_t number) override { log_.push_back("done " + std::to_string(number)); }

 private:
  Log& log_;
  int64_t next_ = 0;
};

// A step whose loss is `losses[k]` at its k-th run, LR 0.1 * k.
StepFunction ScriptedStep(std::vector<double> losses, int* runs) {
  return [losses, runs](const at::Tensor&, const at::Tensor&, const at::Tensor&) {
    const int k = (*runs)++;
    return PackStepOutputs(at::scalar_tensor(losses.at(k), at::kFloat),
                           at::scalar_tensor(0.1 * k, at::kFloat), at::Tensor());
  };
}

// Records the step at capture; each replay runs it (a CUDA graph's meaning).
class FakeCapture : public StepCapture {
 public:
  FakeCapture(Log& log, bool fail) : log_(log), fail_(fail) {}
  at::Tensor Capture(const std::function<at::Tensor()>& step) override {
    log_.push_back("capture");
    if (fail_) throw std::runtime_error("operation not permitted when stream is capturing");
    step_ = step;
    outputs_ = at::zeros({2});
    return outputs_;
  }
  void Replay() override {
    log_.push_back("replay");
    outputs_.copy_(step_());
  }
  void Abandon() override { log_.push_back("abandon"); }

 private:
  Log& log_;
  bool fail_;
  std::function<at::Tensor()> step_;
  at::Tensor outputs_;
};

TrainOptions LoopOptions(int64_t iterations, int64_t warmup) {
  TrainOptions options;
  options.iterations = iterations;
  options.warmup_iterations = warmup;
  options.batch_size = 2;
  return options;
}

struct LoopRun {
  Log log;
  CapturedEvents events;
  StatusOr<double> window = InternalError("not run");
  bool graphed = false;
  std::string fallback_reason;
};

void RunLoop(const TrainOptions& options, StepRunner& runner, const std::vector<double>& seconds,
             LoopRun* run) {
  ScriptedClock clock(run->log, seconds);
  NumberedBatches data(run->log);
  StepReporter reporter(options, run->events.writer());
  run->window =
      RunTrainingLoop(options, runner, data, clock, reporter, [&](const StepRunner& settled) {
        run->log.push_back("start event");
        run->graphed = settled.graphed();
        run->fallback_reason = settled.fallback_reason();
        StartEvent start;
        start.cuda_graphs = settled.graphed();
        start.cuda_graphs_fallback = settled.fallback_reason();
        reporter.WriteStart(start);
      });
}

TEST(TrainingLoopTest, ReadsEachStepOneStepLateAndOpensTheWindowAfterWarmUp) {
  const TrainOptions options = LoopOptions(/*iterations=*/4, /*warmup=*/2);
  int runs = 0;
  auto runner = MakeEagerRunner(ScriptedStep({5, 4, 3, 2}, &runs));
  LoopRun run;
  RunLoop(options, *runner, {1.0, 2.0, 0.25, 0.5}, &run);
  ASSERT_TRUE(run.window.ok()) << run.window.status().message();
  // clang-format off
  const Log expected = {
      "start event", "sync",
      "begin 1", "compute 1", "end 1",
      "begin 2", "compute 2", "end 2", "read 1", "done 0",  // one step late
      "read 2", "done 1", "sync",                           // end of warm-up
      "begin 3", "compute 3", "end 3",
      "begin 4", "compute 4", "end 4", "read 3", "done 2", "read 4", "done 3",
      "sync"};
  // clang-format on
  EXPECT_EQ(run.log, expected);
  // The window: from the synchronize after warm-up to the one after the last
  // step, i.e. steps 3 and 4 plus the final synchronize's scripted 100 s.
  EXPECT_DOUBLE_EQ(*run.window, 0.25 + 0.5 + 100);

  const auto lines = run.events.Lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_TRUE(StartsWith(lines[0], R"({"event":"start")"));
  for (int i = 1; i <= 4; ++i) {
    EXPECT_TRUE(
        StartsWith(lines[i], R"({"event":"iter","rank":0,"iteration":)" + std::to_string(i) + ","))
        << lines[i];
  }
  EXPECT_NE(lines[3].find(R"("step_time_s":0.25,)"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(R"("loss":3,)"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(R"("warmup":false)"), std::string::npos) << lines[3];
  EXPECT_NE(lines[2].find(R"("warmup":true)"), std::string::npos) << lines[2];
}

TEST(TrainingLoopTest, WithoutWarmUpTheWindowStartsBeforeTheFirstStep) {
  int runs = 0;
  auto runner = MakeEagerRunner(ScriptedStep({1, 1}, &runs));
  LoopRun run;
  RunLoop(LoopOptions(2, 0), *runner, {0.5, 0.75}, &run);
  ASSERT_TRUE(run.window.ok());
  EXPECT_DOUBLE_EQ(*run.window, 0.5 + 0.75 + 100);
}

TEST(TrainingLoopTest, GraphRunnerCapturesAfterEagerStepsAndTheStartEventFollows) {
  int runs = 0;
  LoopRun run;
  auto runner = MakeGraphRunner(ScriptedStep({9, 8, 7, 6, 5, 4}, &runs),
                                std::make_unique<FakeCapture>(run.log, /*fail=*/false),
                                /*eager_steps=*/2);
  RunLoop(LoopOptions(5, 3), *runner, {1, 1, 1, 1, 1}, &run);
  ASSERT_TRUE(run.window.ok());
  EXPECT_TRUE(run.graphed);
  EXPECT_EQ(run.fallback_reason, "");
  EXPECT_EQ(runs, 5);  // 2 eager + 3 replays; the capture itself ran nothing
  // The start event comes after the capture; steps 1 and 2 were read before it
  // and their iter events were held.
  const Log& log = run.log;
  const auto at = [&](const std::string& entry) {
    return std::find(log.begin(), log.end(), entry) - log.begin();
  };
  EXPECT_LT(at("read 1"), at("capture"));
  EXPECT_LT(at("capture"), at("start event"));
  EXPECT_EQ(std::count(log.begin(), log.end(), "replay"), 3);
  EXPECT_EQ(std::count(log.begin(), log.end(), "abandon"), 0);
  const auto lines = run.events.Lines();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_TRUE(StartsWith(lines[0], R"({"event":"start")"));
  EXPECT_NE(lines[0].find(R"("cuda_graphs":true)"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find("cuda_graphs_fallback"), std::string::npos) << lines[0];
  EXPECT_NE(lines[5].find(R"("loss":5,)"), std::string::npos) << lines[5];  // replayed step
}

TEST(TrainingLoopTest, AFailedCaptureFallsBackToEagerStepsWithTheReason) {
  int runs = 0;
  LoopRun run;
  auto runner = MakeGraphRunner(ScriptedStep({9, 8, 7, 6, 5}, &runs),
                                std::make_unique<FakeCapture>(run.log, /*fail=*/true),
                                /*eager_steps=*/2);
  RunLoop(LoopOptions(5, 3), *runner, {1, 1, 1, 1, 1}, &run);
  ASSERT_TRUE(run.window.ok()) << run.window.status().message();  // not a failed run
  EXPECT_FALSE(run.graphed);
  EXPECT_EQ(runs,
            5);  // every step ran eagerly, the one after the failed capture too
  EXPECT_EQ(std::count(run.log.begin(), run.log.end(), "replay"), 0);
  EXPECT_NE(run.fallback_reason.find("CUDA graph capture failed, running eagerly: "
                                     "operation not permitted when stream is capturing"),
            std::string::npos)
      << run.fallback_reason;
  const auto lines = run.events.Lines();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[0].find(R"("cuda_graphs":false)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(R"("cuda_graphs_fallback":"CUDA graph capture failed)"),
            std::string::npos)
      << lines[0];
}

// On CUDA the steps before a failed capture ran on the capture's stream and the eager ones
// after it run on another: the capture is abandoned (which waits for the device) once, after
// the failed capture and before the first eager step that follows it, and never again.
TEST(TrainingLoopTest, AFailedCaptureIsAbandonedOnceBeforeTheNextEagerStep) {
  LoopRun run;
  int steps = 0;
  StepFunction logged_step = [&](const at::Tensor&, const at::Tensor&, const at::Tensor&) {
    run.log.push_back("step " + std::to_string(++steps));
    return PackStepOutputs(at::scalar_tensor(1.0, at::kFloat), at::scalar_tensor(0.1, at::kFloat),
                           at::Tensor());
  };
  auto runner = MakeGraphRunner(logged_step, std::make_unique<FakeCapture>(run.log, /*fail=*/true),
                                /*eager_steps=*/2);
  RunLoop(LoopOptions(5, 3), *runner, {1, 1, 1, 1, 1}, &run);
  ASSERT_TRUE(run.window.ok()) << run.window.status().message();
  EXPECT_FALSE(run.graphed);
  const Log& log = run.log;
  EXPECT_EQ(std::count(log.begin(), log.end(), "capture"), 1);
  EXPECT_EQ(std::count(log.begin(), log.end(), "abandon"), 1);
  const auto at = [&](const std::string& entry) {
    return std::find(log.begin(), log.end(), entry) - log.begin();
  };
  EXPECT_LT(at("step 2"), at("capture"));
  // The third iteration: its capture failed, then abandon, then its eager step.
  ASSERT_LT(at("capture") + 2, static_cast<std::ptrdiff_t>(log.size()));
  EXPECT_EQ(log[at("capture") + 1], "abandon");
  EXPECT_EQ(log[at("capture") + 2], "step 3");
  EXPECT_EQ(steps, 5);
}

TEST(TrainingLoopTest, APersistentNonFiniteLossEndsTheRunWithEveryStepReported) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TrainOptions options = LoopOptions(8, 1);
  options.max_nonfinite_iters = 3;
  int runs = 0;
  auto runner = MakeEagerRunner(ScriptedStep({2, 2, nan, nan, nan, nan, nan, nan}, &runs));
  LoopRun run;
  RunLoop(options, *runner, std::vector<double>(8, 1.0), &run);
  ASSERT_FALSE(run.window.ok());
  EXPECT_EQ(run.window.status().message().rfind("loss diverged: ", 0), 0u)
      << run.window.status().message();
  // Iteration 5 is the third non-finite one; it is read once step 6 is
  // enqueued.
  EXPECT_EQ(runs, 6);
  const auto lines = run.events.Lines();
  ASSERT_EQ(lines.size(), 6u);  // start + iterations 1..5
  EXPECT_NE(lines[5].find(R"("iteration":5,)"), std::string::npos) << lines[5];
  EXPECT_NE(lines[5].find(R"("loss":"NaN")"), std::string::npos) << lines[5];
}

}  // namespace
}  // namespace bench_train

namespace bench_train {
namespace {

// A time source the test moves by hand; each call may also advance it by `tick`.
struct FakeTime {
  std::chrono::steady_clock::time_point now{};
  std::chrono::steady_clock::duration tick{};
  int calls = 0;
  HostNow Source() {
    return [this] {
      ++calls;
      const auto t = now;
      now += tick;
      return t;
    };
  }
  // The time the last call returned, in seconds.
  double LastReading() const {
    return std::chrono::duration<double>((now - tick).time_since_epoch()).count();
  }
  void Set(double seconds) {
    now = std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(seconds)));
  }
};

const at::Tensor kOutputs = at::zeros({2});

TEST(HostClockTest, TheMarksCutTheComputeTimeIntoTheSplit) {
  FakeTime time;
  auto clock = MakeHostClock(time.Source());
  time.Set(0);
  auto marks = clock->Begin();
  time.Set(1);
  clock->ComputeBegins(*marks);
  time.Set(1.5);
  clock->Mark(StepPhase::kForwardBackward);  // zeroing gradients
  time.Set(1.75);
  clock->Mark(StepPhase::kRankWait);  // the buffer broadcast
  time.Set(3.5);
  clock->Mark(StepPhase::kForwardBackward);
  time.Set(4);
  clock->Mark(StepPhase::kRankWait);  // the all-reduce
  time.Set(4.5);
  clock->End(*marks, kOutputs);
  time.Set(9);
  clock->Mark(StepPhase::kForwardBackward);  // outside a step: ignored
  const StepReading reading = clock->Read(*marks);
  EXPECT_DOUBLE_EQ(reading.step_time_s, 4.5);
  EXPECT_DOUBLE_EQ(reading.compute_time_s, 3.5);
  ASSERT_TRUE(reading.split.has_value());
  EXPECT_DOUBLE_EQ(reading.split->forward_backward_s, 0.5 + 1.75);
  EXPECT_DOUBLE_EQ(reading.split->allreduce_wait_s, 0.25 + 0.5);
  EXPECT_DOUBLE_EQ(reading.split->optimizer_s, 0.5);
}

TEST(HostClockTest, AStepWithoutMarksHasNoSplit) {
  FakeTime time;
  auto clock = MakeHostClock(time.Source());
  auto marks = clock->Begin();
  clock->ComputeBegins(*marks);
  time.Set(2);
  clock->End(*marks, kOutputs);
  const StepReading reading = clock->Read(*marks);
  EXPECT_DOUBLE_EQ(reading.compute_time_s, 2);
  EXPECT_FALSE(reading.split.has_value());
}

// Fault injection: extra_compute 50 % stretches forward and backward to 1.5 times what
// was measured (each part once, however many marks cut it), inside the forward-backward
// interval; the other phases keep their times.
TEST(HostClockTest, ExtraComputeStretchesForwardAndBackwardByItsFraction) {
  FakeTime time;
  auto clock = MakeHostClock(time.Source());
  time.Set(0);
  auto marks = clock->Begin();
  marks->extra_compute = 0.5;
  time.Set(1);
  clock->ComputeBegins(*marks);
  time.tick = std::chrono::milliseconds(10);  // the busy wait sees time pass
  time.Set(1.5);
  clock->Mark(StepPhase::kForwardBackward);  // 0.5 s measured: busy until 0.75 s
  const double after_first = time.LastReading();
  time.tick = {};
  EXPECT_GE(after_first, 1.75 - 1e-9);
  EXPECT_LE(after_first, 1.75 + 0.0101);
  time.Set(after_first + 0.25);
  clock->Mark(StepPhase::kRankWait);
  time.Set(after_first + 0.25 + 2);
  time.tick = std::chrono::milliseconds(10);
  clock->Mark(StepPhase::kForwardBackward);  // 2 s more measured: 2.5 s in all, 3.75 stretched
  const double after_second = time.LastReading();
  time.tick = {};
  time.Set(after_second + 0.5);
  clock->End(*marks, kOutputs);
  const StepReading reading = clock->Read(*marks);
  ASSERT_TRUE(reading.split.has_value());
  EXPECT_GE(reading.split->forward_backward_s, 1.5 * 2.5 - 1e-9);
  EXPECT_LE(reading.split->forward_backward_s, 1.5 * 2.5 + 0.0101);
  EXPECT_DOUBLE_EQ(reading.split->allreduce_wait_s, 0.25);
  EXPECT_DOUBLE_EQ(reading.split->optimizer_s, 0.5);
  EXPECT_NEAR(reading.compute_time_s,
              reading.split->forward_backward_s + reading.split->allreduce_wait_s +
                  reading.split->optimizer_s,
              1e-9);
}

// A clock that records each step's extra compute as the loop set it.
class FaultRecordingClock : public ScriptedClock {
 public:
  using ScriptedClock::ScriptedClock;
  void ComputeBegins(Marks& marks) override {
    extra_compute.push_back(marks.extra_compute);
    ScriptedClock::ComputeBegins(marks);
  }
  std::vector<double> extra_compute;
};

// The loop applies this rank's fault rules per iteration: the data stall inside the data
// wait (a real sleep, so data_time_s is at least the stall), the extra compute on the
// step's marks for the clock.
TEST(TrainingLoopTest, FaultRulesStallTheDataAndMarkTheExtraComputeOfTheirIterations) {
  TrainOptions options = LoopOptions(/*iterations=*/4, /*warmup=*/1);
  std::string error;
  std::optional<bench::FaultScenario> scenario = bench::FaultScenario::Parse(
      "benchfleet-scenario 1\n"
      "rank rank=0 iterations=2-3 extra_compute=50%\n"
      "rank rank=1 iterations=1-4 extra_compute=90% data_stall_s=9\n"  // another rank's
      "rank rank=* iterations=3 data_stall_s=0.05\n",
      &error);
  ASSERT_TRUE(scenario.has_value()) << error;
  options.faults = RankFaults(*scenario, /*rank=*/0);
  int runs = 0;
  auto runner = MakeEagerRunner(ScriptedStep({5, 4, 3, 2}, &runs));
  Log log;
  FaultRecordingClock clock(log, {1, 1, 1, 1});
  NumberedBatches data(log);
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  const StatusOr<double> window =
      RunTrainingLoop(options, *runner, data, clock, reporter,
                      [&](const StepRunner&) { reporter.WriteStart(StartEvent{}); });
  ASSERT_TRUE(window.ok()) << window.status().message();
  EXPECT_EQ(clock.extra_compute, (std::vector<double>{0, 0.5, 0.5, 0}));
  const std::vector<std::string> lines = events.Lines();
  ASSERT_EQ(lines.size(), 5u);
  auto data_time = [&](int iteration) {
    const std::string& line = lines[iteration];
    const std::string key = "\"data_time_s\":";
    return std::stod(line.substr(line.find(key) + key.size()));
  };
  EXPECT_GE(data_time(3), 0.05);
}

}  // namespace
}  // namespace bench_train

#include "worker/agent/trainer_event_parser.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace bench::agent {
namespace {

TEST(TrainerEventParserTest, Start) {
  auto event = ParseTrainerEvent(
      R"({"event":"start","rank":0,"model":"resnet50","parameters":25557032,)"
      R"("precision":"fp32","device":"cpu","world_size":2,"local_rank":0,"batch_size":2,)"
      R"("image_size":64,"iterations":5,"warmup_iterations":1,"backend":"gloo",)"
      R"("versions":{"torch":"1.13.1","bench_train":"0.1.0"}})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->kind, TrainerEvent::Kind::kStart);
  EXPECT_EQ(event->rank, 0);
  EXPECT_EQ(event->parameters, 25557032);
  EXPECT_EQ(event->model, "resnet50");
  EXPECT_EQ(event->device, "cpu");
  EXPECT_EQ(event->precision, "fp32");
  EXPECT_EQ(event->requested_precision, "");  // an older trainer's start event
  EXPECT_FALSE(event->simulated);             // a real trainer's
  EXPECT_EQ(event->versions, (std::map<std::string, std::string>{{"torch", "1.13.1"},
                                                                 {"bench_train", "0.1.0"}}));
}

TEST(TrainerEventParserTest, Iter) {
  auto event = ParseTrainerEvent(
      R"({"event":"iter","rank":1,"iteration":7,"step_time_s":0.41,"images":2,)"
      R"("loss":6.93,"data_time_s":0.01,"elapsed_s":2.5,"warmup":true,"new_field":[1,2]})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->kind, TrainerEvent::Kind::kIter);
  EXPECT_EQ(event->rank, 1);
  EXPECT_EQ(event->sample.iteration(), 7);
  EXPECT_DOUBLE_EQ(event->sample.step_time_s(), 0.41);
  EXPECT_EQ(event->sample.images(), 2);
  EXPECT_DOUBLE_EQ(event->sample.loss(), 6.93);
  EXPECT_DOUBLE_EQ(event->sample.data_time_s(), 0.01);
  EXPECT_DOUBLE_EQ(event->sample.elapsed_s(), 2.5);
  EXPECT_TRUE(event->sample.warmup());
}

// The step split (issue 26): each field the event has is carried, including 0 (a single
// rank's all-reduce wait); one it lacks, or writes as null, is unset (no data), never 0.
TEST(TrainerEventParserTest, IterCarriesTheStepSplitAndLeavesMissingFieldsUnset) {
  auto full = ParseTrainerEvent(
      R"({"event":"iter","rank":0,"iteration":3,"step_time_s":0.5,"images":2,"loss":1,)"
      R"("data_time_s":0.05,"compute_time_s":0.45,"forward_backward_time_s":0.3,)"
      R"("allreduce_wait_time_s":0,"optimizer_time_s":0.125})");
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(full->sample.has_compute_time_s());
  EXPECT_DOUBLE_EQ(full->sample.compute_time_s(), 0.45);
  ASSERT_TRUE(full->sample.has_forward_backward_time_s());
  EXPECT_DOUBLE_EQ(full->sample.forward_backward_time_s(), 0.3);
  ASSERT_TRUE(full->sample.has_allreduce_wait_time_s());
  EXPECT_EQ(full->sample.allreduce_wait_time_s(), 0);
  ASSERT_TRUE(full->sample.has_optimizer_time_s());
  EXPECT_DOUBLE_EQ(full->sample.optimizer_time_s(), 0.125);

  // An older trainer: compute only; null reads as no data.
  auto older = ParseTrainerEvent(
      R"({"event":"iter","rank":0,"iteration":4,"step_time_s":0.5,"images":2,"loss":1,)"
      R"("compute_time_s":0.5,"allreduce_wait_time_s":null})");
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_TRUE(older->sample.has_compute_time_s());
  EXPECT_FALSE(older->sample.has_forward_backward_time_s());
  EXPECT_FALSE(older->sample.has_allreduce_wait_time_s());
  EXPECT_FALSE(older->sample.has_optimizer_time_s());

  // A non-finite time reads as itself, for the controller to refuse (not as 0).
  auto nonfinite = ParseTrainerEvent(
      R"({"event":"iter","rank":0,"iteration":5,"step_time_s":0.5,"images":2,"loss":1,)"
      R"("optimizer_time_s":"NaN","forward_backward_time_s":"Infinity"})");
  ASSERT_TRUE(nonfinite.ok()) << nonfinite.status();
  ASSERT_TRUE(nonfinite->sample.has_optimizer_time_s());
  EXPECT_TRUE(std::isnan(nonfinite->sample.optimizer_time_s()));
  ASSERT_TRUE(nonfinite->sample.has_forward_backward_time_s());
  EXPECT_EQ(nonfinite->sample.forward_backward_time_s(), std::numeric_limits<double>::infinity());
}

TEST(TrainerEventParserTest, IterWithNullLossReadsNaN) {
  auto event = ParseTrainerEvent(
      R"({"event":"iter","rank":0,"iteration":1,"step_time_s":0.1,"images":2,"loss":null})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_TRUE(std::isnan(event->sample.loss()));
  EXPECT_FALSE(event->sample.warmup());
}

TEST(TrainerEventParserTest, StartWithRequestedPrecision) {
  auto event = ParseTrainerEvent(
      R"({"event":"start","rank":0,"precision":"fp32","requested_precision":"amp"})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->precision, "fp32");
  EXPECT_EQ(event->requested_precision, "amp");
}

TEST(TrainerEventParserTest, StartOfASimulatedTrainerSaysSo) {
  auto event = ParseTrainerEvent(
      R"({"event":"start","rank":1,"precision":"fp32","device":"cuda:3","simulated":true})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_TRUE(event->simulated);
  EXPECT_EQ(event->device, "cuda:3");
  // Only a JSON true marks it.
  auto other = ParseTrainerEvent(R"({"event":"start","rank":1,"simulated":"yes"})");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(other->simulated);
}

// bench-train writes a non-finite loss as the proto3 JSON mapping does (a string).
TEST(TrainerEventParserTest, IterWithNonFiniteLossStringsReadsThem) {
  const std::string prefix =
      R"({"event":"iter","rank":0,"iteration":37,"step_time_s":0.1,"images":2,"loss":)";
  auto nan = ParseTrainerEvent(prefix + R"("NaN","data_time_s":0,"lr":"NaN"})");
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan(nan->sample.loss()));
  EXPECT_EQ(nan->sample.iteration(), 37);
  auto inf = ParseTrainerEvent(prefix + R"("Infinity"})");
  ASSERT_TRUE(inf.ok()) << inf.status();
  EXPECT_EQ(inf->sample.loss(), std::numeric_limits<double>::infinity());
  auto minus_inf = ParseTrainerEvent(prefix + R"("-Infinity"})");
  ASSERT_TRUE(minus_inf.ok()) << minus_inf.status();
  EXPECT_EQ(minus_inf->sample.loss(), -std::numeric_limits<double>::infinity());
  // Any other string is not a number: 0, as for the other numeric fields.
  auto other = ParseTrainerEvent(prefix + R"("nan"})");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->sample.loss(), 0);
}

TEST(TrainerEventParserTest, IterWithoutIterationIsRejected) {
  EXPECT_FALSE(ParseTrainerEvent(R"({"event":"iter","rank":0,"step_time_s":0.1})").ok());
}

TEST(TrainerEventParserTest, Summary) {
  auto event = ParseTrainerEvent(
      R"({"event":"summary","rank":0,"measured_iterations":4,"measured_images":8,)"
      R"("window_s":1.2,"images_per_second":6.67,"step_time_median_s":0.3,)"
      R"("skipped_steps":3,"nonfinite_losses":5,"synthetic_images_per_second":9.5})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->kind, TrainerEvent::Kind::kSummary);
  EXPECT_EQ(event->summary.skipped_steps(), 3);
  EXPECT_EQ(event->summary.nonfinite_losses(), 5);
  EXPECT_EQ(event->summary.measured_iterations(), 4);
  EXPECT_EQ(event->summary.measured_images(), 8);
  EXPECT_DOUBLE_EQ(event->summary.window_s(), 1.2);
  EXPECT_DOUBLE_EQ(event->summary.step_time_median_s(), 0.3);
  EXPECT_DOUBLE_EQ(event->images_per_second, 6.67);
  EXPECT_DOUBLE_EQ(event->summary.synthetic_images_per_second(), 9.5);
}

TEST(TrainerEventParserTest, Error) {
  auto event = ParseTrainerEvent(R"({"event":"error","rank":3,"message":"CUDA out of memory"})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->kind, TrainerEvent::Kind::kError);
  EXPECT_EQ(event->rank, 3);
  EXPECT_EQ(event->message, "CUDA out of memory");
}

TEST(TrainerEventParserTest, UnknownEventIsOther) {
  auto event = ParseTrainerEvent(R"({"event":"checkpoint","rank":0})");
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->kind, TrainerEvent::Kind::kOther);
  EXPECT_EQ(event->name, "checkpoint");
}

TEST(TrainerEventParserTest, GarbageLinesAreRejected) {
  EXPECT_FALSE(ParseTrainerEvent("").ok());
  EXPECT_FALSE(ParseTrainerEvent("Loading model resnet50...").ok());
  EXPECT_FALSE(ParseTrainerEvent("{not json").ok());
  EXPECT_FALSE(ParseTrainerEvent(R"({"event":"iter","rank":0,"iteration":1)").ok());
  EXPECT_FALSE(ParseTrainerEvent(R"({"rank":0})").ok());          // no event
  EXPECT_FALSE(ParseTrainerEvent(R"({"event":5,"rank":0})").ok());  // event not a string
  EXPECT_FALSE(ParseTrainerEvent("[1,2,3]").ok());
}

}  // namespace
}  // namespace bench::agent

#include "worker/train/event_writer.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace bench_train {
namespace {

TEST(JsonQuoteTest, EscapesSpecialCharacters) {
  EXPECT_EQ(JsonQuote(""), "\"\"");
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(JsonQuote("back\\slash"), "\"back\\\\slash\"");
  EXPECT_EQ(JsonQuote("line1\nline2\r\t"), "\"line1\\nline2\\r\\t\"");
  EXPECT_EQ(JsonQuote("\b\f"), "\"\\b\\f\"");
  EXPECT_EQ(JsonQuote(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(JsonQuote("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(JsonQuote("/"), "\"/\"");
}

TEST(JsonQuoteTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"");
  EXPECT_EQ(JsonQuote("bad\xff"), "\"bad\\ufffd\"");
  EXPECT_EQ(JsonQuote("\xc3"), "\"\\ufffd\"");              // truncated sequence
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");   // overlong encoding
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate
}

TEST(JsonNumberTest, FormatsFiniteAndNonFinite) {
  EXPECT_EQ(JsonNumber(0.0), "0");
  EXPECT_EQ(JsonNumber(1.5), "1.5");
  EXPECT_EQ(JsonNumber(-2.0), "-2");
  EXPECT_EQ(JsonNumber(0.1), "0.1");
  EXPECT_EQ(JsonNumber(6.93), "6.93");
  EXPECT_EQ(JsonNumber(1e-7), "1e-07");
  EXPECT_EQ(std::stod(JsonNumber(1.0 / 3.0)), 1.0 / 3.0);  // round-trips
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(JsonNumber(-std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonDoubleTest, WritesNonFiniteAsProto3JsonStrings) {
  EXPECT_EQ(JsonDouble(6.93), "6.93");
  EXPECT_EQ(JsonDouble(-0.5), "-0.5");
  EXPECT_EQ(JsonDouble(std::numeric_limits<double>::quiet_NaN()), R"("NaN")");
  EXPECT_EQ(JsonDouble(-std::numeric_limits<double>::quiet_NaN()), R"("NaN")");
  EXPECT_EQ(JsonDouble(std::numeric_limits<double>::infinity()), R"("Infinity")");
  EXPECT_EQ(JsonDouble(-std::numeric_limits<double>::infinity()), R"("-Infinity")");
  EXPECT_EQ(JsonObjectBuilder().AddDouble("x", std::nan("")).Add("y", std::nan("")).Build(),
            R"({"x":"NaN","y":null})");
}

TEST(JsonObjectBuilderTest, BuildsFlatAndNestedObjects) {
  EXPECT_EQ(JsonObjectBuilder().Build(), "{}");
  EXPECT_EQ(JsonObjectBuilder()
                .Add("s", "x\"y")
                .Add("i", int64_t{-3})
                .Add("n", 7)
                .Add("d", 2.5)
                .Add("t", true)
                .Add("f", false)
                .AddRaw("o", JsonObjectBuilder().Add("k", "v").Build())
                .Build(),
            R"({"s":"x\"y","i":-3,"n":7,"d":2.5,"t":true,"f":false,"o":{"k":"v"}})");
}

TEST(FormatEventTest, Start) {
  StartEvent e;
  e.rank = 1;
  e.model = "resnet50";
  e.parameters = 25557032;
  e.precision = "amp_bf16";
  e.device = "cpu";
  e.world_size = 2;
  e.local_rank = 1;
  e.batch_size = 16;
  e.image_size = 64;
  e.iterations = 10;
  e.warmup_iterations = 2;
  e.backend = "gloo";
  e.versions = {{"torch", "1.13.0"}, {"bench_train", "0.1.0"}};
  e.requested_precision = "amp";
  e.data = "synthetic";
  e.lr = 0.032;
  e.momentum = 0.875;
  // The original fields first, unchanged; added fields after them.
  EXPECT_EQ(FormatEvent(e),
            R"({"event":"start","rank":1,"model":"resnet50","parameters":25557032,)"
            R"("precision":"amp_bf16","device":"cpu","world_size":2,"local_rank":1,)"
            R"("batch_size":16,"image_size":64,"iterations":10,"warmup_iterations":2,)"
            R"("backend":"gloo","versions":{"bench_train":"0.1.0","torch":"1.13.0"},)"
            R"("requested_precision":"amp","loss_scaling":false,"data":"synthetic",)"
            R"("dataset_images":0,"dataset_classes":0,"loader_threads":0,)"
            R"("channels_last":false,"cuda_graphs":false,"host_memory_cache":false,)"
            R"("lr":0.032,"lr_warmup_iterations":0,)"
            R"("momentum":0.875,"weight_decay":0,"bn_weight_decay":false,"label_smoothing":0,)"
            R"("zero_init_residual":false,"allreduce_buckets":0,"broadcast_buffers":false,)"
            R"("model_kind":"classification"})");
}

TEST(FormatEventTest, Iter) {
  IterEvent e;
  e.rank = 0;
  e.iteration = 3;
  e.step_time_s = 0.25;
  e.images = 8;
  e.loss = 6.5;
  e.data_time_s = 0;
  e.elapsed_s = 0.75;
  e.warmup = true;
  e.compute_time_s = 0.25;
  e.lr = 0.1;
  EXPECT_EQ(FormatEvent(e),
            R"({"event":"iter","rank":0,"iteration":3,"step_time_s":0.25,"images":8,)"
            R"("loss":6.5,"data_time_s":0,"elapsed_s":0.75,"warmup":true,)"
            R"("compute_time_s":0.25,"lr":0.1})");
  e.loss_scale = 32768.0;
  EXPECT_NE(FormatEvent(e).find(R"("lr":0.1,"loss_scale":32768})"), std::string::npos);
  e.loss = std::numeric_limits<double>::quiet_NaN();
  e.warmup = false;
  EXPECT_NE(FormatEvent(e).find(R"("loss":"NaN")"), std::string::npos);
  EXPECT_NE(FormatEvent(e).find(R"("warmup":false)"), std::string::npos);
  e.loss = -std::numeric_limits<double>::infinity();
  e.lr = std::numeric_limits<double>::infinity();
  e.loss_scale = std::numeric_limits<double>::infinity();
  EXPECT_NE(FormatEvent(e).find(R"("loss":"-Infinity")"), std::string::npos);
  EXPECT_NE(FormatEvent(e).find(R"("lr":"Infinity","loss_scale":"Infinity"})"),
            std::string::npos);
}

// The step split: the three fields after the others when the step has them, none when
// it has not (a replayed CUDA graph).
TEST(FormatEventTest, IterWithTheStepSplit) {
  IterEvent e;
  e.iteration = 2;
  e.step_time_s = 1;
  e.compute_time_s = 0.75;
  e.lr = 0.1;
  e.forward_backward_time_s = 0.5;
  e.allreduce_wait_time_s = 0.125;
  e.optimizer_time_s = 0.0625;
  EXPECT_NE(FormatEvent(e).find(R"("lr":0.1,"forward_backward_time_s":0.5,)"
                                R"("allreduce_wait_time_s":0.125,"optimizer_time_s":0.0625})"),
            std::string::npos)
      << FormatEvent(e);
  e.forward_backward_time_s.reset();
  e.allreduce_wait_time_s.reset();
  e.optimizer_time_s.reset();
  EXPECT_EQ(FormatEvent(e).find("forward_backward"), std::string::npos);
  EXPECT_EQ(FormatEvent(e).find("allreduce_wait"), std::string::npos);
  EXPECT_EQ(FormatEvent(e).find("optimizer_time"), std::string::npos);
}

TEST(FormatEventTest, SummaryWithTheStepSplitTotals) {
  SummaryEvent e;
  EXPECT_EQ(FormatEvent(e).find("forward_backward_time_total_s"), std::string::npos);
  e.forward_backward_time_total_s = 2;
  e.allreduce_wait_time_total_s = 0;
  e.optimizer_time_total_s = 0.5;
  EXPECT_NE(FormatEvent(e).find(R"("corrupt_files":0,"forward_backward_time_total_s":2,)"
                                R"("allreduce_wait_time_total_s":0,"optimizer_time_total_s":0.5,)"),
            std::string::npos)
      << FormatEvent(e);
}

TEST(FormatEventTest, Summary) {
  SummaryEvent e;
  e.rank = 0;
  e.measured_iterations = 4;
  e.measured_images = 8;
  e.window_s = 1.25;
  e.images_per_second = 6.4;
  e.step_time_median_s = 0.3;
  e.step_time_p50_s = 0.3;
  e.step_time_p90_s = 0.5;
  e.step_time_p99_s = 0.75;
  e.data_time_total_s = 0.25;
  e.compute_time_total_s = 1;
  e.compute_images_per_second = 8;
  e.skipped_steps = 1;
  e.nonfinite_losses = 3;
  e.corrupt_files = 2;
  e.max_rss_bytes = 4096;
  EXPECT_EQ(FormatEvent(e),
            R"({"event":"summary","rank":0,"measured_iterations":4,"measured_images":8,)"
            R"("window_s":1.25,"images_per_second":6.4,"step_time_median_s":0.3,)"
            R"("step_time_p50_s":0.3,"step_time_p90_s":0.5,"step_time_p99_s":0.75,)"
            R"("data_time_total_s":0.25,"compute_time_total_s":1,"compute_images_per_second":8,)"
            R"("skipped_steps":1,"nonfinite_losses":3,"corrupt_files":2,"max_rss_bytes":4096})");
  e.peak_memory_bytes = 1 << 30;
  EXPECT_NE(FormatEvent(e).find(R"("corrupt_files":2,"peak_memory_bytes":1073741824,)"),
            std::string::npos);
}

TEST(FormatEventTest, Error) {
  EXPECT_EQ(FormatEvent(ErrorEvent{3, "bad \"thing\"\nat line 2"}),
            R"({"event":"error","rank":3,"message":"bad \"thing\"\nat line 2"})");
}

TEST(EventWriterTest, WritesOneFlushedLinePerEvent) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EventWriter writer(file);
  writer.Write(ErrorEvent{0, "one"});
  writer.Write(ErrorEvent{0, "two\nlines"});
  std::rewind(file);
  char buffer[256] = {};
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, file);
  std::fclose(file);
  EXPECT_EQ(std::string(buffer, n),
            "{\"event\":\"error\",\"rank\":0,\"message\":\"one\"}\n"
            "{\"event\":\"error\",\"rank\":0,\"message\":\"two\\nlines\"}\n");
}

}  // namespace
}  // namespace bench_train

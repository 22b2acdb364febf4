// Runs RankSupervisor against a fake trainer: a shell script, written to a temporary
// directory, that prints contract JSON lines (docs/trainer-events.md).
#include "worker/agent/rank_supervisor.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/spec_names.h"
#include "worker/agent/sample_uploader.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

using benchfleet::v1::Assignment;
using benchfleet::v1::RankReport;
using benchfleet::v1::ReportStatusRequest;
using ::testing::HasSubstr;

// Accepts samples slowly, so that a report racing ahead of its samples would show.
class SlowUploadRpc : public SampleUploadRpc {
 public:
  absl::Status UploadSamples(const benchfleet::v1::UploadSamplesRequest& request,
                             benchfleet::v1::UploadSamplesResponse* response) override {
    absl::SleepFor(absl::Milliseconds(30));
    absl::MutexLock lock(&mu_);
    if (++calls_ == 1) return absl::UnavailableError("first upload fails");
    for (const auto& sample : request.samples()) {
      ++per_rank_[sample.rank()];
      received_unix_ns_.push_back(sample.received_unix_ns());
      losses_[{sample.rank(), sample.iteration()}] = sample.loss();
    }
    for (const auto& sample : request.gpu_samples()) {
      ++gpu_per_rank_[sample.rank()];
      gpu_samples_.push_back(sample);
    }
    response->set_batch_id(request.batch_id());
    return absl::OkStatus();
  }
  int accepted(int rank) {
    absl::MutexLock lock(&mu_);
    return per_rank_[rank];
  }
  int gpu_accepted(int rank) {
    absl::MutexLock lock(&mu_);
    return gpu_per_rank_[rank];
  }
  std::vector<int64_t> received_unix_ns() {
    absl::MutexLock lock(&mu_);
    return received_unix_ns_;
  }
  std::vector<benchfleet::v1::GpuSample> gpu_samples() {
    absl::MutexLock lock(&mu_);
    return gpu_samples_;
  }
  std::map<std::pair<int, int>, double> losses() {  // (rank, iteration) -> loss
    absl::MutexLock lock(&mu_);
    return losses_;
  }

 private:
  absl::Mutex mu_;
  int calls_ = 0;
  std::map<int, int> per_rank_;
  std::map<int, int> gpu_per_rank_;
  std::vector<int64_t> received_unix_ns_;
  std::vector<benchfleet::v1::GpuSample> gpu_samples_;
  std::map<std::pair<int, int>, double> losses_;
};

class RecordingReportSink : public ReportSink {
 public:
  explicit RecordingReportSink(SlowUploadRpc* rpc) : rpc_(rpc) {}
  uint64_t Report(ReportStatusRequest report) override {
    absl::MutexLock lock(&mu_);
    for (const auto& rank : report.ranks()) {
      if (rank.state() != benchfleet::v1::RANK_STATE_STARTED) {
        samples_at_final_[rank.rank()] = rpc_->accepted(rank.rank());
        gpu_samples_at_final_[rank.rank()] = rpc_->gpu_accepted(rank.rank());
      }
    }
    reports_.push_back(std::move(report));
    return reports_.size();
  }
  std::vector<ReportStatusRequest> reports() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }
  // The latest report of each rank.
  std::map<int, RankReport> final_states() {
    absl::MutexLock lock(&mu_);
    std::map<int, RankReport> out;
    for (const auto& report : reports_) {
      for (const auto& rank : report.ranks()) out[rank.rank()] = rank;
    }
    return out;
  }
  int samples_at_final(int rank) {
    absl::MutexLock lock(&mu_);
    return samples_at_final_[rank];
  }
  int gpu_samples_at_final(int rank) {
    absl::MutexLock lock(&mu_);
    return gpu_samples_at_final_[rank];
  }

 private:
  SlowUploadRpc* rpc_;
  absl::Mutex mu_;
  std::vector<ReportStatusRequest> reports_;
  std::map<int, int> samples_at_final_;
  std::map<int, int> gpu_samples_at_final_;
};

// The fake trainer. Every rank records its argv and environment, then behaves by
// $MODE: "ok" (5 iterations and a summary), "fail1" (rank 1 fails with exit 3, the
// others hang), "hang" (start, then sleep), "stubborn" (ignores SIGTERM),
// "nosummary" (exits 0 without a summary), "diverge" (asked for amp, runs fp32; its loss
// goes Infinity then NaN, and it gives up with "loss diverged: ..." and exit 1),
// "simulated" (as "ok", its start event marked "simulated": true, as bench-sim-train's).
// Each also records its BENCH_NODE_NAME in node.$RANK.
constexpr char kFakeTrainer[] = R"SH(#!/bin/sh
DIR="$(dirname "$0")"
echo "$@" > "$DIR/args.$RANK"
env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|MASTER_ADDR|MASTER_PORT|OMP_NUM_THREADS)=' | sort > "$DIR/env.$RANK"
echo "$BENCH_NODE_NAME" > "$DIR/node.$RANK"
echo "a human log line on stdout"
echo "rank $RANK starting" >&2
[ "$MODE" = diverge ] || [ "$MODE" = simulated ] || printf '{"event":"start","rank":%s,"model":"resnet50","parameters":1234,"precision":"fp32","device":"cpu"}\n' "$RANK"
iter() {
  printf '{"event":"iter","rank":%s,"iteration":%d,"step_time_s":0.01,"images":2,"loss":1.5,"data_time_s":0,"elapsed_s":0.05,"warmup":false}\n' "$RANK" "$1"
}
case "$MODE" in
ok)
  for i in 1 2 3 4 5; do iter $i; done
  printf '{"event":"summary","rank":%s,"measured_iterations":4,"measured_images":8,"window_s":0.04,"images_per_second":200,"step_time_median_s":0.01}\n' "$RANK"
  exit 0 ;;
fail1)
  iter 1; iter 2
  if [ "$RANK" = 1 ]; then
    while [ ! -f "$DIR/started.0" ]; do sleep 0.01; done
    echo "Traceback: something broke" >&2
    echo "RuntimeError: boom" >&2
    printf '{"event":"error","rank":1,"message":"RuntimeError: boom"}\n'
    exit 3
  fi
  touch "$DIR/started.$RANK"
  sleep 30 ;;
hang)
  iter 1
  touch "$DIR/started.$RANK"
  sleep 30 ;;
stubborn)
  trap '' TERM
  touch "$DIR/started.$RANK"
  sleep 30 ;;
nosummary)
  iter 1
  exit 0 ;;
simulated)
  printf '{"event":"start","rank":%s,"model":"resnet50","parameters":0,"precision":"fp32","device":"cuda:0","simulated":true}\n' "$RANK"
  for i in 1 2 3 4 5; do iter $i; done
  printf '{"event":"summary","rank":%s,"measured_iterations":4,"measured_images":8,"window_s":0.04,"images_per_second":200,"step_time_median_s":0.01}\n' "$RANK"
  exit 0 ;;
diverge)
  printf '{"event":"start","rank":%s,"model":"resnet50","parameters":1234,"precision":"fp32","requested_precision":"amp","device":"cpu"}\n' "$RANK"
  iter 1
  printf '{"event":"iter","rank":%s,"iteration":2,"step_time_s":0.01,"images":2,"loss":"Infinity","data_time_s":0,"elapsed_s":0.1,"warmup":false,"lr":"NaN"}\n' "$RANK"
  for i in 3 4 5; do
    printf '{"event":"iter","rank":%s,"iteration":%d,"step_time_s":0.01,"images":2,"loss":"NaN","data_time_s":0,"elapsed_s":0.2,"warmup":false}\n' "$RANK" "$i"
  done
  printf '{"event":"error","rank":%s,"message":"loss diverged: non-finite loss in 4 consecutive iterations (from iteration 2)"}\n' "$RANK"
  exit 1 ;;
esac
)SH";

class RankSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(temp_.ok());
    dir_ = temp_.path();
  }

  std::string WriteTrainer(const std::string& mode) {
    std::string path = dir_ + "/bench-train";
    std::ofstream out(path);
    std::string script = kFakeTrainer;
    script.insert(script.find('\n') + 1, "MODE=" + mode + "\n");
    out << script;
    out.close();
    chmod(path.c_str(), 0755);
    return path;
  }

  std::string ReadFile(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  bool WaitForFile(const std::string& name, absl::Duration timeout = absl::Seconds(10)) {
    absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (access((dir_ + "/" + name).c_str(), F_OK) == 0) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  static Assignment TwoRanks(int master_port = 0) {
    Assignment assignment;
    assignment.set_job_id("job-7");
    assignment.set_attempt(1);
    auto* spec = assignment.mutable_spec();
    spec->set_model("resnet50");
    spec->set_precision(benchfleet::v1::PRECISION_AMP);
    spec->set_batch_size(2);
    spec->set_iterations(5);
    spec->set_warmup_iterations(1);
    spec->set_image_size(64);
    assignment.add_ranks(0);
    assignment.add_ranks(1);
    assignment.add_device_indices(0);
    assignment.add_device_indices(1);
    assignment.set_device_kind("cpu");
    assignment.set_world_size(2);
    assignment.set_master_addr("127.0.0.1");
    assignment.set_master_port(master_port);
    return assignment;
  }

  RankSupervisorOptions Options(const std::string& trainer) {
    RankSupervisorOptions options;
    options.bench_train = trainer;
    options.address = "127.0.0.1";
    options.cpu_threads = 3;
    options.kill_grace = absl::Milliseconds(300);
    return options;
  }

  SampleUploaderOptions UploaderOptions() {
    SampleUploaderOptions options;
    options.linger = absl::Milliseconds(5);
    options.initial_backoff = absl::Milliseconds(5);
    return options;
  }

  TempDir temp_{"agent_supervisor_test_"};
  std::string dir_;
};

TEST_F(RankSupervisorTest, SuccessfulRanksReportSamplesFirst) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(), Options(WriteTrainer("ok")), &uploader, &reports);
  int64_t before = absl::ToUnixNanos(absl::Now());
  supervisor.Start();
  supervisor.Join();
  int64_t after = absl::ToUnixNanos(absl::Now());
  ASSERT_TRUE(supervisor.Done());
  // Every iteration sample carries the agent's wall clock when its line was read.
  auto received = rpc.received_unix_ns();
  ASSERT_EQ(received.size(), 10u);
  for (int64_t stamp : received) {
    EXPECT_GE(stamp, before);
    EXPECT_LE(stamp, after);
  }

  auto all = reports.reports();
  ASSERT_GE(all.size(), 3u);
  // First report: both ranks STARTED, with the port picked here.
  EXPECT_EQ(all[0].job_id(), "job-7");
  EXPECT_EQ(all[0].attempt(), 1);
  EXPECT_GT(all[0].master_port(), 0);
  EXPECT_EQ(all[0].master_port(), supervisor.master_port());
  ASSERT_EQ(all[0].ranks_size(), 2);
  EXPECT_EQ(all[0].ranks(0).state(), benchfleet::v1::RANK_STATE_STARTED);
  EXPECT_EQ(all[0].ranks(1).state(), benchfleet::v1::RANK_STATE_STARTED);

  auto finals = reports.final_states();
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(finals[rank].state(), benchfleet::v1::RANK_STATE_SUCCEEDED);
    EXPECT_EQ(finals[rank].exit_code(), 0);
    EXPECT_EQ(finals[rank].parameters(), 1234);
    EXPECT_EQ(finals[rank].summary().rank(), rank);
    EXPECT_EQ(finals[rank].summary().measured_images(), 8);
    EXPECT_DOUBLE_EQ(finals[rank].summary().window_s(), 0.04);
    EXPECT_EQ(reports.samples_at_final(rank), 5) << "final report before its samples";
    EXPECT_EQ(finals[rank].telemetry_note(), "");
  }

  EXPECT_EQ(ReadFile("args.1"),
            "--model resnet50 --precision amp --bs 2 --iters 5 --warmup 1 --image-size 64 "
            "--data synthetic --device cpu --threads 3\n");
  EXPECT_EQ(ReadFile("env.1"),
            absl::StrCat("LOCAL_RANK=1\nMASTER_ADDR=127.0.0.1\nMASTER_PORT=",
                         all[0].master_port(), "\nOMP_NUM_THREADS=3\nRANK=1\nWORLD_SIZE=2\n"));
}

// A diverging trainer: every iteration reaches the controller, its non-finite losses
// included; the precision in effect is reported as soon as the start event is read; the
// rank fails with the trainer's "loss diverged: ..." message.
TEST_F(RankSupervisorTest, ADivergingRankDeliversEveryIterationAndItsPrecision) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  Assignment assignment = TwoRanks();
  assignment.clear_ranks();
  assignment.clear_device_indices();
  assignment.add_ranks(0);
  assignment.add_device_indices(0);
  assignment.set_world_size(1);
  RankSupervisor supervisor(assignment, Options(WriteTrainer("diverge")), &uploader, &reports);
  supervisor.Start();
  supervisor.Join();

  auto losses = rpc.losses();
  ASSERT_EQ(losses.size(), 5u);
  EXPECT_EQ(losses[std::make_pair(0, 1)], 1.5);
  EXPECT_EQ(losses[std::make_pair(0, 2)], std::numeric_limits<double>::infinity());
  for (int it : {3, 4, 5}) EXPECT_TRUE(std::isnan(losses[std::make_pair(0, it)])) << it;

  auto all = reports.reports();
  ASSERT_EQ(all.size(), 3u);  // STARTED at spawn, STARTED with the start event, FAILED
  ASSERT_EQ(all[1].ranks_size(), 1);
  EXPECT_EQ(all[1].ranks(0).state(), benchfleet::v1::RANK_STATE_STARTED);
  EXPECT_EQ(all[1].ranks(0).precision(), "fp32");
  EXPECT_EQ(all[1].ranks(0).parameters(), 1234);
  const RankReport final_report = reports.final_states()[0];
  EXPECT_EQ(final_report.state(), benchfleet::v1::RANK_STATE_FAILED);
  EXPECT_EQ(final_report.exit_code(), 1);
  EXPECT_EQ(final_report.message(),
            "loss diverged: non-finite loss in 4 consecutive iterations (from iteration 2)");
  EXPECT_EQ(final_report.precision(), "fp32");
  EXPECT_EQ(reports.samples_at_final(0), 5) << "final report before its samples";
}

// A simulated trainer's mark reaches the controller with the start event and in the final
// report; every rank learns the agent's name from BENCH_NODE_NAME.
TEST_F(RankSupervisorTest, ASimulatedRankIsReportedSimulatedAndKnowsItsNode) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisorOptions options = Options(WriteTrainer("simulated"));
  options.node_name = "sim-node-3";
  RankSupervisor supervisor(TwoRanks(), options, &uploader, &reports);
  supervisor.Start();
  supervisor.Join();

  bool started_simulated = false;
  for (const auto& request : reports.reports()) {
    for (const auto& rank : request.ranks()) {
      if (rank.state() == benchfleet::v1::RANK_STATE_STARTED && !rank.precision().empty()) {
        EXPECT_TRUE(rank.simulated()) << rank.rank();
        started_simulated = true;
      }
    }
  }
  EXPECT_TRUE(started_simulated) << "no STARTED report with the start event";
  auto finals = reports.final_states();
  for (int rank : {0, 1}) {
    EXPECT_EQ(finals[rank].state(), benchfleet::v1::RANK_STATE_SUCCEEDED) << rank;
    EXPECT_TRUE(finals[rank].simulated()) << rank;
    EXPECT_EQ(ReadFile(absl::StrCat("node.", rank)), "sim-node-3\n");
  }
}

TEST_F(RankSupervisorTest, ARealRankIsNotSimulated) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(), Options(WriteTrainer("ok")), &uploader, &reports);
  supervisor.Start();
  supervisor.Join();
  auto finals = reports.final_states();
  for (int rank : {0, 1}) EXPECT_FALSE(finals[rank].simulated()) << rank;
}

TEST_F(RankSupervisorTest, GivenMasterPortIsUsedAndNotReported) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(29555), Options(WriteTrainer("ok")), &uploader, &reports);
  supervisor.Start();
  supervisor.Join();
  EXPECT_EQ(reports.reports()[0].master_port(), 0);
  EXPECT_THAT(ReadFile("env.0"), HasSubstr("MASTER_PORT=29555\n"));
}

TEST_F(RankSupervisorTest, FailingRankCancelsItsSibling) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(), Options(WriteTrainer("fail1")), &uploader, &reports);
  absl::Time start = absl::Now();
  supervisor.Start();
  supervisor.Join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "the sibling was not terminated";

  auto finals = reports.final_states();
  const RankReport& failed = finals[1];
  EXPECT_EQ(failed.state(), benchfleet::v1::RANK_STATE_FAILED);
  EXPECT_EQ(failed.exit_code(), 3);
  EXPECT_EQ(failed.message(), "RuntimeError: boom");
  EXPECT_THAT(failed.stderr_tail(), HasSubstr("Traceback: something broke\nRuntimeError: boom"));
  EXPECT_EQ(reports.samples_at_final(1), 2);

  const RankReport& cancelled = finals[0];
  EXPECT_EQ(cancelled.state(), benchfleet::v1::RANK_STATE_CANCELLED);
  EXPECT_EQ(cancelled.exit_code(), -15);
  EXPECT_THAT(cancelled.message(), HasSubstr("rank 1 failed"));
  EXPECT_EQ(reports.samples_at_final(0), 2);
}

TEST_F(RankSupervisorTest, CancelTerminatesAllRanks) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(), Options(WriteTrainer("hang")), &uploader, &reports);
  supervisor.Start();
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  EXPECT_FALSE(supervisor.Done());
  supervisor.Cancel("cancelled by the user");
  supervisor.Join();
  auto finals = reports.final_states();
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(finals[rank].state(), benchfleet::v1::RANK_STATE_CANCELLED);
    EXPECT_EQ(finals[rank].message(), "cancelled by the user");
    EXPECT_EQ(finals[rank].exit_code(), -15);
    EXPECT_EQ(reports.samples_at_final(rank), 1);
  }
}

TEST_F(RankSupervisorTest, RanksIgnoringSigtermAreKilled) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(), Options(WriteTrainer("stubborn")), &uploader,
                            &reports);
  supervisor.Start();
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  supervisor.Cancel("cancelled by the user");
  EXPECT_TRUE(supervisor.WaitExited(absl::Now() + absl::Seconds(10)));
  supervisor.Join();
  auto finals = reports.final_states();
  EXPECT_EQ(finals[0].state(), benchfleet::v1::RANK_STATE_CANCELLED);
  EXPECT_EQ(finals[0].exit_code(), -9);
  EXPECT_EQ(finals[1].exit_code(), -9);
}

TEST_F(RankSupervisorTest, ExitZeroWithoutSummaryFails) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  Assignment assignment = TwoRanks();
  assignment.clear_ranks();
  assignment.clear_device_indices();
  assignment.add_ranks(1);
  assignment.add_device_indices(0);
  RankSupervisor supervisor(assignment, Options(WriteTrainer("nosummary")), &uploader,
                            &reports);
  supervisor.Start();
  supervisor.Join();
  auto finals = reports.final_states();
  EXPECT_EQ(finals[1].state(), benchfleet::v1::RANK_STATE_FAILED);
  EXPECT_THAT(finals[1].message(), HasSubstr("without a summary"));
  EXPECT_THAT(finals[1].stderr_tail(), HasSubstr("rank 1 starting"));
}

TEST_F(RankSupervisorTest, TrainerThatCannotStartFailsTheRanks) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisor supervisor(TwoRanks(), Options(dir_ + "/no-such-trainer"), &uploader,
                            &reports);
  supervisor.Start();
  EXPECT_TRUE(supervisor.Done());
  supervisor.Join();
  auto finals = reports.final_states();
  EXPECT_EQ(finals[0].state(), benchfleet::v1::RANK_STATE_FAILED);
  EXPECT_THAT(finals[0].message(), HasSubstr("cannot start"));
  EXPECT_EQ(finals[1].state(), benchfleet::v1::RANK_STATE_CANCELLED);
  EXPECT_THAT(finals[1].message(), HasSubstr("not started"));
}

// Real data the node lacks (or that lies outside its --data-root, which reads the same):
// no rank starts, every rank is FAILED with the node and the path, and no rendezvous
// port is reported (nothing else of the job starts from it).
TEST_F(RankSupervisorTest, AMissingDataPathFailsEveryRankNamingTheNodeAndPath) {
  const std::string trainer = WriteTrainer("ok");
  const std::string not_a_dir = dir_ + "/file";
  std::ofstream(not_a_dir) << "x";
  const std::pair<std::string, std::string> cases[] = {
      {dir_ + "/no-such-data", "No such file or directory"},
      {not_a_dir, "Not a directory"},
      {"/usr", "No such file or directory"},  // there, but outside the data root
  };
  for (const auto& [path, why] : cases) {
    SCOPED_TRACE(path);
    SlowUploadRpc rpc;
    SampleUploader uploader(&rpc, UploaderOptions());
    RecordingReportSink reports(&rpc);
    Assignment assignment = TwoRanks();
    assignment.mutable_spec()->set_data(benchfleet::v1::DATA_SOURCE_IMAGEFOLDER);
    assignment.mutable_spec()->set_data_path(path);
    RankSupervisorOptions options = Options(trainer);
    options.node_name = "dgx-03";
    options.data_roots = {dir_};
    RankSupervisor supervisor(assignment, options, &uploader, &reports);
    supervisor.Start();
    EXPECT_TRUE(supervisor.Done());
    supervisor.Join();
    auto all = reports.reports();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].master_port(), 0);
    ASSERT_EQ(all[0].ranks_size(), 2);
    for (const auto& rank : all[0].ranks()) {
      EXPECT_EQ(rank.state(), benchfleet::v1::RANK_STATE_FAILED);
      EXPECT_EQ(rank.message(), absl::StrCat("node dgx-03: data path ", path, ": ", why));
    }
    EXPECT_FALSE(WaitForFile("args.0", absl::Milliseconds(50))) << "a rank was started";
  }
}

// A folder that is there: the ranks start with bench-train's data flags.
TEST_F(RankSupervisorTest, RealDataIsPassedToTheTrainer) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  Assignment assignment = TwoRanks();
  assignment.mutable_spec()->set_data(benchfleet::v1::DATA_SOURCE_IMAGEFOLDER);
  assignment.mutable_spec()->set_data_path(dir_);
  assignment.mutable_spec()->set_loader_threads(6);
  assignment.mutable_spec()->set_data_vs_compute(true);
  RankSupervisorOptions options = Options(WriteTrainer("ok"));
  options.data_roots = {dir_};
  RankSupervisor supervisor(assignment, options, &uploader, &reports);
  supervisor.Start();
  supervisor.Join();
  EXPECT_EQ(reports.final_states()[1].state(), benchfleet::v1::RANK_STATE_SUCCEEDED);
  EXPECT_EQ(
      ReadFile("args.1"),
      absl::StrCat("--model resnet50 --precision amp --bs 2 --iters 5 --warmup 1 "
                   "--image-size 64 --data-dir ",
                   dir_,
                   " --data imagefolder --loader-threads 6 --data-vs-compute --device cpu "
                   "--threads 3\n"));
}

TEST(RankLaunchTest, DataFlags) {
  Assignment assignment;
  assignment.mutable_spec()->set_model("ssd_resnet34");
  assignment.mutable_spec()->set_data(benchfleet::v1::DATA_SOURCE_COCO);
  assignment.mutable_spec()->set_data_path("/data/coco");
  assignment.add_ranks(0);
  assignment.add_device_indices(0);
  assignment.set_world_size(1);
  RankLaunch launch = BuildRankLaunch(assignment, 0, "127.0.0.1", 29500, RankSupervisorOptions());
  auto dir = std::find(launch.argv.begin(), launch.argv.end(), "--data-dir");
  auto data = std::find(launch.argv.begin(), launch.argv.end(), "--data");
  ASSERT_NE(dir, launch.argv.end());
  ASSERT_NE(data, launch.argv.end());
  EXPECT_EQ(*(dir + 1), "/data/coco");
  EXPECT_EQ(*(data + 1), "coco");
  EXPECT_LT(dir, data) << "bench-train's --data-dir alone means imagefolder";
  EXPECT_THAT(launch.argv, ::testing::Not(::testing::Contains("--loader-threads")));
  EXPECT_EQ(DataSourceName(benchfleet::v1::DATA_SOURCE_UNSPECIFIED), "synthetic");
}

// A GPU assignment run as CI does: NVML is the fake library, ranks run on the CPU.
TEST_F(RankSupervisorTest, GpuRanksAreSampledAndReportedAfterTheirGpuSamples) {
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  GpuSamplerOptions sampler_options;
  sampler_options.period = absl::Milliseconds(10);
  GpuSampler sampler(nvml->get(), &uploader, sampler_options);
  RecordingReportSink reports(&rpc);
  Assignment assignment = TwoRanks();
  assignment.set_device_kind("cuda");
  RankSupervisorOptions options = Options(WriteTrainer("ok"));
  options.gpu_ranks_on_cpu = true;
  options.gpu_sampler = &sampler;
  options.gpu_uuids = {{0, "GPU-fake-0"}, {1, "GPU-fake-1"}};
  RankSupervisor supervisor(assignment, options, &uploader, &reports);
  supervisor.Start();
  supervisor.Join();

  auto finals = reports.final_states();
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(finals[rank].state(), benchfleet::v1::RANK_STATE_SUCCEEDED);
    EXPECT_EQ(finals[rank].telemetry_note(), "");
    EXPECT_GE(reports.gpu_samples_at_final(rank), 1) << "no final GPU reading";
    EXPECT_EQ(reports.gpu_samples_at_final(rank), rpc.gpu_accepted(rank))
        << "final report before its GPU samples, or GPU samples after it";
  }
  for (const auto& sample : rpc.gpu_samples()) {
    EXPECT_EQ(sample.job_id(), "job-7");
    EXPECT_EQ(sample.attempt(), 1);
    EXPECT_EQ(sample.gpu_index(), sample.rank());
    EXPECT_EQ(sample.gpu_uuid(), absl::StrCat("GPU-fake-", sample.rank()));
    EXPECT_EQ(sample.power_w(), sample.rank() == 0 ? 300.0 : 250.0);
    EXPECT_GT(sample.time_unix_ns(), 0);
  }
  EXPECT_EQ(ReadFile("args.1"),
            "--model resnet50 --precision amp --bs 2 --iters 5 --warmup 1 --image-size 64 "
            "--data synthetic --device cpu --threads 3\n");
  EXPECT_THAT(ReadFile("env.1"), HasSubstr("OMP_NUM_THREADS=3\n"));
}

TEST_F(RankSupervisorTest, GpuRanksCarryTheTelemetryNote) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  GpuTelemetrySession telemetry =
      StartGpuTelemetry("/nonexistent/libnvidia-ml.so.1", 10, &uploader);
  ASSERT_EQ(telemetry.sampler, nullptr);
  Assignment assignment = TwoRanks();
  assignment.set_device_kind("cuda");
  RankSupervisorOptions options = Options(WriteTrainer("ok"));
  options.gpu_ranks_on_cpu = true;
  options.telemetry_note = telemetry.note;
  RankSupervisor supervisor(assignment, options, &uploader, &reports);
  supervisor.Start();
  supervisor.Join();
  auto all = reports.reports();
  ASSERT_GE(all.size(), 3u);
  for (const auto& report : all) {
    for (const auto& rank : report.ranks()) {
      SCOPED_TRACE(rank.DebugString());
      EXPECT_THAT(rank.telemetry_note(),
                  HasSubstr("no GPU telemetry: cannot load /nonexistent/libnvidia-ml.so.1"));
    }
  }
  EXPECT_EQ(all[0].ranks(0).state(), benchfleet::v1::RANK_STATE_STARTED);
  EXPECT_EQ(reports.final_states()[1].state(), benchfleet::v1::RANK_STATE_SUCCEEDED);
  EXPECT_TRUE(rpc.gpu_samples().empty());
}

TEST_F(RankSupervisorTest, CpuRanksCarryNoTelemetryNote) {
  SlowUploadRpc rpc;
  SampleUploader uploader(&rpc, UploaderOptions());
  RecordingReportSink reports(&rpc);
  RankSupervisorOptions options = Options(WriteTrainer("ok"));
  options.telemetry_note = "no GPU telemetry: whatever";
  RankSupervisor supervisor(TwoRanks(), options, &uploader, &reports);
  supervisor.Start();
  supervisor.Join();
  for (const auto& report : reports.reports()) {
    for (const auto& rank : report.ranks()) EXPECT_EQ(rank.telemetry_note(), "");
  }
}

TEST(RankLaunchTest, GpuRanksOnCpu) {
  Assignment assignment;
  assignment.set_job_id("job-1");
  assignment.mutable_spec()->set_model("resnet50");
  assignment.add_ranks(0);
  assignment.add_ranks(1);
  assignment.add_device_indices(0);
  assignment.add_device_indices(1);
  assignment.set_device_kind("cuda");
  assignment.set_world_size(2);
  RankSupervisorOptions options;
  options.gpu_ranks_on_cpu = true;
  options.cpu_threads = 4;
  options.host_cores = 16;
  RankLaunch launch = BuildRankLaunch(assignment, 1, "127.0.0.1", 29500, options);
  auto device = std::find(launch.argv.begin(), launch.argv.end(), "--device");
  ASSERT_NE(device, launch.argv.end());
  EXPECT_EQ(*(device + 1), "cpu");
  auto threads = std::find(launch.argv.begin(), launch.argv.end(), "--threads");
  ASSERT_NE(threads, launch.argv.end());
  EXPECT_EQ(*(threads + 1), "4");
  std::map<std::string, std::string> env(launch.env.begin(), launch.env.end());
  EXPECT_EQ(env["OMP_NUM_THREADS"], "4");
  EXPECT_EQ(env.count("CUDA_DEVICE_ORDER"), 0u);
}

TEST(RankLaunchTest, CudaRanks) {
  Assignment assignment;
  assignment.set_job_id("job-1");
  assignment.mutable_spec()->set_model("resnet50");
  assignment.mutable_spec()->set_precision(benchfleet::v1::PRECISION_FP32);
  assignment.add_ranks(4);
  assignment.add_ranks(5);
  assignment.add_device_indices(2);
  assignment.add_device_indices(3);
  assignment.set_device_kind("cuda");
  assignment.set_world_size(8);
  RankSupervisorOptions options;
  options.bench_train = "/opt/bench-train";
  options.host_cores = 16;
  RankLaunch launch = BuildRankLaunch(assignment, 1, "node-a", 29500, options);
  EXPECT_EQ(launch.argv.front(), "/opt/bench-train");
  EXPECT_THAT(launch.argv, ::testing::Not(::testing::Contains("--threads")));
  std::map<std::string, std::string> gpu_env(launch.env.begin(), launch.env.end());
  EXPECT_EQ(gpu_env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");  // NVML's numbering
  EXPECT_EQ(gpu_env["OMP_NUM_THREADS"], "8");             // 16 cores, 2 local ranks
  auto device = std::find(launch.argv.begin(), launch.argv.end(), "--device");
  ASSERT_NE(device, launch.argv.end());
  EXPECT_EQ(*(device + 1), "cuda:3");
  auto precision = std::find(launch.argv.begin(), launch.argv.end(), "--precision");
  EXPECT_EQ(*(precision + 1), "fp32");
  std::map<std::string, std::string> env(launch.env.begin(), launch.env.end());
  EXPECT_EQ(env["RANK"], "5");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["WORLD_SIZE"], "8");
  EXPECT_EQ(env["MASTER_ADDR"], "node-a");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
}

}  // namespace
}  // namespace bench::agent

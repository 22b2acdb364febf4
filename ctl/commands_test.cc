// The commands against an in-process fake Controller on 127.0.0.1:0.
#include "ctl/commands.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include "absl/synchronization/mutex.h"
#include "ctl/test_command_server.h"
#include "ctl/views.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;

// Canned answers; records what it was sent. Thread-safe.
class FakeController final : public v1::Controller::Service {
 public:
  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override {
    absl::MutexLock lock(&mu_);
    last_spec_ = request->spec();
    if (request->spec().batch_size() <= 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "batch_size: must be > 0");
    }
    const std::string& request_id = request->spec().request_id();
    if (request_id.empty()) {
      response->set_job_id("j-42");
      return grpc::Status::OK;
    }
    submitted_ids_.push_back(request_id);
    if (auto it = by_request_.find(request_id); it != by_request_.end()) {
      response->set_job_id(it->second);
      response->set_existing(true);
      return grpc::Status::OK;
    }
    const std::string id = "s-" + std::to_string(++next_job_);
    by_request_[request_id] = id;
    v1::JobStatus job = Job(v1::JOB_STATE_QUEUED, 0);
    job.set_id(id);
    *job.mutable_spec() = request->spec();
    sweep_jobs_[id] = job;
    response->set_job_id(id);
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* request,
                      v1::JobStatus* response) override {
    {
      absl::MutexLock lock(&mu_);
      if (auto it = sweep_jobs_.find(request->job_id()); it != sweep_jobs_.end()) {
        *response = it->second;
        return grpc::Status::OK;
      }
      if (auto it = extra_jobs_.find(request->job_id()); it != extra_jobs_.end()) {
        *response = it->second;
        return grpc::Status::OK;
      }
    }
    if (request->job_id() != "j-42") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "job_id: no job \"" + request->job_id() + "\"");
    }
    *response = Job(v1::JOB_STATE_RUNNING, 45);
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*,
                        v1::ListJobsResponse* response) override {
    *response->add_jobs() = Job(v1::JOB_STATE_RUNNING, 45);
    absl::MutexLock lock(&mu_);
    // Sweep jobs move on one step per listing: QUEUED, RUNNING, then their final state.
    for (auto& [id, job] : sweep_jobs_) {
      if (job.state() == v1::JOB_STATE_QUEUED) {
        job.set_state(v1::JOB_STATE_RUNNING);
      } else if (job.state() == v1::JOB_STATE_RUNNING) {
        const bool fail = !fail_precision_.empty() &&
                          job.spec().request_id().find(fail_precision_) != std::string::npos;
        job.set_state(fail ? v1::JOB_STATE_FAILED : v1::JOB_STATE_SUCCEEDED);
        if (!fail) {
          job.set_has_throughput(true);
          job.set_images_per_second(100.0 * job.spec().devices());
        } else {
          job.set_reason("rank 0: exited with status 1");
        }
      }
      *response->add_jobs() = job;
    }
    return grpc::Status::OK;
  }

  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest*,
                         v1::JobStatus* response) override {
    *response = Job(v1::JOB_STATE_CANCELLED, 45);
    response->set_reason("cancelled by user");
    return grpc::Status::OK;
  }

  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*,
                        grpc::ServerWriter<v1::JobStatus>* writer) override {
    writer->Write(Job(v1::JOB_STATE_QUEUED, 0));
    for (int i = 0; i <= 100; i += 5) writer->Write(Job(v1::JOB_STATE_RUNNING, i));
    v1::JobStatus end = Job(final_state_, 100);
    if (final_state_ == v1::JOB_STATE_SUCCEEDED) {
      end.set_has_throughput(true);
      end.set_images_per_second(1316.66);
    } else {
      end.set_reason("rank 3: CUDA out of memory");
    }
    writer->Write(end);
    return grpc::Status::OK;
  }

  grpc::Status Results(grpc::ServerContext*, const v1::ResultsRequest* request,
                       v1::ResultsResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      last_results_ = *request;
    }
    if (!with_results_) return grpc::Status::OK;
    for (int devices : {1, 8}) {
      auto* cell = response->add_cells();
      cell->set_model("resnet50");
      cell->set_devices(devices);
      cell->set_precision(v1::PRECISION_AMP);
      cell->set_batch_size(256);
      cell->set_median_images_per_second(1400.0 * devices);
      cell->set_runs(1);
      cell->set_device_kind("cuda");
    }
    auto* cell = response->add_cells();
    cell->set_model("resnet50");
    cell->set_devices(1);
    cell->set_precision(v1::PRECISION_FP32);
    cell->set_batch_size(256);
    cell->set_median_images_per_second(384.72);
    cell->set_min_images_per_second(380.1);
    cell->set_max_images_per_second(389.3);
    cell->set_runs(2);
    cell->set_device_kind("cuda");
    return grpc::Status::OK;
  }

  grpc::Status ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                          v1::ListAgentsResponse* response) override {
    auto* agent = response->add_agents();
    agent->mutable_inventory()->set_name("node-a");
    agent->mutable_inventory()->set_cpu_slots(2);
    agent->set_connected(true);
    agent->set_devices_total(2);
    agent->set_devices_busy(1);
    agent->add_running_jobs("j-42");
    (*agent->mutable_inventory()->mutable_labels())["site"] = "a";
    (*agent->mutable_inventory()->mutable_labels())["rack"] = "3";
    return grpc::Status::OK;
  }

  // UNIMPLEMENTED (as a benchd without ListQueue answers) until set_queue.
  grpc::Status ListQueue(grpc::ServerContext*, const v1::ListQueueRequest*,
                         v1::ListQueueResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (!queue_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "");
    for (const v1::JobStatus& job : *queue_) *response->add_jobs() = job;
    return grpc::Status::OK;
  }

  grpc::Status GpuVariability(grpc::ServerContext*, const v1::GpuVariabilityRequest* request,
                              v1::GpuVariabilityResponse* response) override {
    response->set_threshold_pct(request->threshold_pct() > 0 ? request->threshold_pct() : 5);
    if (!with_results_) return grpc::Status::OK;
    const double normalized[] = {1.52, 1.01, 0.97};
    for (int i = 0; i < 3; ++i) {
      auto* gpu = response->add_gpus();
      gpu->set_gpu_uuid("GPU-" + std::to_string(i));
      gpu->set_gpu_name("NVIDIA H100 80GB HBM3");
      gpu->set_agent("dgx-1");
      gpu->set_hostname("dgx-1.example");
      gpu->set_gpu_index(i);
      gpu->set_jobs(4);
      gpu->set_iterations(400);
      gpu->set_normalized_step_time(normalized[i]);
      gpu->set_step_time_cv(0.021);
      gpu->set_outlier(normalized[i] > 1 + response->threshold_pct() / 100);
      gpu->mutable_sm_clock_mhz()->set_count(10);
      gpu->mutable_sm_clock_mhz()->set_p5(1700);
      gpu->mutable_sm_clock_mhz()->set_p50(1755);
      gpu->mutable_sm_clock_mhz()->set_p95(1980);
    }
    return grpc::Status::OK;
  }

  grpc::Status SetBaseline(grpc::ServerContext*, const v1::SetBaselineRequest* request,
                           v1::Baseline* response) override {
    if (request->job_id() != "j-42") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "job_id: job \"" + request->job_id() + "\" has no throughput");
    }
    *response = MakeBaseline();
    // As benchd does: a tolerance left unset is the default 5%.
    response->set_lower_tolerance_pct(
        request->has_lower_tolerance_pct() ? request->lower_tolerance_pct() : 5);
    response->set_upper_tolerance_pct(
        request->has_upper_tolerance_pct() ? request->upper_tolerance_pct() : 5);
    return grpc::Status::OK;
  }

  grpc::Status ListBaselines(grpc::ServerContext*, const v1::ListBaselinesRequest*,
                             v1::ListBaselinesResponse* response) override {
    if (with_results_) *response->add_baselines() = MakeBaseline();
    return grpc::Status::OK;
  }

  // j-42's diagnosis: one straggler, one failing check (the same answer every call);
  // FAILED_PRECONDITION for any other job, as benchd's for a job that has not ended.
  grpc::Status DiagnoseJob(grpc::ServerContext*, const v1::DiagnoseJobRequest* request,
                           v1::DiagnoseJobResponse* response) override {
    if (request->job_id() != "j-42") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "job " + request->job_id() +
                              " is RUNNING: only a job that ended "
                              "SUCCEEDED or FAILED has a diagnosis");
    }
    response->set_job_id("j-42");
    *response->mutable_diagnosis() = Diagnosis();
    return grpc::Status::OK;
  }
  static v1::JobDiagnosis Diagnosis() {
    v1::JobDiagnosis d;
    d.set_attempt(1);
    d.set_available(true);
    d.mutable_stragglers()->set_applicable(true);
    d.mutable_stragglers()->set_ranks(2);
    v1::Straggler* s = d.mutable_stragglers()->add_stragglers();
    s->set_rank(1);
    s->set_node("dgx-2");
    s->set_gpu_index(3);
    d.mutable_excess()->set_applicable(true);
    v1::DiagnosisCheck* check = d.add_checks();
    check->set_name("steady_cv");
    check->set_outcome("fail");
    d.set_failing_checks(1);
    return d;
  }

  // j-42 runs 2 ranks; the first call sees iterations 1-3 RUNNING, later calls 1-5 and
  // SUCCEEDED. Honours from_iteration.
  grpc::Status GetSamples(grpc::ServerContext*, const v1::GetSamplesRequest* request,
                          v1::GetSamplesResponse* response) override {
    if (request->job_id() != "j-42") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "job_id: no job");
    }
    int calls;
    {
      absl::MutexLock lock(&mu_);
      calls = ++samples_calls_;
      from_iterations_.push_back(request->from_iteration());
    }
    const int last = calls == 1 ? 3 : 5;
    v1::JobStatus job = Job(calls == 1 ? v1::JOB_STATE_RUNNING : v1::JOB_STATE_SUCCEEDED, last);
    job.mutable_spec()->set_iterations(5);
    job.mutable_spec()->set_warmup_iterations(1);
    job.set_created_unix_ms(1700000000000);
    if (calls > 1) {
      job.set_has_throughput(true);
      job.set_images_per_second(640.5);
    }
    *response->mutable_job() = job;
    for (int rank = 0; rank < 2; ++rank) {
      for (int it = std::max(1, request->from_iteration()); it <= last; ++it) {
        auto* sample = response->add_samples();
        sample->set_job_id("j-42");
        sample->set_rank(rank);
        sample->set_iteration(it);
        sample->set_step_time_s(0.1);
        sample->set_images(32);
        sample->set_loss(6.9 - it * 0.01);
        sample->set_elapsed_s(0.1 * it);
        sample->set_warmup(it == 1);
      }
    }
    return grpc::Status::OK;
  }

  v1::JobSpec last_spec() {
    absl::MutexLock lock(&mu_);
    return last_spec_;
  }
  v1::ResultsRequest last_results() {
    absl::MutexLock lock(&mu_);
    return last_results_;
  }
  std::vector<std::string> submitted_ids() {
    absl::MutexLock lock(&mu_);
    return submitted_ids_;
  }
  std::vector<int> from_iterations() {
    absl::MutexLock lock(&mu_);
    return from_iterations_;
  }
  // Sweep jobs whose request id contains `text` end FAILED.
  void set_fail_precision(const std::string& text) {
    absl::MutexLock lock(&mu_);
    fail_precision_ = text;
  }
  // Ends a sweep job as `state` now.
  // `measured`: a SUCCEEDED job has a throughput (else it measured nothing).
  void FinishSweepJob(const std::string& id, v1::JobState state, bool measured = true) {
    absl::MutexLock lock(&mu_);
    sweep_jobs_[id].set_state(state);
    if (state == v1::JOB_STATE_SUCCEEDED && measured) {
      sweep_jobs_[id].set_has_throughput(true);
      sweep_jobs_[id].set_images_per_second(100);
    }
  }
  void AddJob(const v1::JobStatus& job) {
    absl::MutexLock lock(&mu_);
    extra_jobs_[job.id()] = job;
  }
  void set_final_state(v1::JobState state) { final_state_ = state; }
  void set_with_results(bool with) { with_results_ = with; }
  void set_queue(std::vector<v1::JobStatus> jobs) {
    absl::MutexLock lock(&mu_);
    queue_ = std::move(jobs);
  }

 private:
  static v1::JobStatus Job(v1::JobState state, int done) {
    v1::JobStatus job;
    job.set_id("j-42");
    job.set_state(state);
    job.set_iterations_done(done);
    job.mutable_spec()->set_model("resnet50");
    job.mutable_spec()->set_iterations(100);
    job.mutable_spec()->set_devices(2);
    job.mutable_spec()->set_batch_size(32);
    return job;
  }

  static v1::Baseline MakeBaseline() {
    v1::Baseline baseline;
    baseline.set_model("resnet50");
    baseline.set_precision(v1::PRECISION_AMP);
    baseline.set_batch_size(256);
    baseline.set_devices(8);
    baseline.set_gpu_model("NVIDIA H100 80GB HBM3");
    baseline.set_device_kind("cuda");
    baseline.set_job_id("j-42");
    baseline.set_images_per_second(10000);
    return baseline;
  }

  absl::Mutex mu_;
  std::optional<std::vector<v1::JobStatus>> queue_ ABSL_GUARDED_BY(mu_);
  v1::ResultsRequest last_results_;
  std::map<std::string, std::string> by_request_;
  std::map<std::string, v1::JobStatus> sweep_jobs_;
  std::map<std::string, v1::JobStatus> extra_jobs_;
  std::vector<std::string> submitted_ids_;
  std::vector<int> from_iterations_;
  std::string fail_precision_;
  int next_job_ = 0;
  int samples_calls_ = 0;
  v1::JobSpec last_spec_;
  std::atomic<v1::JobState> final_state_{v1::JOB_STATE_SUCCEEDED};
  std::atomic<bool> with_results_{true};
};

class CommandsTest : public CommandServerTest<FakeController> {};

TEST_F(CommandsTest, SubmitPrintsTheIdAlone) {
  EXPECT_EQ(Run({"submit", "--gpus", "2", "--amp", "--bs", "32", "--label", "a=b"}), 0);
  EXPECT_EQ(out_.str(), "j-42\n");
  EXPECT_EQ(err_.str(), "");
  v1::JobSpec spec = service_.last_spec();
  EXPECT_EQ(spec.devices(), 2);
  EXPECT_EQ(spec.precision(), v1::PRECISION_AMP);
  EXPECT_EQ(spec.batch_size(), 32);
  EXPECT_EQ(spec.labels().at("a"), "b");
}

TEST_F(CommandsTest, ServerRefusalIsPrintedAndFails) {
  EXPECT_EQ(Run({"submit", "--gpus", "1", "--bs", "0"}), 1);
  EXPECT_EQ(service_.last_spec().batch_size(), 0);  // sent, not judged locally
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "benchctl: batch_size: must be > 0\n");
}

TEST_F(CommandsTest, SubmitWaitPlainLines) {
  EXPECT_EQ(Run({"submit", "--gpus", "2", "--bs", "32", "--wait"}), 0);
  EXPECT_EQ(out_.str(), "j-42\njob j-42: SUCCEEDED\nthroughput: 1316.7 images/s\n");
  const std::string err = err_.str();
  EXPECT_THAT(err, HasSubstr("job j-42: QUEUED 0/100 it\n"));
  EXPECT_THAT(err, HasSubstr("job j-42: RUNNING 50/100 it\n"));
  EXPECT_THAT(err, Not(HasSubstr("RUNNING 55/100")));  // at most every tenth
  EXPECT_THAT(err, Not(HasSubstr("\r")));
}

TEST_F(CommandsTest, SubmitWaitBarOnTerminal) {
  service_.set_final_state(v1::JOB_STATE_FAILED);
  EXPECT_EQ(Run({"submit", "--gpus", "2", "--bs", "32", "--wait"}, /*terminal=*/true), 1);
  EXPECT_THAT(err_.str(), HasSubstr("\r[###############...............]   50/100 it  RUNNING"));
  EXPECT_EQ(err_.str().back(), '\n');
  EXPECT_THAT(out_.str(),
              HasSubstr("job j-42: FAILED (rank 3: CUDA out of memory)\nthroughput: no data\n"));
}

TEST_F(CommandsTest, Status) {
  EXPECT_EQ(Run({"status", "j-42"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("state:      RUNNING\n"));
  EXPECT_THAT(out_.str(), HasSubstr("images/s:   no data\n"));
  EXPECT_EQ(Run({"status", "j-42", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"iterations_done\":45"));
  EXPECT_EQ(Run({"status", "nope"}), 1);
  EXPECT_EQ(err_.str(), "benchctl: job_id: no job \"nope\"\n");
}

// `diagnose` prints status's "diagnosis:" section, the same on every run; status shows the
// section of a job that has one.
TEST_F(CommandsTest, DiagnosePrintsStatussSectionTheSameEachTime) {
  EXPECT_EQ(Run({"diagnose", "j-42"}), 0);
  const std::string first = out_.str();
  EXPECT_EQ(first, FormatDiagnosisSection(FakeController::Diagnosis()));
  EXPECT_THAT(first, HasSubstr("diagnosis:\n  stragglers: 1 rank lost"));
  EXPECT_THAT(first, HasSubstr("steady_cv  FAIL"));
  EXPECT_EQ(Run({"diagnose", "j-42"}), 0);
  EXPECT_EQ(out_.str(), first);
  EXPECT_EQ(Run({"diagnose", "j-42", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"failing_checks\":1"));
  EXPECT_EQ(Run({"diagnose", "j-7"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("only a job that ended SUCCEEDED or FAILED"));

  v1::JobStatus job;
  job.set_id("j-9");
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  *job.mutable_diagnosis() = FakeController::Diagnosis();
  service_.AddJob(job);
  EXPECT_EQ(Run({"status", "j-9"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr(first));
}

TEST_F(CommandsTest, ResultsMarksRunsWithFailingChecksAndStrictLeavesThemOut) {
  EXPECT_EQ(Run({"results"}), 0);
  EXPECT_FALSE(service_.last_results().strict());
  EXPECT_THAT(out_.str(), Not(HasSubstr("failing checks")));
  EXPECT_EQ(Run({"results", "--strict"}), 0);
  EXPECT_TRUE(service_.last_results().strict());
}

TEST_F(CommandsTest, ListCancelAgents) {
  EXPECT_EQ(Run({"list"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("j-42  RUNNING"));
  EXPECT_EQ(Run({"list", "--format=json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"id\":\"j-42\""));
  EXPECT_EQ(Run({"cancel", "j-42"}), 0);
  EXPECT_EQ(out_.str(), "job j-42: CANCELLED (cancelled by user)\n");
  EXPECT_EQ(Run({"agents"}), 0);
  EXPECT_THAT(out_.str(),
              HasSubstr("node-a  -        2 CPU slots   1/2  rack=3,site=a  yes        j-42\n"));
}

TEST_F(CommandsTest, QueueUnimplementedIsAPlainError) {
  EXPECT_EQ(Run({"queue"}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "benchctl: benchd at " + address_ +
                            " does not implement ListQueue (UNIMPLEMENTED)\n");
}

TEST_F(CommandsTest, Queue) {
  service_.set_queue({});
  EXPECT_EQ(Run({"queue"}), 0);
  EXPECT_EQ(out_.str(), "queue is empty\n");
  EXPECT_EQ(Run({"queue", "--format", "json"}), 0);
  EXPECT_EQ(out_.str(), "[]\n");

  v1::JobStatus first;
  first.set_id("j-7");
  first.set_state(v1::JOB_STATE_QUEUED);
  first.set_queue_position(1);
  first.set_reason("needs 2 nodes with 8 free devices; 1 has them");
  first.set_created_unix_ms((1800000000 - 125) * int64_t{1000});  // context.now - 2m05s
  first.mutable_spec()->set_model("resnet50");
  first.mutable_spec()->set_devices(16);
  first.mutable_spec()->set_nodes(2);
  first.mutable_spec()->set_devices_per_node(8);
  first.mutable_spec()->set_batch_size(256);
  first.mutable_spec()->set_precision(v1::PRECISION_AMP);
  first.mutable_spec()->add_allowed_nodes("dgx-01");
  v1::JobStatus second = first;
  second.set_id("j-8");
  second.set_queue_position(2);
  second.set_reason("behind j-7");
  service_.set_queue({first, second});
  EXPECT_EQ(Run({"queue"}), 0);
  EXPECT_EQ(out_.str(),
            "POS  ID   NAME  MODEL      DEVICES  PRECISION   BS  CONSTRAINTS  AGE  "
            "WAITING FOR\n"
            "  1  j-7  -     resnet50  16 (2x8)  amp        256  on dgx-01     2m  "
            "needs 2 nodes with 8 free devices; 1 has them\n"
            "  2  j-8  -     resnet50  16 (2x8)  amp        256  on dgx-01     2m  "
            "behind j-7\n");
  EXPECT_EQ(Run({"queue", "--format=json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"queue_position\":2"));
  EXPECT_THAT(out_.str(), HasSubstr("\"reason\":\"behind j-7\""));
  EXPECT_EQ(Run({"queue", "--format", "csv"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\n2,j-8,,resnet50,16,2,8,amp,256,dgx-01,,0,0,0,"));
  EXPECT_THAT(out_.str(), ::testing::EndsWith(",125,behind j-7\n"));
}

TEST_F(CommandsTest, SubmitSendsShapeConstraintsAndLimits) {
  EXPECT_EQ(Run({"submit", "--nodes", "2", "--gpus-per-node", "8", "--bs", "256", "--node",
                 "dgx-01", "--node", "dgx-02", "--node-label", "gpu=h100", "--wall-time",
                 "2h", "--hang-timeout", "600"}),
            0);
  v1::JobSpec spec = service_.last_spec();
  EXPECT_EQ(spec.devices(), 16);
  EXPECT_EQ(spec.nodes(), 2);
  EXPECT_EQ(spec.devices_per_node(), 8);
  EXPECT_THAT(spec.allowed_nodes(), ::testing::ElementsAre("dgx-01", "dgx-02"));
  EXPECT_EQ(spec.node_labels().at("gpu"), "h100");
  EXPECT_EQ(spec.wall_time_limit_s(), 7200);
  EXPECT_EQ(spec.hang_timeout_s(), 600);
}

TEST_F(CommandsTest, Results) {
  EXPECT_EQ(Run({"results"}), 0);
  EXPECT_EQ(out_.str(),
            "resnet50 (cuda): median images/s\n"
            "GPUs                FP32 bs256      AMP bs256\n"
            "   1  384.7 (380.1–389.3, n=2)   1400.0 (n=1)\n"
            "   8                   no data  11200.0 (n=1)\n"
            "\n"
            "resnet50 (cuda): speedup and scaling efficiency vs 1 GPU\n"
            "GPUs  FP32 bs256       AMP bs256\n"
            "   8     no data  8.00x (100.0%)\n");
  EXPECT_EQ(Run({"results", "--format", "markdown"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("| GPUs |               FP32 bs256 |     AMP bs256 |\n"
                                    "|-----:|-------------------------:|--------------:|\n"));
  EXPECT_EQ(Run({"results", "--format", "csv"}), 0);
  EXPECT_THAT(out_.str(),
              HasSubstr("resnet50,cuda,1,fp32,256,384.7,380.1,389.3,2,,,,,,0,0,,,,,,,,,\n"));
  EXPECT_THAT(out_.str(),
              HasSubstr("resnet50,cuda,8,amp,256,11200.0,0.0,0.0,1,,,,,,0,0,,,,8.000,1.000,,,,\n"));
  EXPECT_EQ(Run({"results", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"median_images_per_second\":11200"));
  service_.set_with_results(false);
  EXPECT_EQ(Run({"results"}), 0);
  EXPECT_EQ(out_.str(), "no results yet\n");
  EXPECT_EQ(Run({"results", "--format", "markdown"}), 0);
  EXPECT_EQ(out_.str(), "no results yet\n");
}

TEST_F(CommandsTest, ResultsSendsTheFilters) {
  EXPECT_EQ(Run({"results", "--model", "resnet50", "--gpu-model", "H100", "--node", "dgx-1",
                 "--since", "2026-11-21T10:00:00Z", "--until", "1h", "--label", "site=a"}),
            0);
  v1::ResultsRequest request = service_.last_results();
  EXPECT_EQ(request.model(), "resnet50");
  EXPECT_EQ(request.gpu_model(), "H100");
  EXPECT_EQ(request.node(), "dgx-1");
  EXPECT_EQ(request.since_unix_ms(), 1795255200000);
  EXPECT_EQ(request.until_unix_ms(), (1800000000LL - 3600) * 1000);
  EXPECT_EQ(request.labels().at("site"), "a");
  // The fake ignores filters; benchctl still keeps only the GPU model asked for.
  EXPECT_EQ(out_.str(), "no results yet for model resnet50\n");
  EXPECT_EQ(Run({"results", "--node", "elsewhere"}), 0);
  EXPECT_EQ(service_.last_results().since_unix_ms(), 0);
  EXPECT_THAT(out_.str(), HasSubstr("resnet50 (cuda): median images/s"));
  EXPECT_EQ(Run({"results", "--gpu-model", "H100"}), 0);
  EXPECT_EQ(out_.str(), "no results match the filters\n");
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(CommandsTest, SweepSubmitsTheGridOnceAndResubmitsFailedCells) {
  const std::vector<std::string> args = {"sweep", "--gpus", "1,2", "--precision", "fp32,amp",
                                         "--bs", "32", "--repeat", "2", "--iters", "20"};
  ASSERT_EQ(Run(args), 0) << err_.str();
  auto lines = Lines(out_.str());
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "s-1  g1-fp32-bs32-r1  new");
  EXPECT_EQ(lines[7], "s-8  g2-amp-bs32-r2  new");
  auto ids = service_.submitted_ids();
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_THAT(ids[7], ::testing::MatchesRegex("sweep-[0-9a-f]{16}-g2-amp-bs32-r2"));
  EXPECT_EQ(service_.last_spec().iterations(), 20);

  // The same sweep again: nothing new.
  ASSERT_EQ(Run(args), 0) << err_.str();
  lines = Lines(out_.str());
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "s-1  g1-fp32-bs32-r1  existing");
  EXPECT_EQ(lines[7], "s-8  g2-amp-bs32-r2  existing");

  // A failed and a cancelled cell are resubmitted, once each, under retry ids.
  service_.FinishSweepJob("s-2", v1::JOB_STATE_FAILED);
  service_.FinishSweepJob("s-3", v1::JOB_STATE_CANCELLED);
  service_.FinishSweepJob("s-4", v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(Run(args), 0) << err_.str();
  lines = Lines(out_.str());
  EXPECT_EQ(lines[1], "s-9  g1-fp32-bs32-r2  resubmitted");
  EXPECT_EQ(lines[2], "s-10  g1-amp-bs32-r1  resubmitted");
  EXPECT_EQ(lines[3], "s-4  g1-amp-bs32-r2  existing");
  EXPECT_EQ(service_.submitted_ids().back(), ids[7]);
  EXPECT_THAT(service_.submitted_ids()[18], ::testing::EndsWith("-g1-fp32-bs32-r2-retry-1"));
  // The retry failed too: the next run goes on to retry-2.
  service_.FinishSweepJob("s-9", v1::JOB_STATE_FAILED);
  ASSERT_EQ(Run(args), 0) << err_.str();
  lines = Lines(out_.str());
  EXPECT_EQ(lines[1], "s-11  g1-fp32-bs32-r2  resubmitted");
  EXPECT_EQ(lines[2], "s-10  g1-amp-bs32-r1  existing");
  // A job that succeeded without measuring anything left its cell empty: resubmitted.
  service_.FinishSweepJob("s-5", v1::JOB_STATE_SUCCEEDED, /*measured=*/false);
  ASSERT_EQ(Run(args), 0) << err_.str();
  lines = Lines(out_.str());
  EXPECT_EQ(lines[4], "s-12  g2-fp32-bs32-r1  resubmitted");

  // --again: fresh jobs for every cell.
  std::vector<std::string> again = args;
  again.push_back("--again");
  ASSERT_EQ(Run(again), 0) << err_.str();
  lines = Lines(out_.str());
  ASSERT_EQ(lines.size(), 8u);
  for (const std::string& line : lines) EXPECT_THAT(line, ::testing::EndsWith("  new"));
  EXPECT_NE(service_.submitted_ids().back(), ids[7]);
}

TEST_F(CommandsTest, SweepWaitShowsProgressAndSucceedsOnlyIfAllDid) {
  ASSERT_EQ(Run({"sweep", "--gpus", "1,2", "--bs", "32", "--wait"}), 0) << err_.str();
  const std::string err = err_.str();
  EXPECT_THAT(err, HasSubstr("sweep: 0/2 done (2 RUNNING)\n"));
  EXPECT_THAT(err, HasSubstr("sweep: 2/2 done (2 SUCCEEDED)\n"));
  EXPECT_THAT(err, Not(HasSubstr("\r")));
  EXPECT_THAT(out_.str(), HasSubstr("s-1  g1-fp32-bs32-r1  new\ns-2  g2-fp32-bs32-r1  new\n"));
  EXPECT_THAT(out_.str(), HasSubstr("s-2  g2-fp32-bs32-r1  SUCCEEDED     200.0\n"));
  EXPECT_THAT(out_.str(), HasSubstr("2/2 jobs succeeded\n"));

  service_.set_fail_precision("-amp-");
  EXPECT_EQ(Run({"sweep", "--gpus", "1", "--bs", "32", "--precision", "fp32,amp", "--wait",
                 "--iters", "7"},
                /*terminal=*/true),
            1);
  EXPECT_THAT(err_.str(), HasSubstr("\rsweep: 2/2 done (1 SUCCEEDED, 1 FAILED)\x1b[K"));
  EXPECT_THAT(out_.str(), HasSubstr("FAILED (rank 0: exited with status 1)   no data\n"));
  EXPECT_THAT(out_.str(), HasSubstr("1/2 jobs succeeded\n"));
}

TEST_F(CommandsTest, GpusBaselinesAndCompare) {
  EXPECT_EQ(Run({"gpus"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("GPU-0  NVIDIA H100 80GB HBM3  dgx-1/dgx-1.example"));
  EXPECT_THAT(out_.str(), HasSubstr("SLOW\n"));
  EXPECT_EQ(Run({"gpus", "--outliers", "--threshold", "60"}), 0);
  EXPECT_EQ(out_.str(), "no GPU is slower than the fleet by more than 60% (3 GPUs)\n");
  EXPECT_EQ(Run({"gpus", "--outliers", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"gpu_uuid\":\"GPU-0\""));
  EXPECT_THAT(out_.str(), Not(HasSubstr("GPU-1")));
  service_.set_with_results(false);
  EXPECT_EQ(Run({"gpus"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("no data"));
  EXPECT_EQ(Run({"baselines"}), 0);
  EXPECT_EQ(out_.str(), "no baselines\n");
  service_.set_with_results(true);

  EXPECT_EQ(Run({"baseline", "j-42", "--lower", "2"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("10000.0 images/s from job j-42\nbounds: -2% / +5%"));
  EXPECT_EQ(Run({"baseline", "j-1"}), 1);
  EXPECT_EQ(err_.str(), "benchctl: job_id: job \"j-1\" has no throughput\n");
  EXPECT_EQ(Run({"baselines"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("resnet50  cuda    NVIDIA H100 80GB HBM3"));
  EXPECT_EQ(Run({"baselines", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"job_id\":\"j-42\""));

  v1::JobStatus other;
  other.set_id("j-43");
  other.set_state(v1::JOB_STATE_SUCCEEDED);
  other.mutable_spec()->set_model("resnet50");
  other.mutable_spec()->set_devices(2);
  other.mutable_spec()->set_batch_size(64);
  other.mutable_spec()->set_iterations(100);
  service_.AddJob(other);
  EXPECT_EQ(Run({"compare", "j-42", "j-43"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("*  batch size"));
  EXPECT_THAT(out_.str(), HasSubstr("*  state"));
  EXPECT_THAT(out_.str(), HasSubstr("throughput B/A: no data (A (j-42) and B (j-43) have no "
                                    "throughput)\n"));
  EXPECT_EQ(Run({"compare", "j-42", "j-43", "--format", "json"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"throughput_ratio\": null"));
  EXPECT_EQ(Run({"compare", "j-42", "nope"}), 1);
  EXPECT_EQ(err_.str(), "benchctl: job_id: no job \"nope\"\n");
}

TEST_F(CommandsTest, LogsOfARunningJobThenFollowed) {
  // First call: RUNNING with iterations 1-3; the log says it is not finished.
  EXPECT_EQ(Run({"logs", "j-42", "--format", "mllog"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"key\": \"run_start\""));
  EXPECT_THAT(out_.str(), Not(HasSubstr("run_stop")));
  EXPECT_THAT(err_.str(), HasSubstr("job j-42 is RUNNING; the log is not finished"));
  // Later calls: SUCCEEDED with 1-5.
  EXPECT_EQ(Run({"logs", "j-42"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("\"train.throughput\": 640.5"));
  EXPECT_EQ(Run({"logs", "nope"}), 1);
}

TEST_F(CommandsTest, LogsFollowPrintsEachIterationOnce) {
  EXPECT_EQ(Run({"logs", "j-42", "-f", "--format", "jsonl"}), 0);
  const auto lines = Lines(out_.str());
  EXPECT_EQ(lines.size(), 10u);  // 2 ranks x 5 iterations, none twice
  std::set<std::string> unique(lines.begin(), lines.end());
  EXPECT_EQ(unique.size(), lines.size());
  EXPECT_EQ(service_.from_iterations(), (std::vector<int>{0, 3}));
  EXPECT_EQ(err_.str(), "");
}

TEST_F(CommandsTest, LogsFollowDllogger) {
  EXPECT_EQ(Run({"logs", "j-42", "-f"}), 0);
  const std::string out = out_.str();
  int iteration_lines = 0;
  for (const std::string& line : Lines(out)) {
    EXPECT_EQ(line.rfind("DLLL {", 0), 0u) << line;
    if (line.find("\"step\": [0, ") != std::string::npos) ++iteration_lines;
  }
  EXPECT_EQ(iteration_lines, 5);  // rank 0 only, each once
  EXPECT_THAT(out, HasSubstr("\"step\": [], \"data\": {\"train.throughput\": 640.5, "
                             "\"train.iterations\": 4, \"global_batch_size\": 64"));
}

int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(CommandsUnreachableTest, NamesTheServer) {
  const std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  auto stub = v1::Controller::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::ostringstream out, err;
  Client client(stub.get(), address);
  CommandContext context;
  context.client = &client;
  context.out = &out;
  context.err = &err;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list"}, {"submit", "--gpus", "1", "--bs", "1", "--wait"},
        {"results"}}) {
    err.str("");
    auto options = ParseArgs(args, address);
    ASSERT_TRUE(options.ok());
    EXPECT_EQ(RunCommand(*options, context), 1);
    EXPECT_THAT(err.str(), HasSubstr("benchctl: cannot reach benchd at " + address + ": "));
  }
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace bench::ctl

#include "tests/bench/fleet_sim/submitter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace bench::fleetsim {
namespace v1 = benchfleet::v1;

Submitter::Submitter(const FleetOptions& options, Recorder* recorder, JobBook* jobs)
    : options_(options), recorder_(recorder), jobs_(jobs) {
  stub_ = v1::Controller::NewStub(NewChannel(options, options.target, kSubmitterName, -1));
  std::vector<double> weights;
  for (const JobSize& size : options.job_mix) weights.push_back(size.weight);
  pick_ = std::discrete_distribution<int>(weights.begin(), weights.end());
  run_id_ = absl::StrCat(getpid(), "-", std::chrono::system_clock::now().time_since_epoch().count());
}

Submitter::~Submitter() { Stop(); }

void Submitter::Start() { thread_ = std::thread([this] { Run(); }); }

void Submitter::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  for (int i = 0; i < 3000 && in_flight_.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Submitter::Run() {
  const int capacity = options_.nodes * options_.gpus_per_node;
  const int allowed = capacity + static_cast<int>(capacity * options_.backlog_fraction);
  const double rate = std::max(0.01, options_.submit_rate_limit);
  double tokens = 1;
  Clock::time_point last = Clock::now(), last_poll = last;
  int next = options_.job_mix[pick_(random_)].gpus;
  while (!stop_.load()) {
    Clock::time_point now = Clock::now();
    tokens = std::min(rate, tokens + Seconds(now - last) * rate);  // a burst of at most 1 s
    last = now;
    while (tokens >= 1 && in_flight_.load() < 16 &&
           jobs_->outstanding_gpus() + next <= std::max(allowed, next)) {
      tokens -= 1;
      SubmitOne(next);
      next = options_.job_mix[pick_(random_)].gpus;
    }
    if (now - last_poll > std::chrono::seconds(5)) {
      last_poll = now;
      PollStale();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Submitter::SubmitOne(int gpus) {
  struct Call {
    grpc::ClientContext context;
    v1::SubmitJobRequest request;
    v1::SubmitJobResponse response;
    Clock::time_point start;
  };
  auto* call = new Call;
  v1::JobSpec* spec = call->request.mutable_spec();
  spec->set_model("resnet50");
  spec->set_devices(gpus);
  spec->set_precision(v1::PRECISION_FP32);
  spec->set_batch_size(256);
  spec->set_iterations(options_.job_iterations);
  spec->set_warmup_iterations(std::min(options_.warmup_iterations, options_.job_iterations - 1));
  spec->set_image_size(224);
  spec->set_name(absl::StrCat("fleet_sim ", gpus, " GPUs"));
  (*spec->mutable_labels())["bench"] = "fleet_sim";
  const std::string request_id = absl::StrCat("fleet-sim-", run_id_, "-", ++sequence_);
  spec->set_request_id(request_id);
  const int per_node = options_.gpus_per_node;
  if (gpus >= per_node && gpus % per_node == 0) {
    spec->set_nodes(gpus / per_node);
    spec->set_devices_per_node(per_node);
  }
  call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  call->start = Clock::now();
  jobs_->Submitting(request_id, gpus, call->start);
  ++in_flight_;
  stub_->async()->SubmitJob(&call->context, &call->request, &call->response,
                            [this, call, request_id](grpc::Status status) {
                              recorder_->Rpc("SubmitJob", status, Clock::now() - call->start);
                              if (status.ok()) {
                                jobs_->Submitted(request_id, call->response.job_id());
                              } else {
                                jobs_->SubmitFailed(request_id);
                                std::fprintf(stderr, "fleet_sim: SubmitJob: %s\n",
                                             status.error_message().c_str());
                              }
                              delete call;
                              --in_flight_;
                            });
}

void Submitter::PollStale() {
  const double expected = options_.job_iterations / options_.iter_rate;
  Clock::time_point before =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(expected * 3 + 60));
  for (const std::string& job_id : jobs_->OutstandingSince(before)) {
    if (stop_.load()) return;
    v1::GetJobRequest request;
    request.set_job_id(job_id);
    v1::JobStatus status;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    Clock::time_point start = Clock::now();
    grpc::Status rpc = stub_->GetJob(&context, request, &status);
    recorder_->Rpc("GetJob", rpc, Clock::now() - start);
    if (rpc.ok() && status.state() != v1::JOB_STATE_QUEUED &&
        status.state() != v1::JOB_STATE_RUNNING) {
      jobs_->Ended(job_id);
    }
  }
}

}  // namespace bench::fleetsim

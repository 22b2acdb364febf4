// The per-rank count of one simulated agent's acknowledged batches (sim_agent.h): taken
// or refused by benchd, and the re-sends (UploadSamples.resolve) that tell which where a
// batch holding several ranks' samples was refused in part.
#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "tests/bench/fleet_sim/retry_policy.h"
#include "tests/bench/fleet_sim/sim_agent.h"

namespace bench::fleetsim {
namespace v1 = benchfleet::v1;

void SimAgent::Attribute(const v1::UploadSamplesRequest& batch, int rejected) {
  // (job, attempt, rank, readings?) -> its samples in the batch.
  std::map<std::tuple<std::string, int, int, bool>, int> units;
  for (const auto& s : batch.samples()) ++units[{s.job_id(), s.attempt(), s.rank(), false}];
  for (const auto& g : batch.gpu_samples()) ++units[{g.job_id(), g.attempt(), g.rank(), true}];
  const int total = batch.samples_size() + batch.gpu_samples_size();
  auto record = [&](const std::tuple<std::string, int, int, bool>& unit, int n, int refused) {
    const auto& [job, attempt, rank, readings] = unit;
    recorder_->ByRank(job, attempt, rank, readings ? 0 : n - refused, readings ? n - refused : 0,
                      readings ? 0 : refused, readings ? refused : 0);
  };
  if (rejected <= 0 || rejected >= total || units.size() == 1) {
    for (const auto& [unit, n] : units) {
      record(unit, n, rejected <= 0 ? 0 : std::min(n, rejected));
    }
    return;
  }
  for (const auto& [unit, n] : units) {
    const auto& [job, attempt, rank, readings] = unit;
    Resolve resolve{{}, job, attempt, rank, readings, n};
    if (readings) {
      for (const auto& g : batch.gpu_samples()) {
        if (g.job_id() == job && g.attempt() == attempt && g.rank() == rank) {
          *resolve.request.add_gpu_samples() = g;
        }
      }
    } else {
      for (const auto& s : batch.samples()) {
        if (s.job_id() == job && s.attempt() == attempt && s.rank() == rank) {
          *resolve.request.add_samples() = s;
        }
      }
    }
    resolve_samples_ += n;
    resolve_.push_back(std::move(resolve));
  }
}

void SimAgent::SendResolve(Clock::time_point now) {
  (void)now;
  Resolve& resolve = resolve_.front();
  resolve.request.set_agent(name_);
  resolve.request.set_batch_id(next_batch_id_++);
  upload_in_flight_ = true;
  auto* call = new Call<v1::UploadSamplesRequest, v1::UploadSamplesResponse>;
  call->context.set_deadline(Deadline(60));
  ++outstanding_;
  stub_->async()->UploadSamples(
      &call->context, &resolve.request, &call->response, [this, call](grpc::Status status) {
        Clock::time_point done = Clock::now();
        recorder_->Rpc("UploadSamples.resolve", status, done - call->start);
        {
          std::lock_guard<std::recursive_mutex> lock(mu_);
          --outstanding_;
          idle_cv_.notify_all();
          upload_in_flight_ = false;
          const bool give_up = !status.ok() && !Transient(status) &&
                               ++upload_permanent_failures_ >= kMaxPermanentFailures;
          if (status.ok() || give_up) {
            Resolve& resolve = resolve_.front();
            if (status.ok()) {
              const int refused = std::min(resolve.samples, call->response.rejected());
              recorder_->ByRank(resolve.job_id, resolve.attempt, resolve.rank,
                                resolve.readings ? 0 : resolve.samples - refused,
                                resolve.readings ? resolve.samples - refused : 0,
                                resolve.readings ? 0 : refused, resolve.readings ? refused : 0);
            } else {
              recorder_->Unattributed(resolve.samples);
            }
            resolve_samples_ -= resolve.samples;
            resolve_.pop_front();
            upload_backoff_ = Clock::duration::zero();
            upload_permanent_failures_ = 0;
          } else {
            upload_retry_at_ =
                done + std::min<Clock::duration>(upload_backoff_ == Clock::duration::zero()
                                                     ? Clock::duration(kMinBackoff)
                                                     : upload_backoff_,
                                                 kMaxBackoff);
            upload_backoff_ = std::min<Clock::duration>((upload_retry_at_ - done) * 2, kMaxBackoff);
          }
        }
        delete call;
        Wake();
      });
}

}  // namespace bench::fleetsim

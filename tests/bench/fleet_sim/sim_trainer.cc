// The simulated trainers and GPU sampler of one agent (sim_agent.h): the samples due by a
// time, and the final report of each rank whose samples were all acknowledged.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "tests/bench/fleet_sim/sim_agent.h"

namespace bench::fleetsim {
namespace v1 = benchfleet::v1;
namespace {

// The wall clock of a steady time point (for the samples' time stamps).
int64_t WallNanos(Clock::time_point t) {
  static const auto offset = std::chrono::system_clock::now().time_since_epoch() -
                             std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                 Clock::now().time_since_epoch());
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::duration_cast<std::chrono::system_clock::duration>(t.time_since_epoch()) +
             offset)
      .count();
}

}  // namespace

void SimAgent::Generate(Clock::time_point now) {
  if (!training_) return;
  int64_t iterations = 0, readings = 0;
  auto push = [&](Sample sample, Clock::time_point at) {
    if (queue_.empty())
      queue_since_ = at;
    else
      queue_since_ = std::min(queue_since_, at);
    queue_.push_back(std::move(sample));
    return next_ticket_++;
  };
  auto reading = [&](Rank& rank, Clock::time_point at) {
    v1::GpuSample g;
    g.set_job_id(rank.job_id);
    g.set_attempt(rank.attempt);
    g.set_rank(rank.rank);
    g.set_seq(++rank.seq);
    g.set_gpu_uuid(inventory_.gpus(rank.gpu % inventory_.gpus_size()).uuid());
    g.set_gpu_index(rank.gpu);
    g.set_time_unix_ns(WallNanos(at));
    g.set_power_w(650 + rank.seq % 7);
    g.set_power_average_w(640);
    g.set_energy_j(1e6 + 650.0 * Seconds(at - rank.start));
    g.set_sm_clock_mhz(1980);
    g.set_memory_clock_mhz(2619);
    g.set_temperature_c(65);
    g.set_gpu_utilization_pct(98);
    g.set_memory_utilization_pct(60);
    g.set_memory_used_bytes(int64_t{60} << 30);
    g.set_throttle_reasons(0);
    g.set_pcie_gen(5);
    g.set_pcie_gen_max(5);
    g.set_pcie_width(16);
    g.set_pcie_width_max(16);
    g.set_max_sm_clock_mhz(1980);
    g.set_max_memory_clock_mhz(2619);
    g.set_power_limit_w(700);
    g.set_ecc_corrected(0);
    g.set_ecc_uncorrected(0);
    g.set_xid_errors(0);
    rank.last_ticket = push(std::move(g), at);
    ++readings;
  };
  auto end_of = [&](const Rank& rank) {
    return rank.cancelled ? rank.cancel_at
                          : rank.start + FromSeconds(rank.iterations / options_.iter_rate);
  };
  // The node's sampler: every live rank's GPU per tick.
  if (options_.reading_hz > 0) {
    while (true) {
      Clock::time_point tick =
          sampler_start_ + FromSeconds((sampler_tick_ + 1) / options_.reading_hz);
      if (tick > now) break;
      ++sampler_tick_;
      for (Rank& rank : ranks_) {
        if (!rank.ended && rank.start < tick && tick < end_of(rank)) reading(rank, tick);
      }
    }
  }
  const double step = 1.0 / options_.iter_rate;
  for (Rank& rank : ranks_) {
    if (rank.ended) continue;
    while (!rank.cancelled && rank.next_iteration <= rank.iterations) {
      const int k = rank.next_iteration;
      Clock::time_point at = rank.start + FromSeconds(k * step);
      if (at > now) break;
      v1::IterationSample s;
      s.set_job_id(rank.job_id);
      s.set_attempt(rank.attempt);
      s.set_rank(rank.rank);
      s.set_iteration(k);
      s.set_step_time_s(step);
      s.set_images(rank.batch_size);
      s.set_loss(6.9 / std::sqrt(static_cast<double>(k)));
      s.set_data_time_s(0.0002);
      s.set_elapsed_s(k * step);
      s.set_warmup(k <= rank.warmup);
      s.set_received_unix_ns(WallNanos(at));
      s.set_compute_time_s(step - 0.0002);
      const double comm = rank.world_size > 1 ? 0.04 * step : 0;
      s.set_optimizer_time_s(0.02 * step);
      s.set_allreduce_wait_time_s(comm);
      s.set_forward_backward_time_s(step - 0.0002 - 0.02 * step - comm);
      rank.last_ticket = push(std::move(s), at);
      ++rank.next_iteration;
      ++iterations;
    }
    Clock::time_point end = end_of(rank);
    if (end <= now) {
      if (options_.reading_hz > 0) reading(rank, end);  // the sampler's final reading
      rank.ended = true;
    }
  }
  if (iterations + readings > 0) recorder_->Generated(iterations, readings);
}

void SimAgent::QueueFinalReports() {
  for (Rank& rank : ranks_) {
    if (!rank.ended || rank.final_queued || rank.last_ticket > acked_through_) continue;
    rank.final_queued = true;
    Report report;
    report.request.set_job_id(rank.job_id);
    report.request.set_attempt(rank.attempt);
    v1::RankReport* r = report.request.add_ranks();
    r->set_rank(rank.rank);
    r->set_parameters(kResNet50Parameters);
    r->set_precision("fp32");
    r->set_simulated(true);
    (*r->mutable_versions())["bench_train"] = "fleet_sim";
    if (rank.cancelled) {
      r->set_state(v1::RANK_STATE_CANCELLED);
      r->set_exit_code(-15);
      r->set_message(rank.cancel_reason);
    } else {
      r->set_state(v1::RANK_STATE_SUCCEEDED);
      v1::RankSummary* summary = r->mutable_summary();
      const int measured = rank.iterations - rank.warmup;
      const double step = 1.0 / options_.iter_rate;
      summary->set_rank(rank.rank);
      summary->set_measured_iterations(measured);
      summary->set_measured_images(int64_t{measured} * rank.batch_size);
      summary->set_window_s(measured * step);
      summary->set_step_time_median_s(step);
      summary->set_synthetic_images_per_second(rank.batch_size / step);
      report.succeeded_world_size = rank.world_size;
    }
    report.final_rank = rank.rank;
    reports_.push_back(std::move(report));
  }
}

}  // namespace bench::fleetsim

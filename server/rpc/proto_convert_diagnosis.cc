// The seam for a job's diagnosis (server/results/job_diagnosis.h → benchfleet.v1's
// JobDiagnosis): causes and outcomes by their stable names, with the cause's words.
#include "server/rpc/proto_convert.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
namespace dx = diagnosis;

void ToProto(const dx::StragglerReport& r, v1::StragglerReport* proto) {
  proto->set_applicable(r.applicable);
  proto->set_reason(r.reason);
  proto->set_ranks(r.ranks);
  proto->set_iterations(r.iterations);
  proto->set_first_iteration(r.first_iteration);
  proto->set_last_iteration(r.last_iteration);
  for (const dx::Straggler& s : r.stragglers) {
    v1::Straggler* out = proto->add_stragglers();
    out->set_rank(s.rank);
    out->set_node(s.node);
    out->set_gpu_index(s.gpu_index);
    out->set_gpu_uuid(s.gpu_uuid);
    for (const dx::SlowPhase& p : s.phases) {
      v1::SlowPhase* phase = out->add_phases();
      phase->set_first_iteration(p.first_iteration);
      phase->set_last_iteration(p.last_iteration);
      phase->set_mean_excess(p.mean_excess);
      phase->set_lost_s(p.lost_s);
    }
    out->set_mean_excess(s.mean_excess);
    out->set_lost_s(s.lost_s);
  }
  proto->set_lost_s(r.lost_s);
  proto->set_lost_fraction(r.lost_fraction);
  proto->set_window_step_time_s(r.window_step_time_s);
  proto->set_jitter_s(r.jitter_s);
}

void ToProto(const dx::ExcessReport& r, v1::ExcessReport* proto) {
  proto->set_applicable(r.applicable);
  proto->set_reason(r.reason);
  proto->set_ideal_rule(r.ideal_rule);
  proto->set_iterations(r.iterations);
  proto->set_median_step_s(r.median_step_s);
  proto->set_mad_step_s(r.mad_step_s);
  proto->set_ideal_step_s(r.ideal_step_s);
  proto->set_total_step_s(r.total_step_s);
  proto->set_excess_s(r.excess_s);
  proto->set_excess_fraction(r.excess_fraction);
  for (const dx::CauseTime& c : r.by_cause) {
    v1::CauseTime* out = proto->add_by_cause();
    out->set_cause(dx::CauseName(c.cause));
    out->set_description(dx::CauseDescription(c.cause));
    out->set_seconds(c.seconds);
    out->set_fraction(c.fraction);
  }
  for (const dx::RankCauseTime& c : r.by_rank) {
    v1::RankCauseTime* out = proto->add_by_rank();
    out->set_rank(c.rank);
    out->set_node(c.node);
    out->set_gpu_index(c.gpu_index);
    out->set_gpu_uuid(c.gpu_uuid);
    out->set_cause(dx::CauseName(c.cause));
    out->set_description(dx::CauseDescription(c.cause));
    out->set_seconds(c.seconds);
    out->set_fraction(c.fraction);
  }
  for (const dx::CappedWithoutCost& c : r.capped_without_cost) {
    v1::CappedWithoutCost* out = proto->add_capped_without_cost();
    out->set_rank(c.rank);
    out->set_node(c.node);
    out->set_gpu_index(c.gpu_index);
    out->set_gpu_uuid(c.gpu_uuid);
    out->set_iterations(c.iterations);
  }
}

}  // namespace

void ToProto(const JobDiagnosis& d, v1::JobDiagnosis* proto) {
  proto->set_attempt(d.attempt);
  proto->set_available(d.available);
  proto->set_note(d.note);
  proto->set_failing_checks(d.FailingChecks());
  if (!d.available) return;
  ToProto(d.stragglers, proto->mutable_stragglers());
  ToProto(d.excess, proto->mutable_excess());
  for (const dx::Check& c : d.checks) {
    v1::DiagnosisCheck* out = proto->add_checks();
    out->set_name(c.name);
    out->set_outcome(dx::CheckOutcomeName(c.outcome));
    if (c.figure) out->set_figure(*c.figure);
    if (c.bound) out->set_bound(*c.bound);
    out->set_unit(c.unit);
    out->set_detail(c.detail);
  }
}

}  // namespace bench

// The diagnosis section as benchctl status, benchctl diagnose and the job page show it.
#include "report/diagnosis_view.h"

#include <gtest/gtest.h>

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;

v1::JobDiagnosis Planted() {
  v1::JobDiagnosis d;
  d.set_attempt(1);
  d.set_available(true);
  v1::StragglerReport* s = d.mutable_stragglers();
  s->set_applicable(true);
  s->set_ranks(32);
  s->set_iterations(500);
  s->set_first_iteration(11);
  s->set_last_iteration(510);
  s->set_lost_s(0.4);
  s->set_lost_fraction(0.0123);
  v1::Straggler* st = s->add_stragglers();
  st->set_rank(13);
  st->set_node("agent-2");
  st->set_gpu_index(-1);
  v1::SlowPhase* p = st->add_phases();
  p->set_first_iteration(201);
  p->set_last_iteration(300);
  p->set_mean_excess(0.08);
  st->set_lost_s(0.4);
  v1::ExcessReport* e = d.mutable_excess();
  e->set_applicable(true);
  e->set_ideal_rule("mean of steps <= median + 3 MAD");
  e->set_ideal_step_s(0.0105);
  e->set_total_step_s(5.5);
  e->set_excess_s(0.5);
  e->set_excess_fraction(0.5 / 5.5);
  v1::CauseTime* c = e->add_by_cause();
  c->set_cause("waiting_for_rank");
  c->set_description("waiting for another rank");
  c->set_seconds(0.5);
  c->set_fraction(1);
  v1::RankCauseTime* rc = e->add_by_rank();
  rc->set_rank(13);
  rc->set_node("agent-2");
  rc->set_gpu_index(-1);
  rc->set_description("waiting for another rank");
  rc->set_seconds(0.5);
  rc->set_fraction(1);
  v1::CappedWithoutCost* capped = e->add_capped_without_cost();
  capped->set_rank(4);
  capped->set_node("agent-1");
  capped->set_gpu_index(4);
  capped->set_iterations(120);
  v1::DiagnosisCheck* pass = d.add_checks();
  pass->set_name("steady_cv");
  pass->set_outcome("pass");
  pass->set_figure(2.5);
  pass->set_bound(10);
  pass->set_unit("%");
  pass->set_detail("step-time CV");
  v1::DiagnosisCheck* na = d.add_checks();
  na->set_name("telemetry");
  na->set_outcome("not_applicable");
  na->set_detail("CPU slots");
  v1::DiagnosisCheck* fail = d.add_checks();
  fail->set_name("same_iterations");
  fail->set_outcome("fail");
  fail->set_figure(3);
  fail->set_bound(0);
  fail->set_unit("pairs");
  fail->set_detail("missing");
  d.set_failing_checks(1);
  return d;
}

TEST(DiagnosisText, StragglersExcessByCauseAndChecks) {
  EXPECT_EQ(DiagnosisText(Planted()),
            "stragglers: 1 rank lost 0.40 s (1.2 % of the window; 32 ranks, iterations "
            "11-510)\n"
            "  RANK  NODE     GPU  SLOW PHASES (iterations: excess)  LOST S\n"
            "    13  agent-2  cpu  201-300: +8.0 %                    0.400\n"
            "excess: 0.500 s above the ideal step (9.1 % of 5.50 s measured); ideal 0.0105 "
            "s/step: mean of steps <= median + 3 MAD\n"
            "  CAUSE                     SECONDS  % OF EXCESS\n"
            "  waiting for another rank    0.500        100.0\n"
            "  by rank:\n"
            "    RANK  NODE     GPU  CAUSE                     SECONDS  % OF EXCESS\n"
            "      13  agent-2  cpu  waiting for another rank    0.500        100.0\n"
            "  power capped at full clock, no cost: rank 4 (agent-1, GPU 4, 120 iterations)\n"
            "checks: 1 pass, 1 fail, 1 not applicable\n"
            "  CHECK            OUTCOME   FIGURE    BOUND  DETAIL\n"
            "  steady_cv        pass       2.5 %     10 %  step-time CV\n"
            "  telemetry        n/a            -        -  CPU slots\n"
            "  same_iterations  FAIL     3 pairs  0 pairs  missing\n");
}

TEST(DiagnosisText, NoStragglerAndNothingThatDoesNotApply) {
  v1::JobDiagnosis d = Planted();
  d.mutable_stragglers()->clear_stragglers();
  d.mutable_excess()->set_applicable(false);
  d.mutable_excess()->set_reason("no measured iteration");
  std::string text = DiagnosisText(d);
  EXPECT_EQ(text.substr(0, text.find("checks:")),
            "stragglers: none (32 ranks, iterations 11-510)\n"
            "excess: not applicable (no measured iteration)\n");
}

TEST(DiagnosisText, NoDataSaysWhy) {
  v1::JobDiagnosis d;
  d.set_note("no data: the job ended before this benchd diagnosed jobs");
  EXPECT_EQ(DiagnosisText(d), "no data: the job ended before this benchd diagnosed jobs\n");
  EXPECT_EQ(DiagnosisText(v1::JobDiagnosis()), "no data\n");
}

}  // namespace
}  // namespace bench::report

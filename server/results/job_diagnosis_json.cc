#include "server/results/job_diagnosis_json.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace bench {
namespace {

using nlohmann::json;
namespace dx = diagnosis;

constexpr dx::Cause kCauses[] = {
    dx::Cause::kDataWait,      dx::Cause::kHwThermal,      dx::Cause::kSwThermal,
    dx::Cause::kHwPowerBrake,  dx::Cause::kHwSlowdown,     dx::Cause::kPowerCap,
    dx::Cause::kClockBelowMax, dx::Cause::kWaitingForRank, dx::Cause::kUnexplained};
constexpr dx::CheckOutcome kOutcomes[] = {dx::CheckOutcome::kPass, dx::CheckOutcome::kFail,
                                          dx::CheckOutcome::kNotApplicable};

dx::Cause CauseNamed(const std::string& name) {
  for (dx::Cause c : kCauses) {
    if (name == dx::CauseName(c)) return c;
  }
  throw std::invalid_argument(absl::StrCat("unknown cause \"", name, "\""));
}

dx::CheckOutcome OutcomeNamed(const std::string& name) {
  for (dx::CheckOutcome o : kOutcomes) {
    if (name == dx::CheckOutcomeName(o)) return o;
  }
  throw std::invalid_argument(absl::StrCat("unknown check outcome \"", name, "\""));
}

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::optional<double> OptionalOf(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<double>();
}

json PhaseJson(const dx::SlowPhase& p) {
  return {{"first_iteration", p.first_iteration},
          {"last_iteration", p.last_iteration},
          {"mean_excess", p.mean_excess},
          {"lost_s", p.lost_s}};
}

json StragglersJson(const dx::StragglerReport& r) {
  json stragglers = json::array();
  for (const dx::Straggler& s : r.stragglers) {
    json phases = json::array();
    for (const dx::SlowPhase& p : s.phases) phases.push_back(PhaseJson(p));
    stragglers.push_back({{"rank", s.rank},
                          {"node", s.node},
                          {"gpu_index", s.gpu_index},
                          {"gpu_uuid", s.gpu_uuid},
                          {"phases", phases},
                          {"mean_excess", s.mean_excess},
                          {"lost_s", s.lost_s}});
  }
  return {{"applicable", r.applicable},
          {"reason", r.reason},
          {"ranks", r.ranks},
          {"iterations", r.iterations},
          {"first_iteration", r.first_iteration},
          {"last_iteration", r.last_iteration},
          {"stragglers", stragglers},
          {"lost_s", r.lost_s},
          {"lost_fraction", r.lost_fraction},
          {"window_step_time_s", r.window_step_time_s},
          {"jitter_s", r.jitter_s}};
}

json ExcessJson(const dx::ExcessReport& r) {
  json by_cause = json::array();
  for (const dx::CauseTime& c : r.by_cause) {
    by_cause.push_back(
        {{"cause", dx::CauseName(c.cause)}, {"seconds", c.seconds}, {"fraction", c.fraction}});
  }
  json by_rank = json::array();
  for (const dx::RankCauseTime& c : r.by_rank) {
    by_rank.push_back({{"rank", c.rank},
                       {"node", c.node},
                       {"gpu_index", c.gpu_index},
                       {"gpu_uuid", c.gpu_uuid},
                       {"cause", dx::CauseName(c.cause)},
                       {"seconds", c.seconds},
                       {"fraction", c.fraction}});
  }
  json capped = json::array();
  for (const dx::CappedWithoutCost& c : r.capped_without_cost) {
    capped.push_back({{"rank", c.rank},
                      {"node", c.node},
                      {"gpu_index", c.gpu_index},
                      {"gpu_uuid", c.gpu_uuid},
                      {"iterations", c.iterations}});
  }
  return {{"applicable", r.applicable},
          {"reason", r.reason},
          {"ideal_rule", r.ideal_rule},
          {"iterations", r.iterations},
          {"median_step_s", r.median_step_s},
          {"mad_step_s", r.mad_step_s},
          {"ideal_step_s", r.ideal_step_s},
          {"total_step_s", r.total_step_s},
          {"excess_s", r.excess_s},
          {"excess_fraction", r.excess_fraction},
          {"by_cause", by_cause},
          {"by_rank", by_rank},
          {"capped_without_cost", capped}};
}

json ChecksJson(const std::vector<dx::Check>& checks) {
  json out = json::array();
  for (const dx::Check& c : checks) {
    out.push_back({{"name", c.name},
                   {"outcome", dx::CheckOutcomeName(c.outcome)},
                   {"figure", Optional(c.figure)},
                   {"bound", Optional(c.bound)},
                   {"unit", c.unit},
                   {"detail", c.detail}});
  }
  return out;
}

dx::StragglerReport StragglersOf(const json& j) {
  dx::StragglerReport r;
  r.applicable = j.at("applicable").get<bool>();
  r.reason = j.at("reason").get<std::string>();
  r.ranks = j.at("ranks").get<int>();
  r.iterations = j.at("iterations").get<int>();
  r.first_iteration = j.at("first_iteration").get<int>();
  r.last_iteration = j.at("last_iteration").get<int>();
  for (const json& s : j.at("stragglers")) {
    dx::Straggler st;
    st.rank = s.at("rank").get<int>();
    st.node = s.at("node").get<std::string>();
    st.gpu_index = s.at("gpu_index").get<int>();
    st.gpu_uuid = s.at("gpu_uuid").get<std::string>();
    for (const json& p : s.at("phases")) {
      dx::SlowPhase phase;
      phase.first_iteration = p.at("first_iteration").get<int>();
      phase.last_iteration = p.at("last_iteration").get<int>();
      phase.mean_excess = p.at("mean_excess").get<double>();
      phase.lost_s = p.at("lost_s").get<double>();
      st.phases.push_back(phase);
    }
    st.mean_excess = s.at("mean_excess").get<double>();
    st.lost_s = s.at("lost_s").get<double>();
    r.stragglers.push_back(std::move(st));
  }
  r.lost_s = j.at("lost_s").get<double>();
  r.lost_fraction = j.at("lost_fraction").get<double>();
  r.window_step_time_s = j.at("window_step_time_s").get<double>();
  r.jitter_s = j.at("jitter_s").get<double>();
  return r;
}

dx::ExcessReport ExcessOf(const json& j) {
  dx::ExcessReport r;
  r.applicable = j.at("applicable").get<bool>();
  r.reason = j.at("reason").get<std::string>();
  r.ideal_rule = j.at("ideal_rule").get<std::string>();
  r.iterations = j.at("iterations").get<int>();
  r.median_step_s = j.at("median_step_s").get<double>();
  r.mad_step_s = j.at("mad_step_s").get<double>();
  r.ideal_step_s = j.at("ideal_step_s").get<double>();
  r.total_step_s = j.at("total_step_s").get<double>();
  r.excess_s = j.at("excess_s").get<double>();
  r.excess_fraction = j.at("excess_fraction").get<double>();
  for (const json& c : j.at("by_cause")) {
    r.by_cause.push_back({CauseNamed(c.at("cause").get<std::string>()),
                          c.at("seconds").get<double>(), c.at("fraction").get<double>()});
  }
  for (const json& c : j.at("by_rank")) {
    dx::RankCauseTime t;
    t.rank = c.at("rank").get<int>();
    t.node = c.at("node").get<std::string>();
    t.gpu_index = c.at("gpu_index").get<int>();
    t.gpu_uuid = c.at("gpu_uuid").get<std::string>();
    t.cause = CauseNamed(c.at("cause").get<std::string>());
    t.seconds = c.at("seconds").get<double>();
    t.fraction = c.at("fraction").get<double>();
    r.by_rank.push_back(std::move(t));
  }
  for (const json& c : j.at("capped_without_cost")) {
    dx::CappedWithoutCost t;
    t.rank = c.at("rank").get<int>();
    t.node = c.at("node").get<std::string>();
    t.gpu_index = c.at("gpu_index").get<int>();
    t.gpu_uuid = c.at("gpu_uuid").get<std::string>();
    t.iterations = c.at("iterations").get<int>();
    r.capped_without_cost.push_back(std::move(t));
  }
  return r;
}

}  // namespace

std::string DiagnosisToJson(const JobDiagnosis& d) {
  json j = {{"attempt", d.attempt},
            {"available", d.available},
            {"note", d.note},
            {"stragglers", StragglersJson(d.stragglers)},
            {"excess", ExcessJson(d.excess)},
            {"checks", ChecksJson(d.checks)}};
  return j.dump();
}

absl::StatusOr<JobDiagnosis> DiagnosisFromJson(std::string_view text) {
  try {
    json j = json::parse(text);
    JobDiagnosis d;
    d.attempt = j.at("attempt").get<int>();
    d.available = j.at("available").get<bool>();
    d.note = j.at("note").get<std::string>();
    d.stragglers = StragglersOf(j.at("stragglers"));
    d.excess = ExcessOf(j.at("excess"));
    for (const json& c : j.at("checks")) {
      dx::Check check;
      check.name = c.at("name").get<std::string>();
      check.outcome = OutcomeNamed(c.at("outcome").get<std::string>());
      check.figure = OptionalOf(c.at("figure"));
      check.bound = OptionalOf(c.at("bound"));
      check.unit = c.at("unit").get<std::string>();
      check.detail = c.at("detail").get<std::string>();
      d.checks.push_back(std::move(check));
    }
    return d;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("stored diagnosis: ", e.what()));
  }
}

}  // namespace bench

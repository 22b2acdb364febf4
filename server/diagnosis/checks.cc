#include "server/diagnosis/checks.h"

#include <tuple>

namespace bench::diagnosis {

const char* CheckOutcomeName(CheckOutcome outcome) {
  switch (outcome) {
    case CheckOutcome::kPass: return "pass";
    case CheckOutcome::kFail: return "fail";
    case CheckOutcome::kNotApplicable: return "not_applicable";
  }
  return "not_applicable";
}

bool Check::operator==(const Check& o) const {
  return std::tie(name, outcome, figure, bound, unit, detail) ==
         std::tie(o.name, o.outcome, o.figure, o.bound, o.unit, o.detail);
}

bool ChecksPass(const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    if (c.outcome == CheckOutcome::kFail) return false;
  }
  return true;
}

}  // namespace bench::diagnosis

#include "common/allocation_text.h"

namespace bench {

std::string DescribeAllocation(const AllocationText& allocation) {
  std::string text(allocation.system == "slurm" ? std::string_view("Slurm") : allocation.system);
  text.append(" job ").append(allocation.id).append(allocation.ended ? " ended: " : " ");
  text.append(allocation.state);
  if (!allocation.reason.empty()) text.append(" (").append(allocation.reason).append(")");
  if (!allocation.nodes.empty()) text.append(" on ").append(allocation.nodes);
  return text;
}

}  // namespace bench

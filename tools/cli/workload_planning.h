// What `tiletune plan` and `tune --workload` share: the plan of a workload file against a database
// (tuner/runtime/workload_plan.h), and how it is told.
#pragma once

#include <string>
#include <vector>

#include "tuner/runtime/workload_plan.h"

namespace tiletune::cli {

struct WorkloadPlanning {
  std::string workload_path;
  std::string db;
  std::string gpu_name;                // whose records count as tuned; must be named
  std::vector<std::string> templates;  // empty: every template recorded on the GPU
  std::size_t budget = 0;
};

// The plan, with its templates filled in; throws UsageError for a bad workload file.
struct PlannedWorkload {
  runtime::WorkloadPlan plan;
  std::vector<std::string> templates;
  std::size_t workload_shapes = 0;
  double calls = 0;
};
PlannedWorkload plan_workload(const WorkloadPlanning& planning);

// Several lines: what was weighed, what is tuned already, the shapes to tune and what they cover.
std::string describe(const PlannedWorkload& planned, const WorkloadPlanning& planning);

}  // namespace tiletune::cli

// Which shapes of a workload to tune when there is time for only some of them: the shapes that
// leave the least of the workload's time far from a tuned shape, where the library's choice rests
// on the performance model's reach (`tiletune plan`, `tune --workload`).
//
// Every workload shape weighs its calls times its cost: the performance model's predicted time of
// the library's choice there (the fastest over the templates planned), or 2MNK where some shape has
// no prediction (a database without records of those templates on the GPU), so that both units are
// never mixed. A shape's distance is log_distance (gemm_shape.h) to the nearest shape tuned for
// every planned template, capped at kFarDistance. The plan picks, one at a time, the workload shape
// whose tuning lowers the weighted sum of distances most (the greedy answer to the facility
// location problem, within a factor 1 - 1/e of the best set of that size), so a budget of N shapes
// is the first N of a longer plan.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::runtime {

// Beyond it a tuned shape tells the model no more than none: 2^2 in each of M, N and K at once.
inline constexpr double kFarDistance = 3.4641016151377544;  // sqrt(3 * 2^2)

struct WorkloadShape {
  GemmShape shape;
  double calls = 1;  // how often the workload runs it (a weight; any positive number)
};

// A workload file: one shape a line, "MxNxK" or "MxNxK CALLS", '#' starting a comment; the same
// shape twice adds its calls. Throws WorkloadError "PATH:LINE: cause" on the first bad line, and
// when the file holds no shape.
class WorkloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
std::vector<WorkloadShape> read_workload(const std::filesystem::path& path);

struct WorkloadRequest {
  std::vector<WorkloadShape> workload;
  std::vector<std::string> templates;  // those to be tuned; their records count as tuned shapes
  std::string gpu_name;                // whose records; empty or unrecorded: none are tuned
  std::size_t budget = 0;              // shapes to plan at most
};

struct PlannedShape {
  GemmShape shape;
  double share = 0;      // of the workload's weight, the part whose nearest tuned shape it becomes
  int shapes_nearest = 0;  // workload shapes whose nearest tuned shape it becomes
};

struct WorkloadPlan {
  std::vector<PlannedShape> to_tune;  // in the order picked: each the best next one
  std::vector<GemmShape> already_tuned;  // workload shapes recorded for every template planned
  bool weighed_by_model = false;         // else by 2MNK
  double total_weight = 0;
  // The weighted mean distance to the nearest tuned shape, before and after the plan; and the
  // share of the weight within kNearDistance of one.
  double mean_distance_before = 0, mean_distance_after = 0;
  double near_share_before = 0, near_share_after = 0;
};
inline constexpr double kNearDistance = 0.5;  // about 1.4x in one of M, N, K

// Throws WorkloadError when the workload is empty.
WorkloadPlan plan_workload(const RecordSet& records, PerformanceModels& models,
                           const WorkloadRequest& request);

}  // namespace tiletune::runtime

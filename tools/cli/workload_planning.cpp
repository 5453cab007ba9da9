#include "tools/cli/workload_planning.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/cli/command_line.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::cli {

PlannedWorkload plan_workload(const WorkloadPlanning& planning) {
  PlannedWorkload planned;
  runtime::WorkloadRequest request;
  try {
    request.workload = runtime::read_workload(planning.workload_path);
  } catch (const runtime::WorkloadError& e) {
    throw UsageError(e.what());
  }
  // A database not made yet has nothing tuned: every shape is as far as can be.
  runtime::RecordSet records;
  if (std::filesystem::exists(planning.db)) records = runtime::load_database_records(planning.db);
  request.templates = planning.templates;
  if (request.templates.empty()) {
    std::set<std::string> recorded;
    for (const runtime::RecordedChoice& c : records.choices) {
      if (records.gpus[c.gpu].name == planning.gpu_name) recorded.insert(records.templates[c.templ].name);
    }
    request.templates.assign(recorded.begin(), recorded.end());
  }
  request.gpu_name = planning.gpu_name;
  request.budget = planning.budget;
  runtime::PerformanceModels models(records);
  planned.plan = runtime::plan_workload(records, models, request);
  planned.templates = request.templates;
  planned.workload_shapes = request.workload.size();
  for (const runtime::WorkloadShape& w : request.workload) planned.calls += w.calls;
  return planned;
}

std::string describe(const PlannedWorkload& planned, const WorkloadPlanning& planning) {
  const runtime::WorkloadPlan& plan = planned.plan;
  std::string text = fmt::format(
      "{}: {} shapes, {:g} calls; weighed by {}\n", planning.workload_path, planned.workload_shapes,
      planned.calls,
      plan.weighed_by_model
          ? fmt::format("the performance model's predicted time ({:.3f} ms for the whole workload)", plan.total_weight)
          : "2MNK (the performance model has no prediction at every shape: too few records of these templates on this GPU)");
  text += fmt::format("tuned in {} on {}: {}\n", planning.db, planning.gpu_name.empty() ? "no GPU" : planning.gpu_name,
                      planned.templates.empty() ? "no template" : fmt::format("{}", fmt::join(planned.templates, ", ")));
  if (!plan.already_tuned.empty()) {
    std::vector<std::string> shapes;
    for (const GemmShape& s : plan.already_tuned) shapes.push_back(s.to_string());
    text += fmt::format("already tuned: {}\n", fmt::join(shapes, ", "));
  }
  if (plan.to_tune.empty()) {
    text += planning.budget == 0 ? "nothing to tune: the budget is 0\n" : "nothing to tune: every workload shape is tuned\n";
  } else {
    text += fmt::format("tune {} shape{} (budget {}), the most useful first:\n", plan.to_tune.size(),
                        plan.to_tune.size() == 1 ? "" : "s", planning.budget);
    for (std::size_t i = 0; i < plan.to_tune.size(); ++i) {
      const runtime::PlannedShape& p = plan.to_tune[i];
      text += fmt::format("  {:>3}  {:<20} nearest tuned shape of {} workload shape{}, {:.1f}% of its {}\n", i + 1,
                          p.shape.to_string(), p.shapes_nearest, p.shapes_nearest == 1 ? "" : "s", 100 * p.share,
                          plan.weighed_by_model ? "time" : "flops");
    }
  }
  text += fmt::format(
      "within {} of a tuned shape: {:.1f}% of the workload's {} before, {:.1f}% after; weighted mean "
      "distance {:.2f} -> {:.2f}\n",
      runtime::kNearDistance, 100 * plan.near_share_before, plan.weighed_by_model ? "time" : "flops",
      100 * plan.near_share_after, plan.mean_distance_before, plan.mean_distance_after);
  return text;
}

}  // namespace tiletune::cli

#include "tuner/runtime/workload_plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tuner/runtime/selection.h"

namespace tiletune::runtime {
namespace {

// The shapes recorded on the GPU for every one of the templates.
std::set<GemmShape> tuned_shapes(const RecordSet& records, const WorkloadRequest& request) {
  std::map<GemmShape, std::set<std::string>> templates_at;
  for (const RecordedChoice& c : records.choices) {
    if (records.gpus[c.gpu].name == request.gpu_name) templates_at[c.shape].insert(records.templates[c.templ].name);
  }
  std::set<GemmShape> tuned;
  for (const auto& [shape, names] : templates_at) {
    if (std::all_of(request.templates.begin(), request.templates.end(),
                    [&](const std::string& name) { return names.contains(name); })) {
      tuned.insert(shape);
    }
  }
  return tuned;
}

// The time the library's choice is predicted (or recorded) to take at the shape, the fastest over
// the templates; none where no template's records give one.
std::optional<double> predicted_ms(const RecordSet& records, PerformanceModels& models,
                                   const WorkloadRequest& request, const GemmShape& shape) {
  std::optional<double> fastest;
  for (const std::string& name : request.templates) {
    SelectionRequest select;
    select.template_name = name;
    select.problem = GemmProblem::packed(shape);
    select.gpu_name = request.gpu_name;
    select.lowest_precision = Precision::tf32;
    try {
      const Selection chosen = select_configuration(records, select, &models);
      std::optional<double> ms;
      if (chosen.predicted) ms = chosen.predicted->ms;
      else if (chosen.exact_shape && chosen.choice) ms = chosen.choice->median_ms;
      if (ms && (!fastest || *ms < *fastest)) fastest = ms;
    } catch (const NoSelection&) {
      // this template weighs nothing here
    }
  }
  return fastest;
}

double capped_distance(const GemmShape& a, const GemmShape& b) {
  return std::min(kFarDistance, log_distance(a, b));
}

}  // namespace

std::vector<WorkloadShape> read_workload(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw WorkloadError(fmt::format("{}: cannot read the workload file", path.string()));
  std::vector<WorkloadShape> workload;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string shape_text, calls_text, extra;
    if (!(fields >> shape_text)) continue;
    fields >> calls_text >> extra;
    const auto fail = [&](const std::string& why) {
      throw WorkloadError(fmt::format("{}:{}: {} (expected 'MxNxK' or 'MxNxK CALLS')", path.string(), number, why));
    };
    if (!extra.empty()) fail(fmt::format("'{}' after the calls", extra));
    WorkloadShape entry;
    try {
      entry.shape = GemmShape::parse(shape_text);
    } catch (const ShapeError& e) {
      fail(e.what());
    }
    if (!calls_text.empty()) {
      const char* end = calls_text.data() + calls_text.size();
      const auto [rest, error] = std::from_chars(calls_text.data(), end, entry.calls);
      if (error != std::errc() || rest != end || !std::isfinite(entry.calls) || entry.calls <= 0) {
        fail(fmt::format("calls '{}' is not a positive number", calls_text));
      }
    }
    const auto same = std::find_if(workload.begin(), workload.end(),
                                   [&](const WorkloadShape& w) { return w.shape == entry.shape; });
    if (same != workload.end()) same->calls += entry.calls;
    else workload.push_back(entry);
  }
  if (workload.empty()) throw WorkloadError(fmt::format("{}: the workload file names no shape", path.string()));
  return workload;
}

WorkloadPlan plan_workload(const RecordSet& records, PerformanceModels& models,
                           const WorkloadRequest& request) {
  if (request.workload.empty()) throw WorkloadError("the workload names no shape");
  const std::vector<WorkloadShape>& workload = request.workload;
  const std::size_t n = workload.size();
  WorkloadPlan plan;

  // Weights: the model's times where it has one at every shape, else 2MNK.
  std::vector<double> weight(n);
  plan.weighed_by_model = true;
  for (std::size_t i = 0; i < n && plan.weighed_by_model; ++i) {
    const std::optional<double> ms = predicted_ms(records, models, request, workload[i].shape);
    plan.weighed_by_model = ms.has_value();
    if (ms) weight[i] = workload[i].calls * *ms;
  }
  if (!plan.weighed_by_model) {
    for (std::size_t i = 0; i < n; ++i) weight[i] = workload[i].calls * workload[i].shape.flops();
  }
  for (const double w : weight) plan.total_weight += w;

  const std::set<GemmShape> tuned = tuned_shapes(records, request);
  std::vector<double> distance(n, kFarDistance);  // to the nearest tuned shape
  std::vector<bool> candidate(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    for (const GemmShape& shape : tuned) distance[i] = std::min(distance[i], capped_distance(workload[i].shape, shape));
    if (tuned.contains(workload[i].shape)) {
      plan.already_tuned.push_back(workload[i].shape);
      candidate[i] = false;
    }
  }
  const auto summarise = [&](double& mean, double& near_share) {
    double sum = 0, near = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += weight[i] * distance[i];
      if (distance[i] <= kNearDistance) near += weight[i];
    }
    mean = plan.total_weight > 0 ? sum / plan.total_weight : 0;
    near_share = plan.total_weight > 0 ? near / plan.total_weight : 0;
  };
  summarise(plan.mean_distance_before, plan.near_share_before);

  std::vector<std::size_t> picked;
  while (picked.size() < request.budget) {
    std::size_t best = n;
    double best_gain = 0;
    for (std::size_t c = 0; c < n; ++c) {
      if (!candidate[c]) continue;
      double gain = 0;
      for (std::size_t i = 0; i < n; ++i) {
        gain += weight[i] * std::max(0.0, distance[i] - capped_distance(workload[i].shape, workload[c].shape));
      }
      if (gain > best_gain) best = c, best_gain = gain;  // ties: the earlier line
    }
    if (best == n) break;  // every shape is tuned or nothing gains
    candidate[best] = false;
    picked.push_back(best);
    for (std::size_t i = 0; i < n; ++i) {
      distance[i] = std::min(distance[i], capped_distance(workload[i].shape, workload[best].shape));
    }
  }
  summarise(plan.mean_distance_after, plan.near_share_after);

  // Each workload shape's nearest tuned shape after the plan: a planned shape's part of the weight.
  for (const std::size_t p : picked) plan.to_tune.push_back({workload[p].shape, 0, 0});
  for (std::size_t i = 0; i < n; ++i) {
    double nearest = kFarDistance;
    for (const GemmShape& shape : tuned) nearest = std::min(nearest, log_distance(workload[i].shape, shape));
    PlannedShape* owner = nullptr;
    for (PlannedShape& planned : plan.to_tune) {
      const double d = log_distance(workload[i].shape, planned.shape);
      if (d < nearest) nearest = d, owner = &planned;
    }
    if (owner) {
      owner->share += plan.total_weight > 0 ? weight[i] / plan.total_weight : 0;
      ++owner->shapes_nearest;
    }
  }
  return plan;
}

}  // namespace tiletune::runtime

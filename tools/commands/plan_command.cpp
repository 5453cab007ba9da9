// tiletune plan --workload SHAPES.txt --budget N [--db PATH] [--gpu NAME] [--kernel NAME]... [--list]
//
// Which N shapes of a workload to tune so that the library's choice covers the rest best: those
// that leave the least of the workload's predicted time far from a tuned shape (the performance
// model weighs each shape; tuner/runtime/workload_plan.h says how). `tune --workload` tunes them.
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/cli/workload_planning.h"
#include "tools/commands/commands.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::cli {
namespace {

struct PlanOptions {
  WorkloadPlanning planning;
  std::string gpu;
  bool list = false;
};

// --gpu, else this machine's GPU, else the one GPU the database holds.
std::string gpu_of(const PlanOptions& options) {
  if (!options.gpu.empty()) return options.gpu;
  try {
    return GpuDevice().properties().name;
  } catch (const GpuUnavailable&) {
  }
  if (!std::filesystem::exists(options.planning.db)) return "";
  std::set<std::string> names;
  for (const runtime::RecordedGpu& g : runtime::load_database_records(options.planning.db).gpus) names.insert(g.name);
  if (names.size() <= 1) return names.empty() ? "" : *names.begin();
  throw UsageError(fmt::format("no GPU here and {} GPUs recorded in {} ({}): choose one with --gpu", names.size(),
                               options.planning.db, fmt::join(names, ", ")));
}

int run(PlanOptions options) {
  if (!std::filesystem::exists(options.planning.db)) {
    fmt::print(stderr, "{}: no such database: every shape is untuned, weighed by 2MNK\n", options.planning.db);
  }
  options.planning.gpu_name = gpu_of(options);
  const PlannedWorkload planned = plan_workload(options.planning);
  if (options.list) {
    for (const runtime::PlannedShape& p : planned.plan.to_tune) fmt::print("{}\n", p.shape.to_string());
  } else {
    fmt::print("{}", describe(planned, options.planning));
  }
  return kSuccess;
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* command = app.add_subcommand(
      "plan", "which shapes of a workload to tune, so that the library's choice covers the rest best");
  command->add_option("--workload", options->planning.workload_path,
                      "the workload: a shape a line, 'MxNxK' or 'MxNxK CALLS', # comments")
      ->required()->check(CLI::ExistingFile);
  command->add_option("--budget", options->planning.budget, "how many shapes to tune")->required()
      ->check(CLI::NonNegativeNumber);
  options->planning.db = "tiletune.db";
  command->add_option("--db", options->planning.db, "the database whose records count as tuned")
      ->capture_default_str();
  command->add_option("--gpu", options->gpu, "plan for this GPU's records (default: this one, or the one recorded)");
  command->add_option("--kernel", options->planning.templates,
                      "the templates to be tuned (repeatable; default: those recorded on the GPU)");
  command->add_flag("--list", options->list, "print only the shapes to tune, one a line");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

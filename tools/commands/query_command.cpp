// tiletune query --shape MxNxK [--kernel NAME] [--gpu NAME] [--db PATH] [--json] [--exact]
//
// The best correct configuration recorded for a GPU and shape. When the shape itself was never
// tuned, the nearest recorded shape answers (by distance in log M, log N, log K) and says so;
// --exact refuses that.
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/result_store.h"
#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/gpu_device.h"

namespace tiletune::cli {
namespace {

struct QueryOptions {
  std::string shape;
  std::string kernel;
  std::string gpu;
  std::string db = "tiletune.db";
  bool json = false;
  bool exact = false;
};

// The GPU asked for: --gpu, else the one in this machine, else the only one recorded.
std::string choose_gpu(const QueryOptions& options, const ResultStore& store) {
  if (!options.gpu.empty()) return options.gpu;
  try {
    return GpuDevice().properties().name;
  } catch (const GpuUnavailable&) {
  }
  const std::vector<GpuRecord> gpus = store.gpus();
  if (gpus.size() == 1) return gpus.front().name;
  if (gpus.empty()) throw UsageError(fmt::format("{}: no GPU recorded yet (run 'tiletune tune' first)", options.db));
  std::string names;
  for (const GpuRecord& g : gpus) names += (names.empty() ? "" : ", ") + g.name;
  throw UsageError(fmt::format("no GPU here and {} GPUs recorded ({}): choose one with --gpu",
                               gpus.size(), names));
}

int run(const QueryOptions& options) {
  const GemmShape requested = GemmShape::parse(options.shape);
  if (!std::filesystem::exists(options.db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", options.db));
  }
  ResultStore store(options.db, ResultStore::Access::read_only);
  const std::string gpu = choose_gpu(options, store);
  const std::optional<std::string> kernel =
      options.kernel.empty() ? std::nullopt : std::optional<std::string>(options.kernel);

  GemmShape answered = requested;
  std::optional<ResultRecord> best = store.best(gpu, requested, kernel);
  if (!best && !options.exact) {
    double nearest = INFINITY;
    for (const GemmShape& recorded : store.shapes_with_results(gpu, kernel)) {
      if (log_distance(recorded, requested) < nearest) {
        nearest = log_distance(recorded, requested);
        answered = recorded;
      }
    }
    if (std::isfinite(nearest)) best = store.best(gpu, answered, kernel);
  }
  if (!best) {
    fmt::print(stderr, "tiletune: no correct configuration recorded for {} on {}{}\n",
               requested.to_string(), gpu, kernel ? " of template " + *kernel : "");
    return kFindings;
  }

  const bool exact = answered == requested;
  if (options.json) {
    nlohmann::json out = {
        {"gpu", gpu},
        {"shape", requested.to_string()},
        {"recorded_shape", answered.to_string()},
        {"exact", exact},
        {"template", best->template_name},
        {"template_hash", best->template_hash},
        {"config", best->config},
        {"median_ms", best->median_ms},
        {"min_ms", best->min_ms},
        {"max_ms", best->max_ms},
        {"runs", best->runs},
        {"tflops", best->tflops},
        {"registers", best->registers},
        {"static_shared_bytes", best->static_shared_bytes},
        {"dynamic_shared_bytes", best->dynamic_shared_bytes},
        {"recorded_at", best->recorded_at},
    };
    fmt::print("{}\n", out.dump(2));
  } else {
    if (!exact) {
      fmt::print("{} was not tuned on {}; nearest recorded shape: {}\n", requested.to_string(),
                 gpu, answered.to_string());
    }
    fmt::print("{} {}: {} [{}] {:.4f} ms, {:.2f} TFLOP/s (median of {} runs, recorded {})\n",
               gpu, answered.to_string(), best->template_name, best->config, best->median_ms,
               best->tflops, best->runs, best->recorded_at);
  }
  return kSuccess;
}

}  // namespace

void add_query_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<QueryOptions>();
  CLI::App* command = app.add_subcommand("query", "the best recorded configuration for a shape");
  command->add_option("--shape", options->shape, "problem size MxNxK")->required();
  command->add_option("--kernel", options->kernel, "only this template (by name)");
  command->add_option("--gpu", options->gpu, "GPU name (default: this machine's, or the only one recorded)");
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_flag("--json", options->json, "print JSON");
  command->add_flag("--exact", options->exact, "no nearest-shape answer");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

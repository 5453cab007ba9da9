// tiletune query --shape MxNxK [--kernel NAME] [--gpu NAME] [--db PATH] [--json] [--exact]
//
// The best correct configuration recorded for a GPU and shape. When the shape itself was never
// tuned, the nearest recorded shape answers (by distance in log M, log N, log K) and says so;
// --exact refuses that. A nearest-shape answer is a configuration whose requirements admit the
// shape asked for (with packed leading dimensions), read from the template version recorded.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/result_store.h"
#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/gpu_device.h"
#include "tuner/kernel_template.h"

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
  int excluded = 0;  // faster configurations of nearer shapes whose requirements exclude this one
  if (!best && !options.exact) {
    std::vector<GemmShape> recorded = store.shapes_with_results(gpu, kernel);
    std::stable_sort(recorded.begin(), recorded.end(), [&](const GemmShape& a, const GemmShape& b) {
      return log_distance(a, requested) < log_distance(b, requested);
    });
    std::map<std::string, KernelTemplate> versions;  // by source hash
    for (const TemplateRecord& t : store.templates()) {
      try {
        versions.emplace(t.source_hash, parse_template(t.source, t.path.empty() ? t.name : t.path));
      } catch (const TemplateError&) {
        // A version recorded by an older tiletune that today's parser refuses: its requirements
        // cannot be read, and it is served as before (its results passed their fuzz).
      }
    }
    const GemmProblem asked = GemmProblem::packed(requested);
    for (auto shape = recorded.begin(); shape != recorded.end() && !best; ++shape) {
      for (const ResultRecord& candidate : store.ranking(gpu, *shape, kernel)) {
        const auto version = versions.find(candidate.template_hash);
        if (version == versions.end() ||
            version->second.satisfies_requirements(
                version->second.parse_configuration(candidate.config), asked)) {
          best = candidate;
          answered = *shape;
          break;
        }
        ++excluded;
      }
    }
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
        {"excluded_by_requirements", excluded},
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
      fmt::print("{} was not tuned on {}; nearest recorded shape: {}{}\n", requested.to_string(),
                 gpu, answered.to_string(),
                 excluded > 0 ? fmt::format(" ({} faster configurations left out: their "
                                            "requirements exclude {})",
                                            excluded, requested.to_string())
                              : "");
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

// tiletune strategies --db PATH --kernel NAME --shape MxNxK [--gpu NAME] [--seeds 20]
//                     [--budget 10% --budget 20%] [--batch 16]
//
// How each search strategy would have done on a space that was tuned exhaustively: every strategy
// is replayed (tuner/search/search_replay.h) against the recorded times, for each budget and seed,
// and the best it finds is compared with the recorded optimum. Configurations recorded with any
// status but ok count as failures. The guided strategies are replayed twice: from a cold start,
// and warm started as a tune of this shape would be if every other shape in the database had
// been recorded before it (tuner/pipeline/recorded_warm_start.h): the shape's own results never
// take part in its warm start.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/result_store.h"
#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/commands/commands.h"
#include "tuner/core/configurations.h"
#include "tuner/pipeline/recorded_warm_start.h"
#include "tuner/search/search_budget.h"
#include "tuner/search/search_replay.h"
#include "tuner/search/search_strategy.h"

namespace tiletune::cli {
namespace {

struct StrategiesOptions {
  std::string db = "tiletune.db";
  std::string kernel;
  std::string shape;
  std::string gpu;
  int seeds = 20;
  std::vector<std::string> budgets{"10%", "20%"};
  int batch = 16;
};

// --gpu, else the only GPU recorded (GPU rows that share a name are one GPU, as in ranking()).
std::string choose_gpu(const StrategiesOptions& options, const ResultStore& store) {
  if (!options.gpu.empty()) return options.gpu;
  std::vector<std::string> names;
  for (const GpuRecord& gpu : store.gpus()) {
    if (std::find(names.begin(), names.end(), gpu.name) == names.end()) names.push_back(gpu.name);
  }
  if (names.size() == 1) return names.front();
  if (names.empty()) throw UsageError(fmt::format("{}: no GPU recorded yet (run 'tiletune tune' first)", options.db));
  throw UsageError(fmt::format("{} GPUs recorded ({}): choose one with --gpu", names.size(),
                               fmt::join(names, ", ")));
}

// Evaluations per budget; a time budget means nothing to a replay.
std::size_t evaluations_for(const std::string& text, std::size_t space_size) {
  try {
    const std::optional<std::size_t> limit = SearchBudget::parse(text).evaluation_limit(space_size);
    if (!limit) throw UsageError(fmt::format("budget '{}': a replay counts evaluations: give N or N%", text));
    return std::min(*limit, space_size);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// How many results the GPU has for the template's current version and shape, of any status.
int recorded_count(const ResultStore& store, const std::string& gpu, const std::string& kernel,
                   const GemmShape& shape) {
  int results = 0;
  for (const ResultSummary& row : store.summary()) {
    if (row.gpu_name == gpu && row.template_name == kernel && row.template_current && row.shape == shape) {
      results += row.results;
    }
  }
  return results;
}

// Each configuration's recorded time; nullopt for those not ok. Where rows of one GPU name
// repeat a configuration, the fastest (ranking() lists it first).
std::vector<std::optional<double>> recorded_times(const ResultStore& store, const std::string& gpu,
                                                  const std::string& kernel, const GemmShape& shape,
                                                  const std::vector<Configuration>& space) {
  std::map<std::string, double> ok_times;
  for (const ResultRecord& result : store.ranking(gpu, shape, kernel)) {
    ok_times.emplace(result.config, result.median_ms);
  }
  std::vector<std::optional<double>> times;
  for (const Configuration& config : space) {
    const auto found = ok_times.find(config.to_string());
    times.push_back(found == ok_times.end() ? std::nullopt : std::optional<double>(found->second));
  }
  return times;
}

// Every strategy from a cold start, then (when there is one) the guided ones warm started.
std::vector<std::pair<std::string, bool>> replays(bool with_warm_start) {
  std::vector<std::pair<std::string, bool>> runs;
  for (const std::string& strategy : search_strategy_names()) runs.emplace_back(strategy, false);
  if (!with_warm_start) return runs;
  for (const std::string& strategy : search_strategy_names()) {
    if (is_guided_strategy(strategy)) runs.emplace_back(strategy, true);
  }
  return runs;
}

std::string ratio_text(double ratio) { return std::isfinite(ratio) ? fmt::format("{:.4f}", ratio) : "-"; }

int run(const StrategiesOptions& options) {
  const GemmShape shape = GemmShape::parse(options.shape);
  if (!std::filesystem::exists(options.db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", options.db));
  }
  ResultStore store(options.db, ResultStore::Access::read_only);
  const std::string gpu = choose_gpu(options, store);
  const std::vector<TemplateRecord> recorded = store.templates();
  const auto version = std::find_if(recorded.begin(), recorded.end(),
                                    [&](const TemplateRecord& t) { return t.name == options.kernel; });
  if (version == recorded.end()) {
    fmt::print(stderr, "tiletune: no template named {} in {}\n", options.kernel, options.db);
    return kFindings;
  }
  const KernelTemplate tmpl =
      parse_template(version->source, version->path.empty() ? version->name : version->path);
  const std::vector<Configuration> space = enumerate_configurations(tmpl, &shape);
  const std::string subject = fmt::format("{} {} on {}", options.kernel, shape.to_string(), gpu);
  std::vector<std::size_t> evaluations;
  for (const std::string& budget : options.budgets) evaluations.push_back(evaluations_for(budget, space.size()));

  const int results = recorded_count(store, gpu, options.kernel, shape);
  if (std::size_t(results) < space.size()) {
    fmt::print(stderr, "tiletune: only {} of {} configurations are recorded for {}; run an exhaustive tune first\n",
               results, space.size(), subject);
    return kFindings;
  }
  const std::vector<std::optional<double>> times = recorded_times(store, gpu, options.kernel, shape, space);
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (times[i] && (!best || *times[i] < *times[*best])) best = i;
  }
  if (!best) {
    fmt::print(stderr, "tiletune: no correct configuration recorded for {}\n", subject);
    return kFindings;
  }
  const double optimum = *times[*best];

  fmt::print("{}: {} configurations, {} correct, optimum {:.4f} ms [{}]\n", subject, space.size(),
             std::count_if(times.begin(), times.end(), [](const auto& t) { return t.has_value(); }),
             optimum, space[*best].to_string());
  const WarmStart warm_start = recorded_warm_start(store, gpu, options.kernel, shape, space);
  fmt::print("warm start: {}\n", describe(warm_start));
  fmt::print("{} seeds, batches of {}; ratio: best found / optimum\n", options.seeds, options.batch);
  fmt::print("{:<14} {:>7} {:>11} {:>13} {:>12} {:>10}\n", "strategy", "budget", "evaluations",
             "median ratio", "worst ratio", "within 3%");
  for (std::size_t b = 0; b < options.budgets.size(); ++b) {
    for (const auto& [strategy, warm] : replays(!warm_start.points.empty())) {
      std::vector<double> ratios;
      for (int seed = 1; seed <= options.seeds; ++seed) {
        const ReplayOutcome outcome =
            replay_search(strategy, tmpl, space, times, std::uint64_t(seed), evaluations[b],
                          std::size_t(options.batch), warm ? warm_start.points : std::vector<std::size_t>{});
        ratios.push_back(outcome.best_time_ms ? *outcome.best_time_ms / optimum : INFINITY);
      }
      std::sort(ratios.begin(), ratios.end());
      const auto close = std::count_if(ratios.begin(), ratios.end(), [](double r) { return r <= 1.03; });
      fmt::print("{:<14} {:>7} {:>11} {:>13} {:>12} {:>10}\n", warm ? strategy + " warm" : strategy,
                 options.budgets[b],
                 evaluations[b], ratio_text(ratios[ratios.size() / 2]), ratio_text(ratios.back()),
                 fmt::format("{}/{}", close, ratios.size()));
    }
  }
  return kSuccess;
}

}  // namespace

void add_strategies_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<StrategiesOptions>();
  CLI::App* command = app.add_subcommand(
      "strategies", "replay the search strategies on an exhaustively tuned space, against its optimum");
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_option("--kernel", options->kernel, "template name")->required();
  command->add_option("--shape", options->shape, "problem size MxNxK")->required();
  command->add_option("--gpu", options->gpu, "GPU name (default: the only one recorded)");
  command->add_option("--seeds", options->seeds, "seeds per strategy and budget")->capture_default_str()->check(kPositive);
  command->add_option("--budget", options->budgets, "evaluations: N, or N% of the space (repeatable)")->capture_default_str();
  command->add_option("--batch", options->batch, "configurations proposed at a time")->capture_default_str()->check(kPositive);
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

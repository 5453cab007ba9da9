// tiletune selection-eval --db SUITE.db|BUNDLE --truth TRUTH.db [--kernel NAME]... [--gpu NAME]
//
// How well the library chooses at shapes nobody tuned: SUITE.db (or a bundle exported from it) is
// what the library would serve from; TRUTH.db holds exhaustive tunes at other shapes (held out:
// shapes SUITE.db has no record of for the template and GPU). At each held-out shape the
// configuration chosen from SUITE.db (by the performance model, and by the nearest recorded shape
// as before it) is looked up in TRUTH.db: its time over the best time there, and cuBLAS's over it
// where TRUTH.db has a bench row at the shape. A chosen configuration TRUTH.db did not time there
// (its tune left it out) counts as unmeasured. Per template: the geometric mean and the worst.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "db/result_store.h"
#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/runtime/bundle.h"
#include "tuner/runtime/record_set.h"
#include "tuner/runtime/selection.h"

namespace tiletune::cli {
namespace {

using runtime::RecordSet;

struct SelectionEvalOptions {
  std::string db, truth, gpu;
  std::vector<std::string> kernels;
};

// Ratios of one way of choosing over the held-out shapes of a template.
struct Ratios {
  std::vector<double> values;
  double worst = 0;
  std::string worst_shape;
  int unmeasured = 0;
  void add(double ratio, const GemmShape& shape) {
    if (ratio > worst) worst = ratio, worst_shape = shape.to_string();
    values.push_back(ratio);
  }
  double geometric_mean() const {
    double sum = 0;
    for (const double v : values) sum += std::log(v);
    return values.empty() ? 0 : std::exp(sum / double(values.size()));
  }
  std::string summary() const {
    if (values.empty()) return "none measured";
    return fmt::format("geomean {:.3f}, worst {:.3f} ({}){}", geometric_mean(), worst, worst_shape,
                       unmeasured ? fmt::format(", {} unmeasured", unmeasured) : "");
  }
};

RecordSet load(const std::string& path, const char* what) {
  if (!std::filesystem::exists(path)) throw UsageError(fmt::format("{}: no such database ({})", path, what));
  return runtime::load_database_records(path);
}

// --db's records: a database's, or a bundle's as the library reads it (with the model it carries).
RecordSet load_served(const std::string& path) {
  if (!runtime::is_bundle(path)) return load(path, "--db");
  try {
    return runtime::read_bundle(path).records;
  } catch (const runtime::BundleError& e) {
    throw UsageError(e.what());
  }
}

int run(const SelectionEvalOptions& options) {
  const RecordSet suite = load_served(options.db);
  const RecordSet truth = load(options.truth, "--truth");
  runtime::PerformanceModels models(suite);

  // TRUTH.db's times: (GPU, template, shape) -> configuration -> ms.
  std::map<std::tuple<std::string, std::string, GemmShape>, std::map<std::string, double>> measured;
  for (const runtime::RecordedChoice& c : truth.choices) {
    measured[{truth.gpus[c.gpu].name, truth.templates[c.templ].name, c.shape}][c.config] = c.median_ms;
  }
  std::set<std::tuple<std::string, std::string, GemmShape>> tuned;  // in SUITE.db
  for (const runtime::RecordedChoice& c : suite.choices) {
    tuned.insert({suite.gpus[c.gpu].name, suite.templates[c.templ].name, c.shape});
  }
  std::map<std::tuple<std::string, std::string, GemmShape>, double> cublas;
  const ResultStore truth_store(options.truth, ResultStore::Access::read_only);
  for (const BenchRecord& row : truth_store.bench_results()) {
    cublas[{row.gpu_name, row.template_name, row.shape}] = row.cublas_ms;
  }

  fmt::print("{:<26} {:<18} {:>9} {:>9} {:>8}  {}\n", "template", "shape", "model", "nearest",
             "cuBLAS", "model's choice (time over the best there)");
  std::map<std::string, std::array<Ratios, 3>> per_template;  // model, nearest, cuBLAS over model
  int evaluated = 0;
  for (const auto& [key, times] : measured) {
    const auto& [gpu, name, shape] = key;
    if (!options.gpu.empty() && gpu != options.gpu) continue;
    if (!options.kernels.empty() &&
        std::find(options.kernels.begin(), options.kernels.end(), name) == options.kernels.end()) {
      continue;
    }
    if (tuned.contains(key) || !suite.find_template(name)) continue;  // not held out
    const double best = std::min_element(times.begin(), times.end(), [](const auto& a, const auto& b) {
                          return a.second < b.second;
                        })->second;
    std::array<Ratios, 3>& ratios = per_template[name];
    std::string cells[2];
    std::string chosen;
    for (const bool predict : {true, false}) {
      runtime::SelectionRequest request;
      request.template_name = name;
      request.problem = GemmProblem::packed(shape);
      request.gpu_name = gpu;
      request.predict = predict;
      request.lowest_precision = Precision::tf32;
      Ratios& into = ratios[predict ? 0 : 1];
      std::string& cell = cells[predict ? 0 : 1];
      try {
        const runtime::Selection selection = runtime::select_configuration(suite, request, &models);
        const auto time = times.find(selection.config);
        if (time == times.end()) {
          ++into.unmeasured;
          cell = "unmeasured";
        } else {
          into.add(time->second / best, shape);
          cell = fmt::format("{:.3f}", time->second / best);
          if (predict && cublas.contains(key)) {
            ratios[2].add(time->second / cublas.at(key), shape);
          }
        }
        if (predict) chosen = selection.config;
      } catch (const runtime::NoSelection& e) {
        ++into.unmeasured;
        cell = "none";
      }
    }
    const auto bench = cublas.find(key);
    const auto model_time = times.find(chosen);
    fmt::print("{:<26} {:<18} {:>9} {:>9} {:>8}  {}\n", name, shape.to_string(), cells[0], cells[1],
               bench != cublas.end() && model_time != times.end()
                   ? fmt::format("{:.3f}", bench->second / model_time->second)
                   : "-",
               chosen);
    ++evaluated;
  }
  if (evaluated == 0) {
    throw UsageError(fmt::format("{} has no held-out shape of a template {} holds{}", options.truth,
                                 options.db, options.gpu.empty() ? "" : " on " + options.gpu));
  }
  fmt::print("\n");
  for (const auto& [name, ratios] : per_template) {
    fmt::print("{}: model {}; nearest shape {}{}\n", name, ratios[0].summary(), ratios[1].summary(),
               ratios[2].values.empty() ? "" : fmt::format("; cuBLAS time over the model's choice: geomean {:.3f}",
                                                           1 / ratios[2].geometric_mean()));
  }
  fmt::print("{} held-out shapes of {} templates evaluated\n", evaluated, per_template.size());
  return kSuccess;
}

}  // namespace

void add_selection_eval_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<SelectionEvalOptions>();
  CLI::App* command = app.add_subcommand(
      "selection-eval", "how well the library chooses at shapes a database holds no record of, against exhaustive tunes there");
  command->add_option("--db", options->db, "the database (or bundle) the library would choose from")->required();
  command->add_option("--truth", options->truth, "exhaustive tunes at held-out shapes")->required();
  command->add_option("--kernel", options->kernels, "only these templates (repeatable)");
  command->add_option("--gpu", options->gpu, "only this GPU's records");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

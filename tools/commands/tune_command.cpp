// tiletune tune KERNEL.cu... --shape MxNxK [--shape ...] [--db PATH]
#include <map>

#include <fmt/format.h>

#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/pipeline/tuning_run.h"

namespace tiletune::cli {
namespace {

struct TuneOptions {
  std::vector<std::string> kernels;
  std::vector<std::string> shapes{"4096x4096x4096"};
  std::string db = "tiletune.db";
  int cases = 30;
  std::uint64_t seed = 1;
  bool remeasure = false;
};

std::string describe(const TuningEvent& e) {
  std::string line = fmt::format("[{}/{}] {} {} {}: ", e.index, e.total, e.tmpl->name,
                                 e.shape.to_string(), e.config->to_string());
  if (e.result == nullptr) return line + e.stage;
  line += to_string(e.result->status);
  if (e.result->status == ResultStatus::ok) {
    return line + fmt::format(" {:.3f} ms {:.2f} TFLOP/s", e.result->median_ms, e.result->tflops);
  }
  return line + ": " + e.result->detail.substr(0, e.result->detail.find('\n'));
}

int run(const TuneOptions& options) {
  const std::vector<KernelTemplate> templates = load_templates(options.kernels);
  const std::vector<GemmShape> shapes = parse_shapes(options.shapes);
  GpuDevice device;  // before the database, so that a machine without a GPU creates no file
  ResultStore store(options.db);

  TuningSettings settings;
  settings.fuzz.cases = options.cases;
  settings.fuzz.seed = options.seed;
  settings.data_seed = options.seed;
  settings.remeasure = options.remeasure;
  TuningRun run(device, store, settings);
  const GpuRecord gpu = run.gpu_record();
  fmt::print(stderr, "tuning on {} ({}, {} SMs, driver {}, NVRTC {}), database {}\n", gpu.name,
             gpu.arch(), gpu.sm_count, gpu.driver_version, gpu.nvrtc_version, options.db);

  std::map<std::string, int> counts;
  for (const KernelTemplate& tmpl : templates) {
    for (const GemmShape& shape : shapes) {
      run.tune(tmpl, shape, [&](const TuningEvent& event) {
        const bool finished = event.stage == "done" || event.stage == "recorded earlier";
        if (event.result) ++counts[to_string(event.result->status)];
        if (event.stage == "recorded earlier") ++counts["recorded earlier"];
        progress_line(describe(event), finished);
      });
    }
  }

  fmt::print("\n{:<18} {:<14} {:<34} {:>10} {:>9}\n", "shape", "template", "best configuration",
             "median ms", "TFLOP/s");
  for (const GemmShape& shape : shapes) {
    for (const KernelTemplate& tmpl : templates) {
      const auto best = store.best(gpu.name, shape, tmpl.name);
      if (best) {
        fmt::print("{:<18} {:<14} {:<34} {:>10.4f} {:>9.2f}\n", shape.to_string(), tmpl.name,
                   best->config, best->median_ms, best->tflops);
      } else {
        fmt::print("{:<18} {:<14} {:<34}\n", shape.to_string(), tmpl.name, "(no correct configuration)");
      }
    }
  }
  std::string summary;
  for (const auto& [status, count] : counts) summary += fmt::format("{} {}, ", count, status);
  if (!summary.empty()) summary.resize(summary.size() - 2);
  fmt::print("\nevaluations: {}\n", summary.empty() ? "none" : summary);
  return kSuccess;
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<TuneOptions>();
  CLI::App* command = app.add_subcommand(
      "tune", "compile, fuzz, verify and time every configuration; record the results");
  command->add_option("kernels", options->kernels, "kernel template files (.cu)")->required()->check(CLI::ExistingFile);
  command->add_option("--shape", options->shapes, "problem size MxNxK (repeatable)")->capture_default_str();
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_option("--cases", options->cases, "property cases per configuration")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--seed", options->seed, "seed of the property cases and the timing inputs")->capture_default_str();
  command->add_flag("--remeasure", options->remeasure, "evaluate again what is already recorded");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

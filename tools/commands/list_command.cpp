// tiletune list [--db PATH]: the templates, GPUs, shapes and results recorded.
#include <filesystem>

#include <fmt/format.h>

#include "db/result_store.h"
#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"

namespace tiletune::cli {
namespace {

int run(const std::string& db) {
  if (!std::filesystem::exists(db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", db));
  }
  ResultStore store(db, ResultStore::Access::read_only);
  fmt::print("GPUs\n");
  for (const GpuRecord& g : store.gpus()) {
    fmt::print("  {} ({}, {} SMs, {:.0f} GiB, driver {}, NVRTC {})\n", g.name, g.arch(), g.sm_count,
               double(g.memory_bytes) / (1 << 30), g.driver_version, g.nvrtc_version);
  }
  fmt::print("templates (current versions)\n");
  for (const TemplateRecord& t : store.templates()) {
    fmt::print("  {} {} {}\n", t.name, t.source_hash, t.path);
  }
  fmt::print("results\n  {:<20} {:<12} {:<17} {:<8} {:>7} {:>4} {:>9}\n", "gpu", "template",
             "version", "shape", "results", "ok", "TFLOP/s");
  for (const ResultSummary& s : store.summary()) {
    fmt::print("  {:<20} {:<12} {:<17} {:<8} {:>7} {:>4} {:>9}\n", s.gpu_name, s.template_name,
               s.template_hash + (s.template_current ? "" : "*"), s.shape.to_string(), s.results,
               s.ok, s.best_tflops ? fmt::format("{:.2f}", *s.best_tflops) : "-");
  }
  fmt::print("(* an older version of the template: never served by query)\n");
  return kSuccess;
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto db = std::make_shared<std::string>("tiletune.db");
  CLI::App* command = app.add_subcommand("list", "templates, GPUs, shapes and results recorded");
  command->add_option("--db", *db, "SQLite database file")->capture_default_str();
  command->callback([db, &exit_code] { exit_code = run(*db); });
}

}  // namespace tiletune::cli

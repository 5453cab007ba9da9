// tiletune list [--db PATH]: the templates, GPUs, shapes and results recorded.
// tiletune list --missed [--db PATH]: the problems the runtime library had no exact record for.
#include <filesystem>

#include <fmt/format.h>

#include "db/result_store.h"
#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"

namespace tiletune::cli {
namespace {

// Ordered by GPU, template, sizes and leading dimensions (ResultStore::missed_problems).
void print_missed(const ResultStore& store) {
  const std::vector<MissedProblem> missed = store.missed_problems();
  if (missed.empty()) {
    fmt::print("no missed problems\n");
    return;
  }
  fmt::print("missed problems (tiletune tune --missed tunes them)\n  {:<20} {:<12} {:<40} {:>6}  {}\n",
             "gpu", "template", "problem", "count", "last seen (UTC)");
  for (const MissedProblem& row : missed) {
    fmt::print("  {:<20} {:<12} {:<40} {:>6}  {}\n", row.gpu_name, row.template_name,
               row.problem.to_string(), row.count, row.last_seen);
  }
}

int run(const std::string& db, bool missed) {
  if (!std::filesystem::exists(db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", db));
  }
  ResultStore store(db, ResultStore::Access::read_only);
  if (missed) {
    print_missed(store);
    return kSuccess;
  }
  fmt::print("GPUs\n");
  for (const GpuRecord& g : store.gpus()) {
    fmt::print("  {} ({}, {} SMs, {:.0f} GiB, driver {}, NVRTC {})\n", g.name, g.arch(), g.sm_count,
               double(g.memory_bytes) / (1 << 30), g.driver_version, g.nvrtc_version);
  }
  fmt::print("templates (current versions)\n");
  for (const TemplateRecord& t : store.templates()) {
    fmt::print("  {} {} {} precision {}\n", t.name, t.source_hash, t.path, to_string(t.precision));
  }
  fmt::print("results\n  {:<20} {:<12} {:<17} {:<8} {:>7} {:>4} {:>9}\n", "gpu", "template",
             "version", "shape", "results", "ok", "TFLOP/s");
  for (const ResultSummary& s : store.summary()) {
    fmt::print("  {:<20} {:<12} {:<17} {:<8} {:>7} {:>4} {:>9}\n", s.gpu_name, s.template_name,
               s.template_hash + (s.template_current ? "" : "*"),
               s.shape.to_string() + (s.tuned_for().plain() ? "" : " " + s.tuned_for().to_string()), s.results,
               s.ok, s.best_tflops ? fmt::format("{:.2f}", *s.best_tflops) : "-");
  }
  fmt::print("(* an older version of the template: never served by query)\n");
  return kSuccess;
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto db = std::make_shared<std::string>("tiletune.db");
  auto missed = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("list", "templates, GPUs, shapes and results recorded");
  command->add_option("--db", *db, "SQLite database file")->capture_default_str();
  command->add_flag("--missed", *missed,
                    "the problems the runtime library had no exact record for (Options::record_misses)");
  command->callback([db, missed, &exit_code] { exit_code = run(*db, *missed); });
}

}  // namespace tiletune::cli

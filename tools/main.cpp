// tiletune: JIT-compiles tunable CUDA SGEMM templates with NVRTC, fuzzes every configuration with
// RapidCheck, times the correct ones and records the fastest per GPU and shape in SQLite.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "db/result_store.h"
#include "fuzz/gemm_executor.h"
#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tools/labs/lab_error.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace {

using namespace tiletune;

template <class Error>
bool is(const std::exception& e) {
  return dynamic_cast<const Error*>(&e) != nullptr;
}

// How an error that ends a command is told, by its type, first match wins: its exit code, and
// what precedes its message. Any other error: 1 (kFindings).
struct ErrorKind {
  bool (*matches)(const std::exception&);
  int exit_code;
  const char* preface;
};
constexpr ErrorKind kErrorKinds[] = {
    {is<GpuUnavailable>, cli::kEnvironment, ""},
    {is<NvrtcError>, cli::kEnvironment, ""},
    {is<cli::UsageError>, cli::kBadInput, ""},
    {is<TemplateError>, cli::kBadInput, ""},
    {is<ShapeError>, cli::kBadInput, ""},
    {is<DatabaseError>, cli::kBadInput, ""},
    {is<labs::LabArgumentError>, cli::kBadInput, ""},
    {is<LaunchError>, cli::kFindings,
     "a launch broke the CUDA context; what was measured is recorded, run the same command again "
     "to resume: "},
};

// Says the error in one line and returns the exit code for it.
int report_error(const std::exception& e) {
  for (const ErrorKind& kind : kErrorKinds) {
    if (!kind.matches(e)) continue;
    std::fprintf(stderr, "tiletune: %s%s\n", kind.preface, e.what());
    return kind.exit_code;
  }
  std::fprintf(stderr, "tiletune: %s\n", e.what());
  return cli::kFindings;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tiletune;
  CLI::App app{"tiletune: tune, fuzz and record tiled SGEMM kernel templates on this GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tiletune 0.1.0");
  int exit_code = cli::kSuccess;
  cli::add_tune_command(app, exit_code);
  cli::add_query_command(app, exit_code);
  cli::add_selection_eval_command(app, exit_code);
  cli::add_plan_command(app, exit_code);
  cli::add_fuzz_command(app, exit_code);
  cli::add_compile_command(app, exit_code);
  cli::add_list_command(app, exit_code);
  cli::add_bench_command(app, exit_code);
  cli::add_mutants_command(app, exit_code);
  cli::add_strategies_command(app, exit_code);
  cli::add_cache_command(app, exit_code);
  cli::add_export_command(app, exit_code);
  cli::add_profile_command(app, exit_code);
  cli::add_report_command(app, exit_code);
  cli::add_merge_command(app, exit_code);
  cli::add_lab_command(app, exit_code);
  cli::add_worker_command(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tiletune: %s (see 'tiletune %s--help')\n", e.what(),
                 app.get_subcommands().empty() ? ""
                     : (app.get_subcommands().front()->get_name() + " ").c_str());
    return cli::kBadInput;
  } catch (const std::exception& e) {
    return report_error(e);
  }
  return exit_code;
}

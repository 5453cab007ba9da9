// tiletune: JIT-compiles tunable CUDA SGEMM templates with NVRTC, fuzzes every configuration with
// RapidCheck, times the correct ones and records the fastest per GPU and shape in SQLite.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "db/result_store.h"
#include "fuzz/gemm_executor.h"
#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/cuda_driver.h"
#include "tuner/nvrtc_compiler.h"

int main(int argc, char** argv) {
  using namespace tiletune;
  CLI::App app{"tiletune: tune, fuzz and record tiled SGEMM kernel templates on this GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tiletune 0.1.0");
  int exit_code = cli::kSuccess;
  cli::add_tune_command(app, exit_code);
  cli::add_query_command(app, exit_code);
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
  } catch (const GpuUnavailable& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kEnvironment;
  } catch (const NvrtcError& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kEnvironment;
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kBadInput;
  } catch (const TemplateError& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kBadInput;
  } catch (const ShapeError& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kBadInput;
  } catch (const DatabaseError& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kBadInput;
  } catch (const LaunchError& e) {
    std::fprintf(stderr, "tiletune: a launch broke the CUDA context; what was measured is "
                         "recorded, run the same command again to resume: %s\n", e.what());
    return cli::kFindings;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiletune: %s\n", e.what());
    return cli::kFindings;
  }
  return exit_code;
}

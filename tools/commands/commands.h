// The subcommands of `tiletune`. Each registers itself on the app; its callback stores the exit
// code. Errors are exceptions that main() turns into one line and an exit code (command_line.h).
#pragma once

#include <CLI/CLI.hpp>

namespace tiletune::cli {

void add_tune_command(CLI::App& app, int& exit_code);
void add_query_command(CLI::App& app, int& exit_code);
void add_selection_eval_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_fuzz_command(CLI::App& app, int& exit_code);
void add_compile_command(CLI::App& app, int& exit_code);
void add_list_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_mutants_command(CLI::App& app, int& exit_code);
void add_strategies_command(CLI::App& app, int& exit_code);
void add_cache_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);
void add_profile_command(CLI::App& app, int& exit_code);  // and its hidden profile-launch
void add_report_command(CLI::App& app, int& exit_code);
void add_merge_command(CLI::App& app, int& exit_code);
// `lab NAME` and the hidden `lab-kernel` it runs under Nsight Compute (tools/labs/).
void add_lab_command(CLI::App& app, int& exit_code);
// Hidden: the evaluation worker a tune starts (tuner/pipeline/evaluation_worker.h).
void add_worker_command(CLI::App& app, int& exit_code);

}  // namespace tiletune::cli

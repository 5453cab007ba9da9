// tiletune worker (hidden): the evaluation worker a tuning session starts, one per device; it
// reads requests from the tuner and replies with results (tuner/pipeline/evaluation_worker.h).
#include <sys/types.h>

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "fuzz/gemm_oracle.h"  // set_reference_threads
#include "tools/cli/number_checks.h"
#include "tools/commands/commands.h"
#include "tuner/pipeline/evaluation_worker.h"
#include "tuner/pipeline/tuning_session.h"
#include "tuner/pipeline/worker_process.h"

namespace tiletune::cli {

void add_worker_command(CLI::App& app, int& exit_code) {
  struct WorkerOptions {
    std::string backend = "gpu";
    std::string cache_dir;
    pid_t parent = 0;
    int device = -1;  // the device ordinal; -1: $TILETUNE_DEVICE, else 0 (a CPU worker: 0)
    std::string shared_dir;  // the tune's folder for what its workers share; empty: none
    unsigned reference_threads = 0;  // 0: the cores
  };
  auto options = std::make_shared<WorkerOptions>();
  CLI::App* command = app.add_subcommand("worker", "evaluates configurations for a tuner (internal)");
  command->group("");  // not listed: only the tuner starts it
  command->add_option("--backend", options->backend)->check(CLI::IsMember({"gpu", "cpu"}));
  command->add_option("--device", options->device)->check(kNonNegative);
  command->add_option("--cache-dir", options->cache_dir);
  command->add_option("--parent", options->parent)->required();
  command->add_option("--shared-dir", options->shared_dir);
  command->add_option("--reference-threads", options->reference_threads);
  command->callback([options, &exit_code] {
    die_with_parent(options->parent);
    set_reference_threads(options->reference_threads);
    const EvaluatorFactory open = evaluator_factory(
        {options->backend, options->device, options->cache_dir, options->shared_dir});
    exit_code = run_evaluation_worker(open, WorkerProcess::kRequestFd, WorkerProcess::kReplyFd);
  });
}

}  // namespace tiletune::cli

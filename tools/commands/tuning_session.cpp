#include "tools/commands/tuning_session.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/pipeline/cpu_evaluator.h"
#include "tuner/cubin_cache.h"
#include "tuner/pipeline/evaluation_worker.h"
#include "tuner/pipeline/gpu_evaluator.h"

namespace tiletune::cli {
namespace {

std::optional<CubinCache> open_cache(const std::string& dir) {
  return CubinCache(dir.empty() ? default_cubin_cache_dir() : std::filesystem::path(dir));
}

}  // namespace

unsigned machine_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

unsigned default_fuzz_workers() { return std::clamp(machine_cores() / 2, 1u, 8u); }

unsigned capped_fuzz_workers(int requested) {
  if (requested < 0) return default_fuzz_workers();
  // A worker beyond the cores only waits for one, and each is a process (with a CUDA context on
  // the GPU): asking for 100000 would fork until the host runs out of processes.
  const unsigned cores = machine_cores();
  if (unsigned(requested) <= cores) return unsigned(requested);
  fmt::print(stderr, "tiletune: --fuzz-workers {} capped to {}: this machine has {} cores\n",
             requested, cores, cores);
  return cores;
}

void add_session_options(CLI::App& command, SessionOptions& options) {
  command.add_option("--backend", options.backend,
                     "gpu, or cpu: the fuzzer's CPU backend stands in for a GPU (times mean nothing)")
      ->capture_default_str()->check(CLI::IsMember({"gpu", "cpu"}));
  command.add_option("--cache-dir", options.cache_dir,
                     "where compiled cubins are kept (default $TILETUNE_CACHE_DIR, else ~/.cache/tiletune/cubins)");
  command.add_option("--watchdog", options.watchdog_seconds,
                     "seconds an evaluation may stay silent (each fuzz case counts as progress) before "
                     "its worker is killed; a timeout is retried once")
      ->capture_default_str()->check(CLI::PositiveNumber);
  command.add_option("--fuzz-workers", options.fuzz_workers,
                     fmt::format("processes that fuzz configurations side by side (0: the evaluation "
                                 "worker fuzzes them one by one; default {} here, at most the {} cores)",
                                 default_fuzz_workers(), machine_cores()))
      ->check(CLI::NonNegativeNumber);
}

TuningSession::TuningSession(const SessionOptions& options) {
  std::vector<std::string> argv = {"/proc/self/exe", "worker", "--backend", options.backend,
                                   "--parent", std::to_string(getpid())};
  if (!options.cache_dir.empty()) {
    argv.push_back("--cache-dir");
    argv.push_back(options.cache_dir);
  }
  const std::chrono::milliseconds watchdog(std::int64_t(options.watchdog_seconds * 1000));
  worker_ = std::make_unique<WorkerClient>(argv, watchdog);
  const unsigned fuzz_workers = capped_fuzz_workers(options.fuzz_workers);
  if (fuzz_workers > 0) fuzz_pool_ = std::make_unique<FuzzPool>(argv, watchdog, fuzz_workers);
  compiled_ = std::make_unique<CompiledKernels>(worker_->device().arch(), 0, open_cache(options.cache_dir));
}

TuningRun& TuningSession::run(ResultStore& store, const TuningSettings& settings) {
  if (!run_) run_ = std::make_unique<TuningRun>(*worker_, fuzz_pool_.get(), store, *compiled_, settings);
  return *run_;
}

int TuningSession::workers_started() const {
  return worker_->workers_started() + (fuzz_pool_ ? fuzz_pool_->workers_started() : 0);
}

void add_worker_command(CLI::App& app, int& exit_code) {
  struct WorkerOptions {
    std::string backend = "gpu";
    std::string cache_dir;
    pid_t parent = 0;
  };
  auto options = std::make_shared<WorkerOptions>();
  CLI::App* command = app.add_subcommand("worker", "evaluates configurations for a tuner (internal)");
  command->group("");  // not listed: only the tuner starts it
  command->add_option("--backend", options->backend)->check(CLI::IsMember({"gpu", "cpu"}));
  command->add_option("--cache-dir", options->cache_dir);
  command->add_option("--parent", options->parent)->required();
  command->callback([options, &exit_code] {
    die_with_parent(options->parent);
    const std::string cache_dir = options->cache_dir;
    EvaluatorFactory open;
    if (options->backend == "cpu") {
      open = [] { return std::make_unique<CpuEvaluator>(); };
    } else {
      open = [cache_dir] {
        return std::make_unique<GpuEvaluator>([cache_dir](const std::string& arch) {
          return std::make_unique<CompiledKernels>(arch, 1, open_cache(cache_dir));
        });
      };
    }
    exit_code = run_evaluation_worker(open, WorkerProcess::kRequestFd, WorkerProcess::kReplyFd);
  });
}

}  // namespace tiletune::cli

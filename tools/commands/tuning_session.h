// What `tiletune tune` and `tiletune bench` set up to tune: the evaluation worker (this program,
// run as `tiletune worker`), the pool of fuzz workers (the same program), the parallel compiler
// with its disk cache, and the tuning run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "db/result_store.h"
#include "tuner/pipeline/tuning_run.h"

namespace tiletune::cli {

struct SessionOptions {
  std::string backend = "gpu";  // "cpu": the fuzzer's CPU backend stands in for the GPU
  std::string cache_dir;        // compiled cubins; empty: the default (cubin_cache.h)
  double watchdog_seconds = 30;
  int fuzz_workers = -1;  // processes that fuzz side by side; 0: the worker fuzzes; -1: by the cores
};

// Fuzz workers when none are asked for: half the cores (the other half compiles), at most 8.
unsigned default_fuzz_workers();
// The fuzz workers to start for --fuzz-workers `requested` (-1: the default): at most one per
// core, saying so on stderr when that caps the request.
unsigned capped_fuzz_workers(int requested);

// Adds --backend, --cache-dir, --watchdog and --fuzz-workers to a command.
void add_session_options(CLI::App& command, SessionOptions& options);

class TuningSession {
 public:
  // Starts the worker (GpuUnavailable when it cannot open the device): before the database is
  // opened, so that a machine without a GPU creates no file.
  explicit TuningSession(const SessionOptions& options);

  // The tuning run, recording into `store`; started by the first call.
  TuningRun& run(ResultStore& store, const TuningSettings& settings);
  const CompiledKernels& compiled() const { return *compiled_; }
  int workers_started() const;
  unsigned fuzz_workers() const { return fuzz_pool_ ? fuzz_pool_->size() : 0; }

 private:
  std::unique_ptr<WorkerClient> worker_;
  std::unique_ptr<FuzzPool> fuzz_pool_;
  std::unique_ptr<CompiledKernels> compiled_;
  std::unique_ptr<TuningRun> run_;
};

}  // namespace tiletune::cli

// What `tiletune tune` and `tiletune bench` set up to tune: the evaluation worker (this program,
// run as `tiletune worker`), the parallel compiler with its disk cache, and the tuning run.
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
};

// Adds --backend, --cache-dir and --watchdog to a command.
void add_session_options(CLI::App& command, SessionOptions& options);

class TuningSession {
 public:
  // Starts the worker (GpuUnavailable when it cannot open the device): before the database is
  // opened, so that a machine without a GPU creates no file.
  explicit TuningSession(const SessionOptions& options);

  // The tuning run, recording into `store`; started by the first call.
  TuningRun& run(ResultStore& store, const TuningSettings& settings);
  const CompiledKernels& compiled() const { return *compiled_; }
  int workers_started() const { return worker_->workers_started(); }

 private:
  std::unique_ptr<WorkerClient> worker_;
  std::unique_ptr<CompiledKernels> compiled_;
  std::unique_ptr<TuningRun> run_;
};

}  // namespace tiletune::cli

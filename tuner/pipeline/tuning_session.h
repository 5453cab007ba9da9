// What `tiletune tune` and `tiletune bench` set up to tune: for each device, an evaluation worker
// (this program, run as `tiletune worker --device N`) and a pool of fuzz workers (the same
// program); the parallel compiler with its disk cache; and a tuning run for each model among the
// devices (device_pool.h: devices of one model share its work and its GPU identity).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "db/result_store.h"
#include "tuner/pipeline/evaluation_worker.h"
#include "tuner/pipeline/tuning_run.h"
#include "tuner/system/private_files.h"

namespace tiletune {

struct SessionOptions {
  std::string backend = "gpu";  // "cpu": the fuzzer's CPU backend stands in for the GPU
  std::string cache_dir;        // compiled cubins; empty: the default (cubin_cache.h)
  double watchdog_seconds = 30;
  // Per device, processes that fuzz side by side; 0: the worker fuzzes; -1: by the cores.
  int fuzz_workers = -1;
  std::optional<std::string> devices;  // --devices: "all" or "0,2"; none: one, $TILETUNE_DEVICE or 0
  // The program each worker runs as `PROGRAM worker ...`: tiletune itself, or (a test driving a
  // session) the tiletune binary named.
  std::string worker_program = "/proc/self/exe";
};

// The machine's cores (at least 1).
unsigned machine_cores();

// Fuzz workers per device when none are asked for (fuzz_workers_per_device of this machine).
unsigned default_fuzz_workers(unsigned devices = 1);
// The fuzz workers to start on each of `devices` for --fuzz-workers `requested` (-1: the
// default): at most one per core in all, saying so on stderr when that caps the request.
unsigned capped_fuzz_workers(int requested, unsigned devices = 1);

// The threads each worker spreads a large fuzz reference over (set_reference_threads): the
// cores shared by one lane's fuzz workers (or its worker, without any), so that one lane fuzzing
// alone (the others timing) still fills the cores, and all lanes fuzzing at once start a few
// threads a core, not one per core in every worker (32 x 64 threads on 64 cores with 4 lanes).
unsigned reference_threads(unsigned fuzz_workers);

class TuningSession {
 public:
  // Starts a worker on each device of `ordinals` (none: one on the worker's default device),
  // GpuUnavailable when one cannot open its device: before the database is opened, so that a
  // machine without a GPU creates no file.
  TuningSession(const SessionOptions& options, const std::vector<int>& ordinals);

  // A tuning run per model, recording into `store`, in the order of their first device; started
  // by the first call.
  const std::vector<TuningRun*>& runs(ResultStore& store, const TuningSettings& settings);
  // The first model's run.
  TuningRun& run(ResultStore& store, const TuningSettings& settings) { return *runs(store, settings)[0]; }
  // Each model's devices (their lanes, with what each settled and its busy time).
  const DevicePool& devices(std::size_t model) const { return *models_[model].devices; }
  // Compiles, in the background and into the searches' compiled kernels (and the disk cache), what
  // the model's searches of `later` (templates and their shapes, in the order they will be
  // searched) are going to compile: the configurations their requirements and tuning limits allow
  // at one of the shapes and that the geometry does not rule out there. So one template compiles
  // while the templates before it are fuzzed and timed; a search that reaches a configuration
  // first compiles it itself, and one that reaches it while it compiles here waits for it. For
  // whole exhaustive searches on the GPU (the caller's choice); nothing without a disk cache (the
  // workers load cubins from there). Stops when the session ends.
  void compile_ahead(std::size_t model,
                     std::vector<std::pair<KernelTemplate, std::vector<GemmShape>>> later);
  // What was compiled, over every model.
  CompileStatistics compile_statistics() const;
  int workers_started() const;
  unsigned fuzz_workers() const;  // over all devices

 private:
  // The tune's own folder for what its workers share (the CPU backend's full-shape references;
  // none on the GPU), removed with everything in it when the session ends; declared first, so it
  // outlives the workers.
  std::optional<PrivateDirectory> shared_;
  struct Model {
    std::unique_ptr<DevicePool> devices;
    std::unique_ptr<CompiledKernels> compiled;
    std::unique_ptr<TuningRun> run;
    std::jthread ahead;  // compile_ahead's; last, so that it stops first
  };
  std::string cache_dir_;  // the cubin cache's folder; empty: the default
  std::vector<Model> models_;
  std::vector<TuningRun*> runs_;
};

// What a worker process (`tiletune worker`) evaluates on: the backend, its device or worker
// number, the compile cache and the tune's shared folder.
struct WorkerBackend {
  std::string backend = "gpu";  // or "cpu"
  int device = -1;              // -1: $TILETUNE_DEVICE, else 0 (a CPU worker: 0)
  std::string cache_dir;        // empty: the default
  std::string shared_dir;       // the tune's folder for what its workers share; empty: none
};

// Opens the worker's evaluator: the one place where the worker chooses GPU or CPU.
EvaluatorFactory evaluator_factory(const WorkerBackend& worker);

}  // namespace tiletune

#include "tuner/pipeline/tuning_session.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/core/configurations.h"
#include "tuner/pipeline/backend_factory.h"
#include "tuner/pipeline/device_list.h"
#include "tuner/pipeline/evaluation_worker.h"
#include "tuner/pipeline/pruning.h"

namespace tiletune {
namespace {

std::optional<CubinCache> open_cache(const std::string& dir) {
  return CubinCache(dir.empty() ? default_cubin_cache_dir() : std::filesystem::path(dir));
}

}  // namespace

unsigned machine_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

unsigned default_fuzz_workers(unsigned devices) {
  return fuzz_workers_per_device(machine_cores(), devices);
}

unsigned capped_fuzz_workers(int requested, unsigned devices) {
  devices = std::max(devices, 1u);
  if (requested < 0) return default_fuzz_workers(devices);
  // A worker beyond the cores only waits for one, and each is a process (with a CUDA context on
  // the GPU): asking for 100000 would fork until the host runs out of processes.
  const unsigned cores = machine_cores(), cap = std::max(cores / devices, 1u);
  if (unsigned(requested) <= cap) return unsigned(requested);
  if (devices == 1) {
    fmt::print(stderr, "tiletune: --fuzz-workers {} capped to {}: this machine has {} cores\n",
               requested, cap, cores);
  } else {
    fmt::print(stderr, "tiletune: --fuzz-workers {} capped to {} per device: this machine has {} "
               "cores for {} devices\n", requested, cap, cores, devices);
  }
  return cap;
}

unsigned reference_threads(unsigned fuzz_workers) {
  return std::max(1u, machine_cores() / std::max(fuzz_workers, 1u));
}

namespace {

// The GPU identity the database keys results by: devices that share it are one model.
std::tuple<std::string, int, int, int, std::uint64_t> identity(const DeviceProperties& device) {
  return {device.name, device.cc_major, device.cc_minor, device.sm_count, device.memory_bytes};
}

// The ordinals in `ordinals` grouped by model, in the order of each model's first device. The
// CPU backend's workers are all of one model.
std::vector<std::vector<int>> group_by_model(const std::vector<int>& ordinals, const std::string& backend) {
  if (backend == "cpu" || ordinals.size() < 2) return {ordinals};
  std::vector<std::vector<int>> models;
  std::vector<DeviceProperties> first;  // of each model
  for (const int ordinal : ordinals) {
    CUdevice device = 0;
    check_cuda(cuda_driver().cuDeviceGet(&device, ordinal), "cuDeviceGet");
    const DeviceProperties properties = read_device_properties(device, ordinal);
    std::size_t m = 0;
    while (m < models.size() && identity(first[m]) != identity(properties)) ++m;
    if (m == models.size()) {
      models.emplace_back();
      first.push_back(properties);
    }
    models[m].push_back(ordinal);
  }
  return models;
}

}  // namespace

TuningSession::TuningSession(const SessionOptions& options, const std::vector<int>& ordinals)
    : cache_dir_(options.cache_dir) {
  std::vector<std::string> argv = {options.worker_program, "worker", "--backend", options.backend,
                                   "--parent", std::to_string(getpid())};
  if (options.backend == "cpu") {
    shared_.emplace(std::filesystem::temp_directory_path(), "tiletune-tune-");
    argv.insert(argv.end(), {"--shared-dir", shared_->path().string()});
  }
  if (!options.cache_dir.empty()) {
    argv.push_back("--cache-dir");
    argv.push_back(options.cache_dir);
  }
  const std::chrono::milliseconds watchdog(std::int64_t(options.watchdog_seconds * 1000));
  const unsigned devices = unsigned(std::max<std::size_t>(ordinals.size(), 1));
  const unsigned fuzz_workers = capped_fuzz_workers(options.fuzz_workers, devices);
  argv.insert(argv.end(), {"--reference-threads",
                           std::to_string(reference_threads(fuzz_workers))});
  // Without --devices, one worker on its default device, as the worker chooses it.
  const std::vector<std::vector<int>> models =
      ordinals.empty() ? std::vector<std::vector<int>>{{}} : group_by_model(ordinals, options.backend);
  for (const std::vector<int>& model : models) {
    std::vector<LaneCommand> lanes;
    for (const int ordinal : model) {
      LaneCommand lane{argv, watchdog, fuzz_workers};
      lane.argv.insert(lane.argv.end(), {"--device", std::to_string(ordinal)});
      lanes.push_back(std::move(lane));
    }
    if (model.empty()) lanes.push_back(LaneCommand{argv, watchdog, fuzz_workers});
    Model m;
    m.devices = std::make_unique<DevicePool>(lanes);
    m.compiled = std::make_unique<CompiledKernels>(m.devices->lane(0).device.arch(), 0,
                                                   open_cache(options.cache_dir));
    models_.push_back(std::move(m));
  }
}

const std::vector<TuningRun*>& TuningSession::runs(ResultStore& store, const TuningSettings& settings) {
  if (runs_.empty()) {
    for (Model& model : models_) {
      model.run = std::make_unique<TuningRun>(*model.devices, store, *model.compiled, settings);
      runs_.push_back(model.run.get());
    }
  }
  return runs_;
}

void TuningSession::compile_ahead(std::size_t model,
                                  std::vector<std::pair<KernelTemplate, std::vector<GemmShape>>> later) {
  if (later.empty() || (cache_dir_.empty() && default_cubin_cache_dir().empty())) return;
  Model& m = models_.at(model);
  const DeviceProperties device = m.devices->lane(0).device;
  // Into the searches' own CompiledKernels: a search that reaches a template still compiling
  // here waits for what is under way and compiles the rest itself, nothing twice.
  m.ahead = std::jthread([later = std::move(later), device, &compiled = *m.compiled](std::stop_token stop) {
    try {
      for (const auto& [tmpl, shapes] : later) {
        const std::vector<Configuration> configs = configurations_to_compile(tmpl, shapes, &device);
        if (stop.stop_requested()) return;
        // Half the cores: the searches' own compiles and the fuzz workers need the rest (on an
        // H200 every core gained nothing clear: the main job 94.0 s against 97.8 from empty).
        compiled.prepare(tmpl, configs, {}, stop, std::max(1u, machine_cores() / 2));
      }
    } catch (const std::exception&) {
      // NVRTC failing, say: the search that reaches the configuration meets it and says so.
    }
  });
}

CompileStatistics TuningSession::compile_statistics() const {
  CompileStatistics all;
  for (const Model& model : models_) {
    const CompileStatistics& one = model.compiled->statistics();
    all.compiled += one.compiled;
    all.from_cache += one.from_cache;
    all.compile_seconds += one.compile_seconds;
  }
  return all;
}

int TuningSession::workers_started() const {
  int started = 0;
  for (const Model& model : models_) started += model.devices->workers_started();
  return started;
}

unsigned TuningSession::fuzz_workers() const {
  unsigned workers = 0;
  for (const Model& model : models_) workers += model.devices->fuzz_workers();
  return workers;
}

EvaluatorFactory evaluator_factory(const WorkerBackend& worker) {
  return [worker] {
    BackendChoice choice;
    choice.kind = parse_backend_kind(worker.backend);
    choice.ordinal = worker.device;
    choice.compile_threads = 1;  // the tuner has compiled every configuration into the cache
    if (choice.kind == Backend::Kind::gpu) choice.cubin_cache = open_cache(worker.cache_dir);
    return open_evaluator(std::move(choice), SharedReferences(worker.shared_dir));
  };
}

}  // namespace tiletune

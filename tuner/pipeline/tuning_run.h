// The tuning pipeline for one GPU: for every template, shape and configuration
//   enumerate -> compile (NVRTC, ptxas report) -> device limits -> fuzz (RapidCheck properties on
//   awkward shapes) -> verify at the full shape -> time -> record,
// every outcome written to the database as soon as it is known, so an interrupted tune resumes
// where it stopped and measures nothing twice. Within one run, a configuration is compiled once
// (all of a template's, in parallel, before the first is evaluated) and fuzzed once, however many
// shapes it is tuned for: neither depends on the shape.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "fuzz/property_runner.h"
#include "tuner/gpu_device.h"
#include "tuner/kernel_template.h"
#include "tuner/pipeline/compiled_kernels.h"
#include "tuner/pipeline/kernel_timer.h"

namespace tiletune {

inline FuzzSettings default_fuzz_settings() {
  FuzzSettings settings;
  settings.cases = 30;  // per configuration while tuning; `tiletune fuzz` runs 100 by default
  return settings;
}

// Each configuration is timed briefly while tuning: enough runs for a stable median, at a few
// milliseconds per configuration and shape. `tiletune bench` times the winner again at length.
inline TimingSettings default_tuning_timing() {
  TimingSettings timing;
  timing.warmup_runs = 2;
  timing.min_runs = 5;
  timing.max_runs = 50;
  timing.target_seconds = 0.05;
  return timing;
}

struct TuningSettings {
  FuzzSettings fuzz = default_fuzz_settings();
  TimingSettings timing = default_tuning_timing();
  std::uint64_t data_seed = 1;
  bool remeasure = false;  // re-evaluate configurations that already have a result
};

// One evaluation as it happens, for the progress line.
struct TuningEvent {
  const KernelTemplate* tmpl = nullptr;
  GemmShape shape;
  const Configuration* config = nullptr;
  int index = 0, total = 0;  // position in this template x shape space
  std::string stage;         // "compile", "fuzz", "verify", "time", "done", "recorded earlier"
  const ResultRecord* result = nullptr;  // set when stage is "done"
};

class TuningRun {
 public:
  TuningRun(const GpuDevice& device, ResultStore& store, TuningSettings settings);

  // Tunes every configuration of the template for the shape.
  void tune(const KernelTemplate& tmpl, const GemmShape& shape,
            const std::function<void(const TuningEvent&)>& on_event);

  GpuRecord gpu_record() const { return gpu_; }

 private:
  ResultRecord evaluate(const KernelTemplate& tmpl, const Configuration& config,
                        const GemmShape& shape, class ShapeVerifier& verifier,
                        const std::function<void(const std::string&)>& stage);

  // A configuration's verdict from its first fuzz in this run (status ok: it passed).
  struct FuzzOutcome {
    ResultStatus status = ResultStatus::ok;
    std::string detail;
  };

  const GpuDevice& device_;
  ResultStore& store_;
  TuningSettings settings_;
  GpuRecord gpu_;
  std::int64_t gpu_id_ = 0;
  CompiledKernels compiled_;
  std::map<std::string, FuzzOutcome> fuzzed_;  // by template hash and configuration
};

// The GPU as the database keys it, from the device and the NVRTC found.
GpuRecord make_gpu_record(const DeviceProperties& device);

}  // namespace tiletune

// The tuning pipeline for one GPU: for every template, shape and configuration
//   enumerate -> compile (NVRTC, ptxas report) -> device limits -> fuzz (RapidCheck properties on
//   awkward shapes) -> verify at the full shape -> time -> record,
// every outcome written to the database as soon as it is known, so an interrupted tune resumes
// where it stopped and measures nothing twice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "fuzz/property_runner.h"
#include "tuner/gpu_device.h"
#include "tuner/kernel_template.h"
#include "tuner/pipeline/kernel_timer.h"

namespace tiletune {

inline FuzzSettings default_fuzz_settings() {
  FuzzSettings settings;
  settings.cases = 30;  // per configuration while tuning; `tiletune fuzz` runs 100 by default
  return settings;
}

struct TuningSettings {
  FuzzSettings fuzz = default_fuzz_settings();
  TimingSettings timing;
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

  const GpuDevice& device_;
  ResultStore& store_;
  TuningSettings settings_;
  GpuRecord gpu_;
  std::int64_t gpu_id_ = 0;
};

// The GPU as the database keys it, from the device and the NVRTC found.
GpuRecord make_gpu_record(const DeviceProperties& device);

}  // namespace tiletune

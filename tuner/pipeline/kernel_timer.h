// Times launches of a kernel with CUDA events: warm-up first (module load and clocks ramping stay
// out of the numbers), then many timed runs, each bracketed by its own pair of events; the median
// is the figure of merit, min and max show the spread.
#pragma once

#include <functional>

#include "tuner/cuda_driver.h"

namespace tiletune {

struct TimingSettings {
  int warmup_runs = 3;
  int min_runs = 10;
  int max_runs = 100;
  double target_seconds = 0.5;  // stop adding runs once this much GPU time was measured
};

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

// `enqueue` puts one launch on `stream`. Throws CudaError when a run fails.
Timing time_launches(const std::function<void(CUstream)>& enqueue, CUstream stream,
                     const TimingSettings& settings);

}  // namespace tiletune

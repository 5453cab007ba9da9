// Times launches of a kernel with CUDA events: warm-up first (module load and clocks ramping stay
// out of the numbers), then many timed runs (the L2 cache flushed before each, where asked), each bracketed by its own pair of events; the median
// is the figure of merit, min and max show the spread.
#pragma once

#include <functional>
#include <vector>

#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/device_buffer.h"

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

// Median, extremes and count of run times in ms (at least one).
Timing summarize_runs(std::vector<double> samples_ms);

// `enqueue` puts one launch on `stream`; `before_each`, when given, is enqueued before every run
// and outside its events (an L2 flush). Throws CudaError when a run fails.
Timing time_launches(const std::function<void(CUstream)>& enqueue, CUstream stream,
                     const TimingSettings& settings,
                     const std::function<void(CUstream)>& before_each = {});

// Evicts the L2 cache between timed runs by writing a buffer twice its size: each run then reads
// its operands from memory, as it would inside an application, not from the previous run's cache.
class L2Flush {
 public:
  explicit L2Flush(std::size_t l2_bytes);
  void operator()(CUstream stream) const;

 private:
  DeviceBuffer buffer_;
  std::size_t words_ = 0;
};

}  // namespace tiletune

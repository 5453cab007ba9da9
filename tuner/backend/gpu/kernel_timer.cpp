#include "tuner/backend/gpu/kernel_timer.h"

#include <algorithm>
#include <vector>

namespace tiletune {
namespace {

class Event {
 public:
  Event() { check_cuda(cuda_driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate"); }
  ~Event() { cuda_driver().cuEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

double elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  check_cuda(cuda_driver().cuEventElapsedTime(&ms, start.get(), stop.get()), "cuEventElapsedTime");
  return ms;
}

}  // namespace

Timing summarize_runs(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  Timing timing;
  timing.runs = int(n);
  timing.median_ms = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  timing.min_ms = samples.front();
  timing.max_ms = samples.back();
  return timing;
}

L2Flush::L2Flush(std::size_t l2_bytes)
    : buffer_(std::max<std::size_t>(2 * l2_bytes, 4)), words_(std::max<std::size_t>(2 * l2_bytes, 4) / 4) {}

void L2Flush::operator()(CUstream stream) const {
  check_cuda(cuda_driver().cuMemsetD32Async(buffer_.get(), 0, words_, stream), "L2 flush");
}

Timing time_launches(const std::function<void(CUstream)>& enqueue, CUstream stream,
                     const TimingSettings& settings,
                     const std::function<void(CUstream)>& before_each) {
  const CudaDriver& cu = cuda_driver();
  for (int i = 0; i < settings.warmup_runs; ++i) {
    if (before_each) before_each(stream);
    enqueue(stream);
  }
  check_cuda(cu.cuStreamSynchronize(stream), "warm-up runs");

  std::vector<double> samples;
  double total_ms = 0;
  Event start, stop;
  while (int(samples.size()) < settings.max_runs &&
         (int(samples.size()) < settings.min_runs || total_ms < settings.target_seconds * 1e3)) {
    if (before_each) before_each(stream);
    check_cuda(cu.cuEventRecord(start.get(), stream), "cuEventRecord");
    enqueue(stream);
    check_cuda(cu.cuEventRecord(stop.get(), stream), "cuEventRecord");
    check_cuda(cu.cuEventSynchronize(stop.get()), "timed run");
    samples.push_back(elapsed_ms(start, stop));
    total_ms += samples.back();
  }

  return summarize_runs(std::move(samples));
}

}  // namespace tiletune

#include "tuner/runtime/first_call_trial.h"

#include <algorithm>
#include <bit>
#include <chrono>

#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/kernel_timer.h"

namespace tiletune::runtime {
namespace {

// Elements of a strided matrix of `rows` rows of leading dimension `ld`.
std::size_t elements(std::int64_t rows, std::int64_t ld) { return std::size_t(rows) * std::size_t(ld); }

class OwnStream {
 public:
  OwnStream() { check_cuda(cuda_driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); }
  ~OwnStream() { cuda_driver().cuStreamDestroy(stream_); }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

}  // namespace

std::vector<TrialTime> time_candidates_on_gpu(const std::vector<TrialCandidate>& candidates,
                                              const GemmProblem& problem, std::size_t l2_bytes) {
  const GemmShape& s = problem.shape;
  DeviceBuffer a(elements(s.m, problem.lda) * sizeof(float));
  DeviceBuffer b(elements(s.k, problem.ldb) * sizeof(float));
  DeviceBuffer c(elements(s.m, problem.ldc) * sizeof(float));
  const auto ones = std::bit_cast<unsigned>(1.0f);
  check_cuda(cuda_driver().cuMemsetD32(a.get(), ones, a.bytes() / sizeof(float)), "cuMemsetD32");
  check_cuda(cuda_driver().cuMemsetD32(b.get(), ones, b.bytes() / sizeof(float)), "cuMemsetD32");
  const OwnStream stream;
  const L2Flush flush(l2_bytes);
  TimingSettings settings;
  settings.warmup_runs = 1;
  settings.min_runs = settings.max_runs = kTrialRuns;
  std::vector<TrialTime> times;
  for (const TrialCandidate& candidate : candidates) {
    const Timing timing = time_launches(
        [&](CUstream on) { candidate.gpu->launch(candidate.geometry, a.get(), b.get(), c.get(), problem, on); },
        stream.get(), settings, [&](CUstream on) { flush(on); });
    times.push_back({candidate.config, timing.median_ms, timing.runs});
  }
  return times;
}

std::vector<TrialTime> time_candidates_on_cpu(const std::vector<TrialCandidate>& candidates,
                                              const GemmProblem& problem) {
  const GemmShape& s = problem.shape;
  const std::vector<float> a(elements(s.m, problem.lda), 1.0f), b(elements(s.k, problem.ldb), 1.0f);
  std::vector<float> c(elements(s.m, problem.ldc));
  std::vector<TrialTime> times;
  for (const TrialCandidate& candidate : candidates) {
    const auto launch = [&] {
      candidate.cpu->launch(candidate.geometry, a.data(), b.data(), c.data(), int(s.m), int(s.n), int(s.k),
                            int(problem.lda), int(problem.ldb), int(problem.ldc), 0);
    };
    launch();  // warm-up
    std::vector<double> samples;
    for (int run = 0; run < kTrialRuns; ++run) {
      const auto start = std::chrono::steady_clock::now();
      launch();
      samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    const Timing timing = summarize_runs(std::move(samples));
    times.push_back({candidate.config, timing.median_ms, timing.runs});
  }
  return times;
}

}  // namespace tiletune::runtime

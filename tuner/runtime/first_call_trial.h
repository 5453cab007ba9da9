// The first-call trial (Options::trial_candidates): at a problem no record was made at, the
// performance model's few fastest candidates are each timed on this device, and the fastest
// measured serves the problem from then on. Candidates are recorded configurations, each of which
// passed its fuzz when tuned.
//
// The trial runs inside the plan (the first gemm.plan or gemm.run of the problem), before anything
// of the caller's is touched: its operands are its own (scratch memory the size of the problem's
// strided A, B and C, A and B filled with ones: never zeros, which no kernel is timed on), its
// stream is its own, each run bracketed by events and preceded by an L2 flush, as a tune times
// (operands a warm L2 holds whole rank candidates otherwise than the application's runs do). The
// caller's data, stream and C are untouched.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tuner/backend/cpu/cpu_kernel.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/kernel_template.h"

namespace tiletune::runtime {

// A warm-up run, then this many timed ones: enough to rank candidates whose times the model
// already put near each other, few enough that the first call stays cheap.
inline constexpr int kTrialRuns = 5;

struct TrialCandidate {
  std::string config;
  LaunchGeometry geometry;
  std::shared_ptr<const GpuKernel> gpu;  // one of the two, by backend
  std::shared_ptr<const CpuKernel> cpu;
};

struct TrialTime {
  std::string config;
  double median_ms = 0;
  int runs = 0;
};

// Each candidate's median, in the candidates' order. GPU: in the context current on the calling
// thread, the L2 cache of `l2_bytes` flushed before each run. Throws CudaError (e.g. out of memory
// for the scratch operands) or LaunchError.
std::vector<TrialTime> time_candidates_on_gpu(const std::vector<TrialCandidate>& candidates,
                                              const GemmProblem& problem, std::size_t l2_bytes);
std::vector<TrialTime> time_candidates_on_cpu(const std::vector<TrialCandidate>& candidates,
                                              const GemmProblem& problem);

}  // namespace tiletune::runtime

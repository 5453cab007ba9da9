// The GPU backend's check for offsets past 2^31 elements, where a kernel that computes
// `row * lda + k` in 32-bit int wraps negative.
//
// Such a problem needs a matrix of more than 2^31 elements (8 GiB), far too large to mirror on the
// host the way property cases are. So each probe makes one matrix thin but wide-strided (three
// rows, the leading dimension 2^30 + 1, so the third row starts past 2^31), uploads only the
// logical rows, poisons the rest on the device, and checks there that nothing outside C's region
// changed; the few logical elements come back to be compared bit-exactly (small integer inputs).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/gemm_case.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

struct LargeIndexFinding {
  GemmProblem problem;  // the probe that failed
  std::string what;     // the first wrong element, the changed guard, or the launch error
  bool context_lost = false;
};

class LargeIndexProbe {
 public:
  explicit LargeIndexProbe(const GpuDevice& device);
  ~LargeIndexProbe();
  LargeIndexProbe(const LargeIndexProbe&) = delete;
  LargeIndexProbe& operator=(const LargeIndexProbe&) = delete;

  // A with a wide lda, then B with a wide ldb, then C with a wide ldc.
  static std::vector<GemmProblem> problems();
  // Device memory the largest probe needs.
  static std::size_t bytes_needed();
  // Why the probes cannot run on this device now (not enough free memory), or nothing.
  std::optional<std::string> unavailable() const;

  // Runs every probe whose problem meets the configuration's requirements (`skipped`, when
  // given, says which were left out and why); the first failure, or nothing when the
  // configuration passed them all. Throws CudaError when the probe cannot be set up (memory); a
  // failing kernel is a finding.
  std::optional<LargeIndexFinding> check(const GpuKernel& kernel, const KernelTemplate& tmpl,
                                         const Configuration& config,
                                         std::vector<std::string>* skipped = nullptr) const;
  // Runs one of problems() (the replay of a reported probe); throws RequirementNotMet for a
  // problem the configuration's requirements exclude.
  std::optional<LargeIndexFinding> check(const GpuKernel& kernel, const KernelTemplate& tmpl,
                                         const Configuration& config,
                                         const GemmProblem& problem) const;

 private:
  CUmodule module_ = nullptr;
  CUfunction outside_changed_ = nullptr;
  int sm_count_ = 0;  // the GPU's, for launch geometries that read SM_COUNT
};

}  // namespace tiletune

// The last stages of an evaluation, at the tune's full shape: the configuration's result checked
// against the reference, then its timing. They differ by backend, so each backend has its own
// (gpu_full_shape_check.h, cpu_full_shape_check.h), and each keeps one shape's inputs and
// reference from configuration to configuration.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fuzz/gemm_executor.h"
#include "tuner/backend/gpu/kernel_timer.h"
#include "tuner/core/records.h"

namespace tiletune {

// Called with the name of each stage as it starts ("reference", "verify"): the worker reports it.
using StageCallback = std::function<void(const std::string& stage)>;

// Why a configuration failed its check at the full shape, as its result records it.
struct FullShapeFailure {
  ResultStatus status;
  std::string detail;
};

class FullShapeCheck {
 public:
  virtual ~FullShapeCheck() = default;

  // Runs the configuration's build (`config`, KernelTemplate::build_configuration; through
  // `executor`, made by make_executor on the same backend) on the full problem (the tune's shape,
  // packed, with its transposes) on the tune's data and checks it; nothing when its result is
  // right. Throws TemplateError where the shape has no launch, LaunchError or CudaError where it
  // fails.
  virtual std::optional<FullShapeFailure> check(GemmExecutor& executor, const KernelTemplate& tmpl,
                                                const Configuration& config,
                                                const GemmProblem& problem, std::uint64_t data_seed,
                                                const StageCallback& stage) = 0;

  // Times the configuration's build on the full problem, on the same data.
  virtual Timing time(GemmExecutor& executor, const KernelTemplate& tmpl, const Configuration& config,
                      const GemmProblem& problem, std::uint64_t data_seed,
                      const TimingSettings& settings) = 0;
};

}  // namespace tiletune

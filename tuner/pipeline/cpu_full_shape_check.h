// The full shape on the CPU backend: checked like a fuzz case, against a reference that the
// tune's workers share (computed once, by whichever asks first), and timed by the wall clock.
// Those times rank nothing on any GPU: they are recorded under the device "CPU backend".
#pragma once

#include <memory>
#include <string>

#include "fuzz/gemm_oracle.h"
#include "tuner/pipeline/full_shape_check.h"
#include "tuner/pipeline/shared_references.h"

namespace tiletune {

class CpuFullShapeCheck : public FullShapeCheck {
 public:
  // `references`: where the workers of a tune share the full shapes' references.
  explicit CpuFullShapeCheck(SharedReferences references = SharedReferences())
      : references_(std::move(references)) {}

  std::optional<FullShapeFailure> check(GemmExecutor& executor, const KernelTemplate& tmpl,
                                        const Configuration& config, const GemmProblem& problem,
                                        std::uint64_t data_seed, const StageCallback& stage) override;
  Timing time(GemmExecutor& executor, const KernelTemplate& tmpl, const Configuration& config,
              const GemmProblem& problem, std::uint64_t data_seed, const TimingSettings& settings) override;

 private:
  // The reference of the full-shape case, from the shared folder or computed (announced as the
  // stage "reference"); kept for the next configuration at the same shape.
  const ReferenceTable& reference_of(const GemmCase& full, const StageCallback& stage);

  SharedReferences references_;
  std::string reference_name_;  // of the one kept
  std::shared_ptr<const ReferenceTable> reference_;
};

}  // namespace tiletune

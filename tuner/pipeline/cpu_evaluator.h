// Evaluations on the fuzzer's CPU backend, in the worker process: the tuner's whole machinery
// (worker, watchdog, restarts, pruning, strategies, the database) on a machine without a GPU.
// A configuration is built by the host compiler, fuzzed, checked at the full shape against the
// CPU reference and timed by the wall clock. Those times rank nothing on any GPU: they are
// recorded under the device name "CPU backend" so that they are never mistaken for a GPU's.
#pragma once

#include "fuzz/reference_cache.h"
#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/pipeline/evaluator.h"
#include "tuner/pipeline/shared_references.h"

namespace tiletune {

// The limits the CPU backend enforces (CUDA's own, with an sm_90's shared memory), under the name
// "CPU backend": what the tuner prunes against and compiles the ptxas report for.
DeviceProperties cpu_backend_device();

class CpuEvaluator : public Evaluator {
 public:
  // `ordinal` numbers this worker among the CPU backend's workers (`tune --devices 0,1`);
  // `references` is where the workers of a tune share the full shapes' references.
  explicit CpuEvaluator(CpuBackendOptions options = {}, int ordinal = 0,
                        SharedReferences references = SharedReferences());

  const DeviceProperties& device() const override { return device_; }
  EvaluationOutcome evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                             const StageCallback& stage, const CaseCallback& before_case) override;
  std::vector<Timing> remeasure(const std::vector<const KernelTemplate*>& templates,
                                const RemeasureRequest& request) override;
  // A kernel that faults takes the process with it; one that returns leaves it usable.
  bool usable() const override { return true; }

 private:
  // The reference of the full-shape case, from the shared folder or computed (announced as the
  // stage "reference"); kept for the next configuration at the same shape.
  const ReferenceTable& reference_of(const GemmCase& full, const StageCallback& stage);

  CpuBackendOptions options_;
  DeviceProperties device_;
  SharedReferences references_;
  std::string reference_name_;  // of the one kept
  std::shared_ptr<const ReferenceTable> reference_;
  ReferenceCache fuzz_references_;  // of the last configurations' fuzz cases
};

}  // namespace tiletune

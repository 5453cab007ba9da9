// The CPU backend behind the fuzzer's the GemmExecutor interface: one configuration built by the
// host compiler and run on the case's operands in place, guards and padding included.
#pragma once

#include <string>

#include "fuzz/gemm_executor.h"
#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/backend/cpu/cpu_kernel.h"
#include "tuner/backend/cpu/sanitizer_runtime.h"

namespace tiletune {

class CpuExecutor : public GemmExecutor {
 public:
  // Builds (or finds in the cache) and loads the configuration; throws what CpuKernel throws.
  CpuExecutor(const KernelTemplate& tmpl, const Configuration& config,
              const CpuBackendOptions& options = {});

  // Runs with the case's schedule seed deciding the threads' order between barriers. A kernel
  // that faults takes the process with it: isolating it is the caller's business.
  //
  // Sanitized (options.sanitize), the guards and padding of A, B and C are poisoned for ASan
  // during the launch, and a launch during which ASan or UBSan reported throws a
  // SanitizerFinding (a LaunchError, sanitizer_runtime.h) naming the first report's kind, access,
  // function and the template's file:line; the executor stays usable for the next case.
  void run(const GemmCase& gemm_case, GemmOperands& operands) override;
  std::string backend_name() const override;  // "cpu (4 workers)", "cpu (4 workers, sanitized)"

  const CpuKernel& kernel() const { return kernel_; }

 private:
  void launch(const GemmCase& gemm_case, GemmOperands& operands) const;

  KernelTemplate template_;
  Configuration config_;
  CpuKernel kernel_;
  bool sanitize_ = false;
  std::string source_file_;  // the template's file name as the debug information has it
};

// The matrix's storage as the sanitizer's guard poisoning sees it.
PoisonedGuards::Region guarded_region(const GuardedMatrix& m);

}  // namespace tiletune

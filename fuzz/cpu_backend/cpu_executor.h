// The CPU backend of the fuzzer behind the GemmExecutor interface: one configuration built by the
// host compiler and run on the case's operands in place, guards and padding included.
#pragma once

#include "fuzz/cpu_backend/cpu_backend_options.h"
#include "fuzz/cpu_backend/cpu_kernel.h"
#include "fuzz/gemm_executor.h"

namespace tiletune {

class CpuExecutor : public GemmExecutor {
 public:
  // Builds (or finds in the cache) and loads the configuration; throws what CpuKernel throws.
  CpuExecutor(const KernelTemplate& tmpl, const Configuration& config,
              const CpuBackendOptions& options = {});

  // Runs with the case's schedule seed deciding the threads' order between barriers. A kernel
  // that faults takes the process with it: isolating it is the caller's business.
  void run(const GemmCase& gemm_case, GemmOperands& operands) override;
  std::string backend_name() const override;  // "cpu (4 workers)"

  const CpuKernel& kernel() const { return kernel_; }

 private:
  KernelTemplate template_;
  Configuration config_;
  CpuKernel kernel_;
};

}  // namespace tiletune

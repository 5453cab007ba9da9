// The GPU backend of the fuzzer: one configuration, compiled by NVRTC, run on the case's operands
// copied to the device as they are, guards and poisoned padding included, and copied back whole.
// The device buffers are kept from case to case (grown when a case needs more).
#pragma once

#include <memory>

#include "fuzz/gemm_executor.h"
#include "tuner/device_buffer.h"
#include "tuner/gpu_device.h"
#include "tuner/gpu_kernel.h"

namespace tiletune {

class GpuExecutor : public GemmExecutor {
 public:
  GpuExecutor(const GpuDevice& device, const KernelTemplate& tmpl, const Configuration& config,
              const CompiledKernelImage& image);

  void run(const GemmCase& gemm_case, GemmOperands& operands) override;
  std::string backend_name() const override;

  // After an illegal address or a trap the CUDA context is unusable: nothing more can run in this
  // process.
  bool context_lost() const { return context_lost_; }
  const PtxasReport& resources() const { return report_; }
  const GpuKernel& kernel() const { return kernel_; }

 private:
  const GpuDevice& device_;
  const KernelTemplate& template_;
  Configuration config_;
  GpuKernel kernel_;
  PtxasReport report_;
  DeviceBuffer a_, b_, c_;  // the device copies of a case's operands, guards included
  bool context_lost_ = false;
};

}  // namespace tiletune

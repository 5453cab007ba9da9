// The GPU backend of the fuzzer: one configuration, compiled by NVRTC, run on the case's operands
// copied to the device as they are, guards and poisoned padding included, and copied back whole.
// The device buffers are kept from case to case (grown when a case needs more).
#pragma once

#include <chrono>
#include <memory>

#include "fuzz/gemm_executor.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"

namespace tiletune {

class GpuExecutor : public GemmExecutor {
 public:
  // kernel_timeout: how long a case's kernel may run. Zero waits for ever (the tuner's workers,
  // which their parent watches); otherwise a kernel still running then ends the process with one
  // line naming the case: what a hung kernel holds (the stream, its module, the buffers it reads)
  // cannot be released within the process, and every later launch would queue behind it.
  GpuExecutor(const GpuDevice& device, const KernelTemplate& tmpl, const Configuration& config,
              const CompiledKernelImage& image,
              std::chrono::milliseconds kernel_timeout = std::chrono::milliseconds(0));
  ~GpuExecutor() override;

  // From now on the cases with an odd schedule seed run perturbed (fuzz/perturbed_launch.h): the
  // skewed build of the same configuration where there is one (`skewed`, else the plain build),
  // with a drawn SM_COUNT. The fuzz does this; the tuner's verification runs the plain build only.
  void perturb(const CompiledKernelImage* skewed);

  void run(const GemmCase& gemm_case, GemmOperands& operands) override;
  std::string backend_name() const override;
  std::string case_note(const GemmCase& gemm_case) const override;

  // After an illegal address or a trap the CUDA context is unusable: nothing more can run in this
  // process.
  bool context_lost() const override { return context_lost_; }
  PtxasReport resources() const override { return report_; }
  std::optional<std::string> exceeds_device_limits(const LaunchGeometry& geometry) const override;
  const GpuKernel& kernel() const { return kernel_; }

 private:
  const GpuDevice& device_;
  const KernelTemplate& template_;
  Configuration config_;
  GpuKernel kernel_;
  PtxasReport report_;
  bool perturbed_ = false;
  std::unique_ptr<GpuKernel> skewed_kernel_;
  PtxasReport skewed_report_;
  DeviceBuffer a_, b_, c_;  // the device copies of a case's operands, guards included
  DeviceBuffer bias_;       // and of its bias, where the epilogue reads one
  bool context_lost_ = false;
  std::chrono::milliseconds kernel_timeout_;
  CUevent done_ = nullptr;  // recorded after each launch when there is a timeout

  // Waits for the case's kernel, within the timeout when there is one.
  void wait_for_kernel(const GemmCase& gemm_case);
  bool runs_perturbed(const GemmCase& gemm_case) const;
  int sm_count_for(const GemmCase& gemm_case) const;
};

}  // namespace tiletune

#include "fuzz/gpu_executor.h"

#include <fmt/format.h>

#include "tuner/device_buffer.h"

namespace tiletune {

GpuExecutor::GpuExecutor(const GpuDevice& device, const KernelTemplate& tmpl,
                         const Configuration& config, const CompiledKernelImage& image)
    : device_(device), template_(tmpl), config_(config), kernel_(image, tmpl.entry),
      report_(kernel_.resource_usage(image.report)) {}

std::string GpuExecutor::backend_name() const { return "gpu " + device_.properties().name; }

void GpuExecutor::run(const GemmCase& gemm_case, GemmOperands& operands) {
  if (context_lost_) throw LaunchError("the CUDA context was lost by an earlier launch");
  template_.check_requirements(config_, gemm_case.problem);
  const LaunchGeometry geometry = template_.launch_geometry(config_, gemm_case.problem.shape);
  if (auto limit = exceeds_device_limits(geometry, report_, device_.properties())) {
    throw LaunchError("cannot launch on this device: " + *limit);
  }
  try {
    DeviceBuffer a = DeviceBuffer::from(operands.a.storage);
    DeviceBuffer b = DeviceBuffer::from(operands.b.storage);
    DeviceBuffer c = DeviceBuffer::from(operands.c.storage);
    const auto origin = [](const GuardedMatrix& m) { return m.guard * sizeof(float); };
    kernel_.launch(geometry, a.get() + origin(operands.a), b.get() + origin(operands.b),
                   c.get() + origin(operands.c), gemm_case.problem);
    check_cuda(cuda_driver().cuCtxSynchronize(), "kernel execution");
    a.download_into(operands.a.storage);
    b.download_into(operands.b.storage);
    c.download_into(operands.c.storage);
  } catch (const CudaError& e) {
    context_lost_ = e.context_is_lost();
    throw LaunchError(e.what());
  }
}

}  // namespace tiletune

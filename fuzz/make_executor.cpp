#include "fuzz/make_executor.h"

#include "fuzz/cpu_executor.h"
#include "fuzz/gpu_executor.h"
#include "tuner/backend/cpu/cpu_backend.h"
#include "tuner/backend/gpu/gpu_backend.h"

namespace tiletune {

std::unique_ptr<GemmExecutor> make_executor(Backend& backend, const KernelTemplate& tmpl,
                                            const Configuration& config,
                                            std::chrono::milliseconds kernel_timeout) {
  if (backend.kind() == Backend::Kind::cpu) {
    return std::make_unique<CpuExecutor>(tmpl, config, static_cast<CpuBackend&>(backend).options());
  }
  auto& gpu = static_cast<GpuBackend&>(backend);
  return std::make_unique<GpuExecutor>(gpu.gpu(), tmpl, config, gpu.image(tmpl, config),
                                       kernel_timeout);
}

}  // namespace tiletune

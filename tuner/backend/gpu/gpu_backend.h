// The GPU backend: one device, opened for the whole run, and the configurations compiled for its
// arch by NVRTC, each once (in memory, and on disk where there is a cubin cache).
#pragma once

#include <optional>

#include "tuner/backend/backend.h"
#include "tuner/backend/gpu/compiled_kernels.h"
#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/backend/gpu/gpu_device.h"

namespace tiletune {

class GpuBackend : public Backend {
 public:
  // Opens device `ordinal` (GpuUnavailable without it); `compile_threads` NVRTC threads compile
  // (0: one per core), keeping what they compile in `cache` where there is one.
  GpuBackend(int ordinal, unsigned compile_threads, std::optional<CubinCache> cache);

  Kind kind() const override { return Kind::gpu; }
  const DeviceProperties& device() const override { return device_.properties(); }
  std::string where() const override { return device_.properties().name; }
  std::string load_stage() const override { return "load"; }
  double prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) override;

  const GpuDevice& gpu() const { return device_; }
  // The configuration's image, compiled now unless prepared; throws CompileError.
  const CompiledKernelImage& image(const KernelTemplate& tmpl, const Configuration& config) {
    return compiled_.get(tmpl, config);
  }

 private:
  GpuDevice device_;
  CompiledKernels compiled_;
};

}  // namespace tiletune

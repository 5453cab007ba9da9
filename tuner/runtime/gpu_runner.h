// The GPU side of the runtime library: the caller's CUDA context, its device, and each
// configuration loaded once per context, its image built once per process: from the bundle's
// cubin where one fits the device, else from the disk cubin cache, else compiled with NVRTC (and
// stored there). Concurrent first calls for one configuration wait for the one build.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::runtime {

struct Bundle;

class GpuRunner {
 public:
  // `bundle` (may be null) outlives the runner. `cache_dir` empty: the user's cubin cache.
  GpuRunner(const Bundle* bundle, std::filesystem::path cache_dir);
  ~GpuRunner();

  // The context current on the calling thread; where there is none, device 0's primary context,
  // made current (as the CUDA runtime does). Throws GpuUnavailable without a driver or device.
  CUcontext current_context();
  // The device of a context current on the calling thread.
  const DeviceProperties& device(CUcontext context);

  // The configuration's build (KernelTemplate::build_configuration) loaded in the context
  // (current on the calling thread), ready to launch `geometry` (dynamic shared memory reserved,
  // device limits checked). Throws CompileError, EntryContractError, CudaError, NvrtcError,
  // std::runtime_error naming the cause.
  std::shared_ptr<const GpuKernel> kernel(CUcontext context, const RecordedTemplate& templ,
                                          const std::string& config, const Specialization& build,
                                          const LaunchGeometry& geometry);

 private:
  // hash, config, build, arch
  using ImageKey = std::tuple<std::string, std::string, std::string, std::string>;
  // context, hash, config, build
  using KernelKey = std::tuple<CUcontext, std::string, std::string, std::string>;
  std::shared_ptr<const CompiledKernelImage> image(const RecordedTemplate& templ,
                                                   const std::string& config,
                                                   const Specialization& build,
                                                   const DeviceProperties& device);
  CompiledKernelImage build_image(const RecordedTemplate& templ, const std::string& config,
                                  const Specialization& build, const DeviceProperties& device);

  const Bundle* bundle_;
  std::filesystem::path cache_dir_;
  std::mutex mutex_;  // guards the maps below, never held while building
  std::map<CUdevice, DeviceProperties> devices_;
  std::map<ImageKey, std::shared_future<std::shared_ptr<const CompiledKernelImage>>> images_;
  std::map<KernelKey, std::shared_future<std::shared_ptr<const GpuKernel>>> kernels_;
  CUcontext primary_ = nullptr;  // device 0's primary context, retained by us when we made it current
  CUdevice primary_device_ = 0;
};

}  // namespace tiletune::runtime

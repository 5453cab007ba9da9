#include "tuner/runtime/gpu_runner.h"

#include <fmt/format.h>

#include "tuner/runtime/build_once.h"
#include "tuner/runtime/bundle.h"

namespace tiletune::runtime {

GpuRunner::GpuRunner(const Bundle* bundle, std::filesystem::path cache_dir)
    : bundle_(bundle),
      cache_dir_(cache_dir.empty() ? default_cubin_cache_dir() : std::move(cache_dir)) {}

GpuRunner::~GpuRunner() {
  // Modules are unloaded by their kernels (owned by kernels_) before the context is released.
  kernels_.clear();
  if (primary_ != nullptr) cuda_driver().cuDevicePrimaryCtxRelease(primary_device_);
}

CUcontext GpuRunner::current_context() {
  const CudaDriver& cu = cuda_driver();
  CUcontext context = nullptr;
  check_cuda(cu.cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  if (context != nullptr) return context;
  {
    const std::lock_guard lock(mutex_);
    if (primary_ == nullptr) {
      CUdevice device = 0;
      check_cuda(cu.cuDeviceGet(&device, 0), "cuDeviceGet(0)");
      check_cuda(cu.cuDevicePrimaryCtxRetain(&primary_, device), "cuDevicePrimaryCtxRetain");
      primary_device_ = device;
    }
    context = primary_;
  }
  check_cuda(cu.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return context;
}

const DeviceProperties& GpuRunner::device(CUcontext context) {
  CUdevice device = 0;
  check_cuda(cuda_driver().cuCtxGetDevice(&device), "cuCtxGetDevice");
  const std::lock_guard lock(mutex_);
  auto found = devices_.find(device);
  if (found == devices_.end()) {
    found = devices_.emplace(device, read_device_properties(device, int(device))).first;
  }
  return found->second;  // std::map: the reference stays valid as others are added
}

CompiledKernelImage GpuRunner::build_image(const RecordedTemplate& templ, const std::string& config,
                                           const Specialization& build,
                                           const DeviceProperties& device) {
  // A bundle carries the plain build of each configuration.
  if (bundle_ != nullptr && build.plain()) {
    if (auto cubin = bundle_->cubin_for(templ.source_hash, config, device.cc_major, device.cc_minor)) {
      CompiledKernelImage image;
      image.arch = device.arch();
      image.cubin = std::move(*cubin);
      return image;
    }
  }
  // No cubin fits: build from the source (the bundle's JIT fallback, or a database's template).
  const KernelTemplate& parsed = *templ.parsed;
  const Configuration configuration =
      parsed.build_configuration(parsed.parse_configuration(config), build);
  CubinCache cache(cache_dir_);
  const CubinKey key = CubinKey::of(parsed, configuration, device.arch());
  if (std::optional<CompileOutcome> stored = cache.load(key)) {
    if (stored->image) return *stored->image;
    throw CompileError(stored->error, stored->log);
  }
  CompileOutcome outcome;
  try {
    outcome.image = compile_configuration(parsed, configuration, device.arch());
  } catch (const CompileError& e) {
    outcome.error = e.what();
    outcome.log = e.log();
    cache.store(key, outcome);
    throw;
  }
  cache.store(key, outcome);
  return *outcome.image;
}

std::shared_ptr<const CompiledKernelImage> GpuRunner::image(const RecordedTemplate& templ,
                                                            const std::string& config,
                                                            const Specialization& build,
                                                            const DeviceProperties& device) {
  const ImageKey key{templ.source_hash, config, build.to_string(), device.arch()};
  return build_once(mutex_, images_, key, [&] {
    return std::shared_ptr<const CompiledKernelImage>(
        std::make_shared<CompiledKernelImage>(build_image(templ, config, build, device)));
  });
}

std::shared_ptr<const GpuKernel> GpuRunner::kernel(CUcontext context, const RecordedTemplate& templ,
                                                   const std::string& config,
                                                   const Specialization& build,
                                                   const LaunchGeometry& geometry) {
  const DeviceProperties& props = device(context);
  const KernelKey key{context, templ.source_hash, config, build.to_string()};
  std::shared_ptr<const GpuKernel> loaded =
      build_once(mutex_, kernels_, key, [&] {
        const std::shared_ptr<const CompiledKernelImage> built = image(templ, config, build, props);
        return std::shared_ptr<const GpuKernel>(std::make_shared<GpuKernel>(
            *built, templ.parsed->entry, entry_form(*templ.parsed)));
      });
  if (auto limit = exceeds_device_limits(geometry, loaded->resource_usage(PtxasReport{}), props)) {
    throw std::runtime_error(fmt::format("{} [{}] cannot run on {}: {}", templ.name, config,
                                         props.name, *limit));
  }
  loaded->reserve_dynamic_shared(geometry.dynamic_shared_bytes);
  return loaded;
}

}  // namespace tiletune::runtime

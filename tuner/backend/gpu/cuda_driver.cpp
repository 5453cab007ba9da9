#include "tuner/backend/gpu/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace tiletune {
namespace {

CudaDriver load_driver() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    throw GpuUnavailable(fmt::format("no CUDA driver: cannot load libcuda.so.1 ({})",
                                     why ? why : "unknown reason"));
  }
  CudaDriver driver;
  // Resolve each symbol under the name our headers map it to (cuMemAlloc is cuMemAlloc_v2 there),
  // so the pointer's type and the function behind it always agree. cuGetProcAddress with our
  // CUDA_VERSION would not: it hands out cuCtxSynchronize_v2, which takes an argument.
#define TILETUNE_SYMBOL_NAME(fn) #fn
#define TILETUNE_EXPANDED_NAME(fn) TILETUNE_SYMBOL_NAME(fn)
#define TILETUNE_RESOLVE(fn)                                                                  \
  driver.fn = reinterpret_cast<decltype(driver.fn)>(dlsym(library, TILETUNE_EXPANDED_NAME(fn))); \
  if (driver.fn == nullptr) {                                                                 \
    throw GpuUnavailable(fmt::format("the CUDA driver is too old: it lacks {} (CUDA {}.{} required)", \
                                     TILETUNE_EXPANDED_NAME(fn), CUDA_VERSION / 1000,         \
                                     CUDA_VERSION % 1000 / 10));                              \
  }
  TILETUNE_CUDA_DRIVER_FUNCTIONS(TILETUNE_RESOLVE)
#undef TILETUNE_RESOLVE
#define TILETUNE_RESOLVE_OPTIONAL(fn) \
  driver.fn = reinterpret_cast<decltype(driver.fn)>(dlsym(library, TILETUNE_EXPANDED_NAME(fn)));
  TILETUNE_CUDA_DRIVER_OPTIONAL_FUNCTIONS(TILETUNE_RESOLVE_OPTIONAL)
#undef TILETUNE_RESOLVE_OPTIONAL

  const CUresult init = driver.cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    driver.cuGetErrorName(init, &name);
    throw GpuUnavailable(fmt::format("no usable GPU: cuInit failed with {}",
                                     name ? name : "an unknown error"));
  }
  int devices = 0;
  if (driver.cuDeviceGetCount(&devices) != CUDA_SUCCESS || devices == 0) {
    throw GpuUnavailable("no usable GPU: the CUDA driver sees no device");
  }
  return driver;
}

}  // namespace

const CudaDriver& cuda_driver() {
  // Loaded once; a failure is remembered and reported the same way every time.
  static std::once_flag once;
  static CudaDriver driver;
  static std::string failure;
  std::call_once(once, [] {
    try {
      driver = load_driver();
    } catch (const GpuUnavailable& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw GpuUnavailable(failure);
  return driver;
}

void check_cuda(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const CudaDriver& driver = cuda_driver();
  const char* name = nullptr;
  const char* description = nullptr;
  driver.cuGetErrorName(result, &name);
  driver.cuGetErrorString(result, &description);
  throw CudaError(result, fmt::format("{}: {} ({})", what, name ? name : "unknown CUDA error",
                                      description ? description : "no description"));
}

bool CudaError::context_is_lost() const {
  switch (code_) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

}  // namespace tiletune

#include "tuner/backend/gpu/own_kernel.h"

#include <utility>

#include "tuner/backend/device_properties.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/device_library.h"

namespace tiletune {

OwnKernel::OwnKernel(const char* source, std::string file_name, std::string entry, std::string what)
    : source_(source), file_name_(std::move(file_name)), entry_(std::move(entry)), what_(std::move(what)) {}

OwnKernel::~OwnKernel() {
  if (module_ != nullptr) cuda_driver().cuModuleUnload(module_);
}

CUfunction OwnKernel::function() {
  std::call_once(loaded_, [this] { load(); });
  return function_;
}

void OwnKernel::load() {
  const CudaDriver& cu = cuda_driver();
  CUdevice device = 0;
  DeviceProperties gpu;
  if (cu.cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      cu.cuDeviceGetAttribute(&gpu.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) != CUDA_SUCCESS ||
      cu.cuDeviceGetAttribute(&gpu.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) != CUDA_SUCCESS) {
    why_not_ = "no current CUDA device";
    return;
  }
  try {
    const CompiledKernelImage& image =
        compile_cuda_source_once(inline_device_library(source_), file_name_, gpu.arch(), entry_, what_);
    check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData");
    check_cuda(cu.cuModuleGetFunction(&function_, module_, entry_.c_str()), "cuModuleGetFunction");
  } catch (const std::exception& e) {
    function_ = nullptr;
    why_not_ = what_ + ": " + e.what();
  }
}

}  // namespace tiletune

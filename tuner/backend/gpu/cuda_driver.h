// The CUDA driver API, opened at run time.
//
// tiletune never links libcuda: it opens libcuda.so.1 on first use, so that on a machine without
// a driver or a GPU every command still starts, and those that need a GPU say why they cannot run.
// Entry points are resolved by the versioned names the headers give them (cuMemAlloc_v2, ...).
#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>

namespace tiletune {

// A failed driver call: the call's name, CUDA's error name and its description.
class CudaError : public std::runtime_error {
 public:
  CudaError(CUresult code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  CUresult code() const { return code_; }
  // Errors after which the context is unusable (illegal address, trap, misaligned access, ...).
  bool context_is_lost() const;

 private:
  CUresult code_;
};

// No driver, no device, or a driver too old: the reason in words, for one clear line.
class GpuUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CudaDriver {
#define TILETUNE_CUDA_DRIVER_FUNCTIONS(X)                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)     \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                   \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice)        \
  X(cuCtxSynchronize) X(cuModuleLoadData)                                                   \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute)      \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)               \
  X(cuMemsetD32) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery)  \
  X(cuEventElapsedTime) X(cuGetErrorName) X(cuGetErrorString) X(cuStreamCreate)             \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemGetInfo) X(cuMemsetD2D32Async) X(cuMemsetD32Async)  \
  X(cuMemcpy2DAsync) X(cuMemcpyDtoDAsync)
// Entry points a driver older than tiletune's toolkit may lack: null there, and what needs them
// is skipped (cuFuncGetParamInfo, CUDA 12.4: the entry's parameter layout, gpu_kernel.cpp), or
// refused with the reason (cuTensorMapEncodeTiled, CUDA 12.0: templates with tensor maps).
#define TILETUNE_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X) X(cuFuncGetParamInfo) X(cuTensorMapEncodeTiled)
#define TILETUNE_DECLARE_POINTER(fn) decltype(&::fn) fn = nullptr;
  TILETUNE_CUDA_DRIVER_FUNCTIONS(TILETUNE_DECLARE_POINTER)
  TILETUNE_CUDA_DRIVER_OPTIONAL_FUNCTIONS(TILETUNE_DECLARE_POINTER)
#undef TILETUNE_DECLARE_POINTER
};

// The driver, loaded and initialised once. Throws GpuUnavailable with the reason.
const CudaDriver& cuda_driver();

// Throws CudaError("<what>: CUDA_ERROR_X (description)") unless result is CUDA_SUCCESS.
void check_cuda(CUresult result, const char* what);

}  // namespace tiletune

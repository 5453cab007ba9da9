#include "tuner/backend/gpu/gpu_device.h"

#include <cstdlib>

#include <fmt/format.h>

#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {
namespace {

int attribute(CUdevice device, CUdevice_attribute which, const char* what) {
  int value = 0;
  check_cuda(cuda_driver().cuDeviceGetAttribute(&value, which, device), what);
  return value;
}

}  // namespace

DeviceProperties read_device_properties(CUdevice device, int ordinal) {
  const CudaDriver& cu = cuda_driver();
  DeviceProperties p;
  char name[256] = {};
  check_cuda(cu.cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
  p.name = name;
  p.ordinal = ordinal;
  p.cc_major = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
  p.cc_minor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
  p.sm_count = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  p.clock_khz = attribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate");
  std::size_t bytes = 0;
  check_cuda(cu.cuDeviceTotalMem(&bytes, device), "cuDeviceTotalMem");
  p.memory_bytes = bytes;
  check_cuda(cu.cuDriverGetVersion(&p.driver_version), "cuDriverGetVersion");
  p.max_threads_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads");
  p.max_block_dim[0] = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "max block x");
  p.max_block_dim[1] = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, "max block y");
  p.max_block_dim[2] = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "max block z");
  p.max_grid_dim[0] = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "max grid x");
  p.max_grid_dim[1] = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "max grid y");
  p.max_grid_dim[2] = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "max grid z");
  p.max_shared_bytes_per_block =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "max shared memory");
  p.max_shared_bytes_per_block_optin =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "max shared memory");
  p.max_registers_per_block =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "max registers");
  p.warp_size = attribute(device, CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  p.max_registers_per_sm =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per SM");
  p.max_threads_per_sm =
      attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per SM");
  p.l2_cache_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
  return p;
}

int GpuDevice::default_ordinal() {
  const char* text = std::getenv("TILETUNE_DEVICE");
  return text ? std::atoi(text) : 0;
}

GpuDevice::GpuDevice(int ordinal) {
  const CudaDriver& cu = cuda_driver();
  int count = 0;
  check_cuda(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) {
    throw GpuUnavailable(fmt::format("no GPU number {}: the driver sees {} device(s)", ordinal, count));
  }
  check_cuda(cu.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check_cuda(cu.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();

  properties_ = read_device_properties(device_, ordinal);
}

GpuDevice::~GpuDevice() {
  if (context_ != nullptr) cuda_driver().cuDevicePrimaryCtxRelease(device_);
}

void GpuDevice::make_current() const {
  check_cuda(cuda_driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

GpuRecord make_gpu_record(const DeviceProperties& device) {
  GpuRecord gpu;
  gpu.name = device.name;
  gpu.cc_major = device.cc_major;
  gpu.cc_minor = device.cc_minor;
  gpu.sm_count = device.sm_count;
  gpu.clock_khz = device.clock_khz;
  gpu.memory_bytes = device.memory_bytes;
  gpu.driver_version = device.driver_version;
  gpu.nvrtc_version = nvrtc_version();
  return gpu;
}

}  // namespace tiletune

// The GPU tiletune runs on: its identity and limits, and its primary context made current.
#pragma once

#include <cstdint>
#include <string>

#include "tuner/backend/gpu/cuda_driver.h"

namespace tiletune {

struct DeviceProperties {
  std::string name;
  int ordinal = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;
  std::uint64_t memory_bytes = 0;
  int driver_version = 0;
  int max_threads_per_block = 0;
  int max_block_dim[3] = {0, 0, 0};
  int max_grid_dim[3] = {0, 0, 0};
  int max_shared_bytes_per_block = 0;         // without opting in
  int max_shared_bytes_per_block_optin = 0;   // with cuFuncSetAttribute
  int max_registers_per_block = 0;
  int warp_size = 0;
  int max_registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int l2_cache_bytes = 0;  // what the timer flushes between runs

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
  // FP32 peak: SMs x 128 FMA lanes x 2 flops x clock (Hopper, Ampere-class SMs).
  double fp32_peak_tflops() const { return sm_count * 128.0 * 2.0 * clock_khz * 1e3 / 1e12; }
};

// The identity and limits of a device (its context need not be current).
DeviceProperties read_device_properties(CUdevice device, int ordinal);

class GpuDevice {
 public:
  // Opens device `ordinal` (default: $TILETUNE_DEVICE or 0) and makes its primary context
  // current on the calling thread. Throws GpuUnavailable when there is none.
  explicit GpuDevice(int ordinal = default_ordinal());
  ~GpuDevice();
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  const DeviceProperties& properties() const { return properties_; }
  // Makes the context current on the calling thread (each worker thread needs it once).
  void make_current() const;

  static int default_ordinal();

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  DeviceProperties properties_;
};

}  // namespace tiletune

// The identity and limits of the device a backend runs on: what the tuner prunes configurations
// against and records results under. A GPU reads them from the driver (gpu/gpu_device.h); the CPU
// backend states CUDA's own limits under the name "CPU backend" (cpu/cpu_backend.h).
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace tiletune

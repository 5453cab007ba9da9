#include "tuner/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <thread>

namespace tiletune {

DeviceProperties cpu_backend_device() {
  DeviceProperties d;
  d.name = "CPU backend";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = int(std::max(1u, std::thread::hardware_concurrency()));
  d.max_threads_per_block = 1024;
  d.max_block_dim[0] = 1024;
  d.max_block_dim[1] = 1024;
  d.max_block_dim[2] = 64;
  d.max_grid_dim[0] = 2147483647;
  d.max_grid_dim[1] = 65535;
  d.max_grid_dim[2] = 65535;
  d.max_shared_bytes_per_block = 48 * 1024;
  d.max_shared_bytes_per_block_optin = 227 * 1024;
  d.max_registers_per_block = 65536;
  d.max_registers_per_sm = 65536;
  d.max_threads_per_sm = 2048;
  d.warp_size = 32;
  return d;
}

CpuBackend::CpuBackend(CpuBackendOptions options, int ordinal)
    : options_(std::move(options)), device_(cpu_backend_device()) {
  device_.ordinal = ordinal;
}

}  // namespace tiletune

// The CPU backend: each configuration built by the host compiler when its executor is made, each
// CUDA thread a fiber, the blocks on a pool of OS threads. It enforces CUDA's own limits with an
// sm_90's shared memory, so that what it prunes is what a Hopper GPU would reject.
#pragma once

#include "tuner/backend/backend.h"
#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/backend/cpu/cpu_device.h"

namespace tiletune {

class CpuBackend : public Backend {
 public:
  // `ordinal` numbers this backend among a tune's CPU workers (`tune --devices 0,1`).
  explicit CpuBackend(CpuBackendOptions options = {}, int ordinal = 0);

  Kind kind() const override { return Kind::cpu; }
  const DeviceProperties& device() const override { return device_; }
  std::string where() const override { return "the CPU"; }
  std::string load_stage() const override { return "build"; }
  double prepare(const KernelTemplate&, const std::vector<Configuration>&) override { return 0; }

  const CpuBackendOptions& options() const { return options_; }

 private:
  CpuBackendOptions options_;
  DeviceProperties device_;
};

}  // namespace tiletune

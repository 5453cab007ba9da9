// Configurations not worth evaluating on this device, decided as early as possible: before
// compiling from the launch geometry (threads and dynamic shared memory per block), after compiling
// from ptxas's report (static shared memory, registers, spills, an occupancy of zero). Each verdict
// is recorded like a result, so a resumed tune does not decide it again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/kernel_template.h"
#include "tuner/core/records.h"

namespace tiletune {

struct PruneVerdict {
  ResultStatus status = ResultStatus::device_limit;  // device_limit or pruned
  std::string detail;
};

struct PruningPolicy {
  bool keep_spilling = false;  // evaluate configurations that spill registers to local memory
};

// What the geometry alone rules out (a device_limit), or nothing. A geometry the template cannot
// even compute for the shape (a dimension beyond 32 bits) is ruled out too.
std::optional<PruneVerdict> prune_before_compile(const KernelTemplate& tmpl, const Configuration& config,
                                                 const GemmShape& shape, const DeviceProperties& device);

// What a tune of `shapes` would compile of the template, in the space's order: the configurations
// its requirements and tuning limits (`tune_if`) admit at one of the shapes, less those whose
// geometry `device` (when given) rules out there.
std::vector<Configuration> configurations_to_compile(const KernelTemplate& tmpl,
                                                     const std::vector<GemmShape>& shapes,
                                                     const DeviceProperties* device);

// What ptxas's report rules out: beyond the device's limits (device_limit), or spilling, or no
// block fitting on an SM (pruned).
std::optional<PruneVerdict> prune_after_compile(const KernelTemplate& tmpl, const Configuration& config,
                                                const GemmShape& shape, const PtxasReport& report,
                                                const DeviceProperties& device,
                                                const PruningPolicy& policy);

// Blocks of this geometry and report that fit on one SM at once, by registers and threads (shared
// memory beyond a block's limit is a device_limit already). Registers are allocated per warp in
// units of 256.
int resident_blocks_per_sm(const LaunchGeometry& geometry, const PtxasReport& report,
                           const DeviceProperties& device);

}  // namespace tiletune

#include "tuner/pipeline/pruning.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/core/configurations.h"

namespace tiletune {

std::optional<PruneVerdict> prune_before_compile(const KernelTemplate& tmpl, const Configuration& config,
                                                 const GemmShape& shape, const DeviceProperties& device) {
  LaunchGeometry geometry;
  try {
    geometry = tmpl.launch_geometry(config, shape, device.sm_count);
  } catch (const TemplateError& e) {
    return PruneVerdict{ResultStatus::device_limit, e.what()};
  }
  // Without a report: registers and static shared memory count as none yet.
  if (auto limit = exceeds_device_limits(geometry, PtxasReport{}, device)) {
    return PruneVerdict{ResultStatus::device_limit, *limit};
  }
  return std::nullopt;
}

std::vector<Configuration> configurations_to_compile(const KernelTemplate& tmpl,
                                                     const std::vector<GemmShape>& shapes,
                                                     const DeviceProperties* device) {
  std::set<std::string> admitted;
  for (const GemmShape& shape : shapes) {
    for (const Configuration& config : enumerate_configurations(tmpl, &shape)) {
      if (!device || !prune_before_compile(tmpl, config, shape, *device)) {
        admitted.insert(config.to_string());
      }
    }
  }
  std::vector<Configuration> configs = enumerate_configurations(tmpl);
  std::erase_if(configs, [&](const Configuration& c) { return !admitted.contains(c.to_string()); });
  return configs;
}

int resident_blocks_per_sm(const LaunchGeometry& geometry, const PtxasReport& report,
                           const DeviceProperties& device) {
  const std::int64_t warps = (std::int64_t(geometry.threads_per_block()) + 31) / 32;
  const std::int64_t registers_per_warp = (std::int64_t(report.registers) * 32 + 255) / 256 * 256;
  std::int64_t blocks = device.max_threads_per_sm / std::max<std::int64_t>(1, warps * 32);
  if (registers_per_warp > 0) {
    blocks = std::min(blocks, device.max_registers_per_sm / (warps * registers_per_warp));
  }
  return int(blocks);
}

std::optional<PruneVerdict> prune_after_compile(const KernelTemplate& tmpl, const Configuration& config,
                                                const GemmShape& shape, const PtxasReport& report,
                                                const DeviceProperties& device,
                                                const PruningPolicy& policy) {
  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape, device.sm_count);
  if (auto limit = exceeds_device_limits(geometry, report, device)) {
    return PruneVerdict{ResultStatus::device_limit, *limit};
  }
  if (report.spill_bytes() > 0 && !policy.keep_spilling) {
    return PruneVerdict{ResultStatus::pruned,
                        fmt::format("ptxas spills {} bytes to local memory ({} stored, {} loaded)",
                                    report.spill_bytes(), report.spill_store_bytes,
                                    report.spill_load_bytes)};
  }
  if (resident_blocks_per_sm(geometry, report, device) == 0) {
    return PruneVerdict{ResultStatus::pruned,
                        fmt::format("zero occupancy: {} threads x {} registers do not fit on an SM",
                                    geometry.threads_per_block(), report.registers)};
  }
  return std::nullopt;
}

}  // namespace tiletune

#include "tuner/runtime/cpu_runner.h"

#include "tuner/runtime/build_once.h"

namespace tiletune::runtime {

CpuRunner::CpuRunner(std::filesystem::path cache_dir) { options_.cache_dir = std::move(cache_dir); }

std::shared_ptr<const CpuKernel> CpuRunner::kernel(const RecordedTemplate& templ,
                                                   const std::string& config,
                                                   const Specialization& build) {
  return build_once(mutex_, kernels_, std::tuple(templ.source_hash, config, build.to_string()), [&] {
    const KernelTemplate& parsed = *templ.parsed;
    return std::shared_ptr<const CpuKernel>(std::make_shared<CpuKernel>(
        parsed, parsed.build_configuration(parsed.parse_configuration(config), build), options_));
  });
}

}  // namespace tiletune::runtime

// The CPU side of the runtime library: each configuration built by the host compiler once per
// process (and kept in the CPU kernel cache on disk), then run on host pointers.
#pragma once

#include <future>
#include <map>
#include <tuple>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "tuner/backend/cpu/cpu_kernel.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::runtime {

class CpuRunner {
 public:
  // `cache_dir` empty: the user's CPU kernel cache.
  explicit CpuRunner(std::filesystem::path cache_dir);

  // The configuration's build (KernelTemplate::build_configuration), built once; concurrent first
  // calls wait for the one build. Throws what CpuKernel throws.
  std::shared_ptr<const CpuKernel> kernel(const RecordedTemplate& templ, const std::string& config,
                                          const Specialization& build);

 private:
  CpuBackendOptions options_;
  std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, std::shared_future<std::shared_ptr<const CpuKernel>>>
      kernels_;
};

}  // namespace tiletune::runtime

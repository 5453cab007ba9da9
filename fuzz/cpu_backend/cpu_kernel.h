// One configuration of a kernel template built for the CPU (kernel_build.h), loaded into this
// process with dlopen and launched as the SGEMM entry signature: blocks in parallel on a pool of OS
// threads, the threads of a block as fibers (block_scheduler.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "fuzz/cpu_backend/block_scheduler.h"
#include "fuzz/cpu_backend/cpu_backend_options.h"
#include "tuner/kernel_template.h"

namespace tiletune {

class WorkerPool;

class CpuKernel {
 public:
  // Builds the configuration (or finds it in the cache) and loads it. Throws what
  // build_kernel_object throws, CompileError when the entry point is missing, and
  // std::runtime_error when the object cannot be loaded.
  CpuKernel(const KernelTemplate& tmpl, const Configuration& config,
            const CpuBackendOptions& options = {});
  ~CpuKernel();
  CpuKernel(const CpuKernel&) = delete;
  CpuKernel& operator=(const CpuKernel&) = delete;

  // Runs the whole grid and returns when every block is done. Throws LaunchError for a geometry
  // the GPU would reject, a __trap() and barrier divergence, and UnsupportedOnBackend for more
  // dynamic shared memory than the backend provides.
  void launch(const LaunchGeometry& geometry, const float* a, const float* b, float* c, int m,
              int n, int k, int lda, int ldb, int ldc, std::uint64_t schedule_seed) const;

  bool from_cache() const { return from_cache_; }
  unsigned workers() const;
  const std::filesystem::path& object_path() const { return object_path_; }

 private:
  std::filesystem::path object_path_;
  bool from_cache_ = false;
  KernelModule module_;
  std::shared_ptr<WorkerPool> pool_;
};

}  // namespace tiletune

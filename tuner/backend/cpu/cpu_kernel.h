// One configuration of a kernel template built for the CPU (kernel_build.h), loaded into this
// process with dlopen and launched as the SGEMM entry signature: blocks in parallel on a pool of OS
// threads, the threads of a block as fibers (block_scheduler.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "tuner/backend/cpu/block_scheduler.h"
#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/backend/entry_contract.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

class WorkerPool;

class CpuKernel {
 public:
  // Builds the configuration (or finds it in the cache) and loads it. Throws what
  // build_kernel_object throws, EntryContractError (a CompileError, tuner/backend/entry_contract.h) when
  // the entry is missing or its type is not the contract's, and std::runtime_error when the
  // object cannot be loaded.
  CpuKernel(const KernelTemplate& tmpl, const Configuration& config,
            const CpuBackendOptions& options = {});
  ~CpuKernel();
  CpuKernel(const CpuKernel&) = delete;
  CpuKernel& operator=(const CpuKernel&) = delete;

  // Runs the whole grid (after clearing C's m x n elements when the geometry asks for it, with the
  // geometry's tensor maps describing a and b) and
  // returns when every block is done. Throws LaunchError for a geometry the GPU would reject, a
  // __trap(), barrier divergence and a sanitizer report (the launch stops at the first), and
  // UnsupportedOnBackend for more dynamic shared memory than the backend provides.
  void launch(const LaunchGeometry& geometry, const float* a, const float* b, float* c, int m,
              int n, int k, int lda, int ldb, int ldc, std::uint64_t schedule_seed) const;
  // The same for any problem of the BLAS contract the template supports (its batch in grid z, the
  // geometry's z times the entries, as on the GPU), the epilogue reading `bias`.
  void launch(const LaunchGeometry& geometry, const float* a, const float* b, float* c,
              const GemmProblem& problem, std::uint64_t schedule_seed,
              const float* bias = nullptr) const;

  // Loads the object afresh, its static data as the compiler left it: UBSan reports each check
  // of a loaded object once, and a reloaded one reports again. Throws what loading throws; the
  // kernel is unusable then.
  void reload();

  bool from_cache() const { return from_cache_; }
  unsigned workers() const;
  const std::filesystem::path& object_path() const { return object_path_; }  // in the cache
  // What was loaded: object_path(), or when sanitized a private copy of it (see load()).
  const std::filesystem::path& loaded_path() const { return loaded_path_; }

 private:
  void load();  // dlopen and bind object_path_ (or a copy)
  void forget_copy();

  std::string entry_;  // the entry point's name
  std::string label_;  // "tiled (TILE=16,PAD=0,SWIZZLE=0)", for messages
  EntryForm form_;  // the entry's parameters after the contract's
  bool sanitized_ = false;
  std::filesystem::path object_path_;
  std::filesystem::path loaded_path_;
  bool from_cache_ = false;
  KernelModule module_;
  std::shared_ptr<WorkerPool> pool_;
};

}  // namespace tiletune

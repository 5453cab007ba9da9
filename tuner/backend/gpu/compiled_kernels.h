// The compiled configurations of one tuning run, kept in memory so that each is compiled once
// however many shapes it is tuned for. Configurations are compiled ahead, in parallel on all
// cores: NVRTC is thread-safe, and compiling is most of a tune's host time. With a CubinCache,
// outcomes are also looked up on and stored to disk, so that tuning the same space again (or a
// worker process of the same tune) compiles nothing. Several threads may prepare at once (a
// search, and the compile ahead of the templates after it): a configuration one of them is
// compiling, the others wait for rather than compile again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// What a CompiledKernels did so far, for the tuner's summary line.
struct CompileStatistics {
  int compiled = 0;            // configurations compiled with NVRTC (those that failed included)
  int from_cache = 0;          // configurations whose outcome the disk cache gave
  double compile_seconds = 0;  // wall time during which some configuration was being compiled
};

class CompiledKernels {
 public:
  // `threads` 0: one per core. Without a cache nothing is kept on disk (see
  // default_cubin_cache_dir for the user's).
  explicit CompiledKernels(std::string arch, unsigned threads = 0,
                           std::optional<CubinCache> cache = std::nullopt);

  // Called with a configuration's position in `configs` and its outcome as soon as that is known
  // (from memory, the disk cache or NVRTC), from whichever thread learned it.
  using OutcomeCallback = std::function<void(std::size_t index, const CompileOutcome& outcome)>;

  // Compiles every configuration not compiled yet (nor cached on disk), in parallel and in order,
  // storing each outcome in the cache, on `threads` threads (0: the object's). A configuration
  // that does not compile is remembered as such; NvrtcError (NVRTC itself failing) is thrown. One
  // that another prepare is compiling is left to it and waited for after the rest. Once `stop`
  // is requested no further compile starts, and the configurations left have no outcome (nor
  // callback).
  void prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs,
               const OutcomeCallback& on_outcome = {}, std::stop_token stop = {},
               unsigned threads = 0);

  // The configuration's image, from the disk cache or compiled now if `prepare` has not. Throws
  // CompileError as compile_configuration does, for as long as the run lasts.
  const CompiledKernelImage& get(const KernelTemplate& tmpl, const Configuration& config);

  CompileStatistics statistics() const;

 private:
  static std::string memory_key(const KernelTemplate& tmpl, const Configuration& config);
  // The configuration's outcome: known, or taken from the disk cache or NVRTC by this thread.
  // When another thread is compiling it, waits for that when `wait`, else returns nullptr.
  const CompileOutcome* settle(const KernelTemplate& tmpl, const Configuration& config, bool wait);
  CompileOutcome compile(const KernelTemplate& tmpl, const Configuration& config);
  // Stores the outcome on disk, if there is a cache and the outcome is worth keeping.
  void store(const KernelTemplate& tmpl, const CubinKey& key, const CompileOutcome& outcome);

  std::string arch_;
  unsigned threads_;
  std::optional<CubinCache> cache_;
  mutable std::mutex mutex_;          // guards what follows
  std::condition_variable settled_;   // an outcome was added, or a claim given up
  std::map<std::string, CompileOutcome> outcomes_;  // never erased: references stay valid
  std::set<std::string> in_flight_;   // claimed by a thread that is settling them
  int compiling_ = 0;                 // NVRTC compiles running now
  std::chrono::steady_clock::time_point compiling_since_;  // when compiling_ last became 1
  CompileStatistics statistics_;
};

}  // namespace tiletune

// What `tiletune fuzz` and `tiletune mutants` share: the backend a run uses, and the fuzz (or the
// replay of given cases) of one configuration on it, with its outcome and how long it took.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/announcing_executor.h"
#include "fuzz/large_index_probe.h"
#include "fuzz/property_runner.h"
#include "tuner/backend/backend.h"
#include "tuner/backend/cpu/cpu_backend_options.h"
#include "tuner/backend/gpu/gpu_backend.h"
#include "tuner/core/kernel_template.h"

namespace tiletune::cli {

class FuzzBackend {
 public:
  // "gpu" opens the device (GpuUnavailable without one); "cpu" needs only the host compiler.
  FuzzBackend(const std::string& name, CpuBackendOptions cpu_options = {});

  Backend& backend() { return *backend_; }
  // The GPU backend; nullptr on the CPU. The GPU adds perturbed launches and the large-index
  // probe to the fuzz.
  GpuBackend* gpu() const { return gpu_; }
  // On the GPU: how long a case's kernel may run before the process ends with it (GpuExecutor);
  // zero (the default) waits for ever.
  void set_kernel_timeout(std::chrono::milliseconds timeout) { kernel_timeout_ = timeout; }
  std::string where() const { return backend_->where(); }  // "NVIDIA H200" or "the CPU"
  // The cases this backend draws: the GPU also gets crowded shapes, where barrier races show.
  CaseLimits case_limits() const;
  // On the GPU: compiles the configurations ahead, with the template's skewed build, in
  // parallel (the CPU backend builds each when it is fuzzed). Returns the seconds it took.
  double prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs);
  // On the GPU: the template's skewed build, which its perturbed cases run
  // (fuzz/perturbed_launch.h); nullptr where it has none, and on the CPU.
  const KernelTemplate* skewed_build_of(const KernelTemplate& tmpl);
  // The GPU's large-index probe, set up on first use; nullptr on the CPU.
  const LargeIndexProbe* large_index_probe();
  // After an illegal address or a trap CUDA cannot go on in this process: every later
  // configuration is skipped with that reason (`tiletune mutants` runs each in a child instead).
  void mark_context_lost(std::string why) { context_lost_ = std::move(why); }
  const std::string& context_lost() const { return context_lost_; }
  // On the CPU: called before every case runs (the fuzz of a child process says where it is).
  void announce_cases(AnnouncingExecutor::Announce announce) { announce_ = std::move(announce); }
  const AnnouncingExecutor::Announce& announce() const { return announce_; }
  std::chrono::milliseconds kernel_timeout() const { return kernel_timeout_; }

 private:
  std::unique_ptr<Backend> backend_;
  GpuBackend* gpu_ = nullptr;  // backend_, where it is the GPU's
  std::map<std::string, std::optional<KernelTemplate>> skewed_builds_;  // by the source's hash
  std::unique_ptr<LargeIndexProbe> probe_;
  std::string context_lost_;  // the launch that lost it, or ""
  std::chrono::milliseconds kernel_timeout_{0};
  AnnouncingExecutor::Announce announce_;
};

struct ConfigurationOutcome {
  enum class Kind { passed, failed, skipped, compile_error };
  Kind kind = Kind::passed;
  FuzzReport report;   // passed and failed
  std::string detail;  // why it was skipped, or the compiler's log
  std::string probe;   // on the GPU: how the large-index probe went ("" when it did not run)
  double seconds = 0;  // compile, load and cases
  // failed: how the process fuzzing it died ("" when it did not); report.counterexample is then
  // the case it was running, not a minimal one (isolated_fuzz.h).
  std::string died;
  // The builds fuzzed, of a template that specializes parts ("plain", "op_b=t epilogue=relu").
  std::vector<std::string> builds;
};

// The builds of the configuration a fuzz runs: the plain one, then settings.extra_builds others
// drawn for the configuration from the seed (all of them where it is -1).
std::vector<Specialization> builds_to_fuzz(const KernelTemplate& tmpl, const Configuration& config,
                                           const FuzzSettings& settings);

// Fuzzes one configuration with `settings`, or when `replay` is not empty runs exactly those
// cases. Never throws for what the configuration does; throws only for the environment.
ConfigurationOutcome fuzz_configuration_on(FuzzBackend& backend, const KernelTemplate& tmpl,
                                           const Configuration& config,
                                           const FuzzSettings& settings,
                                           const std::vector<GemmCase>& replay = {});

// "FAIL <label>: <finding>" with the minimal case and the replay command under it.
std::string describe_failure(const std::string& label, const FuzzReport& report,
                             const std::string& replay_command);

}  // namespace tiletune::cli

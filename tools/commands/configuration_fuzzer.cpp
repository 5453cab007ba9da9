#include "tools/commands/configuration_fuzzer.h"

#include <chrono>

#include <fmt/format.h>

#include "fuzz/cpu_backend/cpu_executor.h"
#include "fuzz/gpu_executor.h"
#include "tuner/nvrtc_compiler.h"

namespace tiletune::cli {

FuzzBackend::FuzzBackend(const std::string& name, CpuBackendOptions cpu_options)
    : name_(name), cpu_options_(std::move(cpu_options)) {
  if (name_ == "gpu") device_ = std::make_unique<GpuDevice>();
}

std::string FuzzBackend::where() const {
  return device_ ? device_->properties().name : "the CPU";
}

CaseLimits FuzzBackend::case_limits() const {
  CaseLimits limits;
  if (device_) limits.crowded_weight = 1;
  return limits;
}

namespace {

std::unique_ptr<GemmExecutor> make_executor(const FuzzBackend& backend,
                                             const KernelTemplate& tmpl,
                                             const Configuration& config,
                                             const GemmShape& probe, std::string& skip_reason) {
  if (backend.device() == nullptr) {
    return std::make_unique<CpuExecutor>(tmpl, config, backend.cpu_options());
  }
  const GpuDevice& device = *backend.device();
  const CompiledKernelImage image = compile_configuration(tmpl, config, device.properties().arch());
  auto gpu = std::make_unique<GpuExecutor>(device, tmpl, config, image);
  if (auto limit = exceeds_device_limits(tmpl.launch_geometry(config, probe), gpu->resources(),
                                         device.properties())) {
    skip_reason = "beyond this device: " + *limit;
    return nullptr;
  }
  return gpu;
}

}  // namespace

ConfigurationOutcome fuzz_configuration_on(const FuzzBackend& backend, const KernelTemplate& tmpl,
                                           const Configuration& config,
                                           const FuzzSettings& settings,
                                           const std::vector<GemmCase>& replay) {
  using Kind = ConfigurationOutcome::Kind;
  const auto start = std::chrono::steady_clock::now();
  ConfigurationOutcome outcome;
  try {
    const GemmShape probe = replay.empty() ? GemmShape{64, 64, 64} : replay.front().problem.shape;
    std::string skip_reason;
    std::unique_ptr<GemmExecutor> executor = make_executor(backend, tmpl, config, probe, skip_reason);
    if (!executor) {
      outcome.kind = Kind::skipped;
      outcome.detail = skip_reason;
    } else if (replay.empty()) {
      outcome.report = fuzz_configuration(*executor, config, settings);
    } else {
      for (const GemmCase& gemm_case : replay) {
        const FuzzReport one = run_single_case(*executor, gemm_case);
        outcome.report.cases_passed += one.cases_passed;
        if (one.verdict != FuzzVerdict::passed) {
          outcome.report.verdict = one.verdict;
          outcome.report.counterexample = one.counterexample;
          outcome.report.finding = one.finding;
          break;
        }
      }
    }
    if (outcome.kind != Kind::skipped) {
      outcome.kind = outcome.report.verdict == FuzzVerdict::passed ? Kind::passed : Kind::failed;
    }
  } catch (const UnsupportedOnBackend& e) {
    outcome.kind = Kind::skipped;
    outcome.detail = e.what();
  } catch (const CompileError& e) {
    outcome.kind = Kind::compile_error;
    outcome.detail = e.log();
  }
  outcome.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

std::string describe_failure(const std::string& label, const FuzzReport& report,
                             const std::string& replay_command) {
  std::string text = fmt::format("FAIL {}: {}", label, report.finding);
  if (report.counterexample) {
    text += fmt::format("\n  minimal case ({} shrink steps, after {} passing cases): {}\n  replay: {}",
                        report.shrink_steps, report.cases_passed,
                        report.counterexample->problem.to_string(), replay_command);
  }
  return text;
}

}  // namespace tiletune::cli

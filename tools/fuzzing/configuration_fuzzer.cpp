#include "tools/fuzzing/configuration_fuzzer.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fuzz/gemm_operands.h"
#include "fuzz/gpu_executor.h"
#include "fuzz/make_executor.h"
#include "fuzz/perturbed_launch.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/splitmix64.h"
#include "tuner/pipeline/backend_factory.h"

namespace tiletune::cli {

FuzzBackend::FuzzBackend(const std::string& name, CpuBackendOptions cpu_options) {
  BackendChoice choice;
  choice.kind = parse_backend_kind(name);
  choice.cpu = std::move(cpu_options);
  backend_ = open_backend(std::move(choice));
  if (backend_->kind() == Backend::Kind::gpu) gpu_ = static_cast<GpuBackend*>(backend_.get());
}

const KernelTemplate* FuzzBackend::skewed_build_of(const KernelTemplate& tmpl) {
  if (gpu_ == nullptr) return nullptr;
  auto found = skewed_builds_.find(tmpl.source_hash);
  if (found == skewed_builds_.end()) {
    found = skewed_builds_.emplace(tmpl.source_hash, skewed_build(tmpl)).first;
  }
  return found->second ? &*found->second : nullptr;
}

double FuzzBackend::prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) {
  double seconds = backend_->prepare(tmpl, configs);
  if (const KernelTemplate* skewed = skewed_build_of(tmpl)) seconds += backend_->prepare(*skewed, configs);
  return seconds;
}

CaseLimits FuzzBackend::case_limits() const {
  CaseLimits limits;
  limits.crowded_cases = gpu_ != nullptr;
  return limits;
}

const LargeIndexProbe* FuzzBackend::large_index_probe() {
  if (gpu_ != nullptr && !probe_) probe_ = std::make_unique<LargeIndexProbe>(gpu_->gpu());
  return probe_.get();
}


namespace {

// Host copies of a case larger than this are refused: guards and padding are mirrored whole.
constexpr std::size_t kMaxHostElements = std::size_t(1) << 29;

std::size_t host_elements(const GemmProblem& p) {
  const GemmShape& s = p.shape;
  return 2 * (guard_elements(p.lda) + guard_elements(p.ldb) + guard_elements(p.ldc)) +
         std::size_t(s.m * p.lda + s.k * p.ldb + s.m * p.ldc);
}

bool is_probe_problem(const GemmProblem& problem) {
  const std::vector<GemmProblem> probes = LargeIndexProbe::problems();
  return std::find(probes.begin(), probes.end(), problem) != probes.end();
}

void record_probe_finding(const LargeIndexFinding& finding, FuzzReport& report) {
  report.verdict = finding.context_lost || finding.what.starts_with("launch failed")
                       ? FuzzVerdict::launch_error
                       : FuzzVerdict::wrong_result;
  GemmCase gemm_case;
  gemm_case.problem = finding.problem;
  gemm_case.inputs = InputKind::small_integers;
  report.counterexample = gemm_case;
  report.finding = "at element offsets past 2^31 (large-index probe): " + finding.what;
}

// The GPU's large-index probe of a configuration's plain build, after its fuzz passed: says how it
// went in outcome.probe, or records its finding in outcome.report (false; `lost` when the
// launch broke the CUDA context).
bool probe_passes(FuzzBackend& backend, const GpuExecutor& gpu, const KernelTemplate& tmpl,
                  const Configuration& config, ConfigurationOutcome& outcome, bool& lost) {
  const LargeIndexProbe& probe = *backend.large_index_probe();
  if (auto why = probe.unavailable()) {
    outcome.probe = "large-index probe skipped: " + *why;
    return true;
  }
  std::vector<std::string> skipped;
  if (auto finding = probe.check(gpu.kernel(), tmpl, config, &skipped)) {
    record_probe_finding(*finding, outcome.report);
    lost = finding->context_lost;
    return false;
  }
  if (skipped.size() == LargeIndexProbe::problems().size()) {
    outcome.probe = fmt::format("large-index probe skipped: {}", fmt::join(skipped, "; "));
  } else {
    outcome.probe = skipped.empty() ? "large-index probe passed"
                                    : fmt::format("large-index probe passed ({} skipped: {})",
                                                  skipped.size(), fmt::join(skipped, "; "));
  }
  return true;
}

std::unique_ptr<GemmExecutor> executor_for(FuzzBackend& backend, const KernelTemplate& tmpl,
                                           const Configuration& config, const GemmShape& typical,
                                           std::string& skip_reason) {
  std::unique_ptr<GemmExecutor> executor =
      make_executor(backend.backend(), tmpl, config, backend.kernel_timeout());
  if (backend.gpu() == nullptr) {
    if (!backend.announce()) return executor;
    return std::make_unique<AnnouncingExecutor>(std::move(executor), backend.announce());
  }
  // A skewed build that does not compile (where the plain one does) throws CompileError: the
  // configuration is reported as a compile error with that log, rather than silently fuzzed
  // without its perturbed cases.
  const KernelTemplate* skewed = backend.skewed_build_of(tmpl);
  static_cast<GpuExecutor&>(*executor).perturb(skewed ? &backend.gpu()->image(*skewed, config) : nullptr);
  LaunchGeometry geometry;
  try {
    geometry = tmpl.launch_geometry(config, typical, backend.backend().device().sm_count);
  } catch (const TemplateError&) {
    return executor;  // no geometry at this shape: the fuzz reports it with a case that shows it
  }
  if (auto limit = executor->exceeds_device_limits(geometry)) {
    skip_reason = "beyond this device: " + *limit;
    return nullptr;
  }
  return executor;
}

}  // namespace

std::vector<Specialization> builds_to_fuzz(const KernelTemplate& tmpl, const Configuration& config,
                                           const FuzzSettings& settings) {
  std::vector<Specialization> all = tmpl.builds(config);
  if (!settings.builds.empty()) {
    std::vector<Specialization> asked;
    for (const Specialization& build : settings.builds) {
      if (std::find(all.begin(), all.end(), build) != all.end()) asked.push_back(build);
    }
    return asked;
  }
  if (settings.extra_builds < 0 || std::size_t(settings.extra_builds) + 1 >= all.size()) return all;
  // The plain build, then others drawn for this configuration and seed: over the configurations of
  // a template every build comes up.
  std::vector<Specialization> chosen{all.front()};
  std::vector<Specialization> others(all.begin() + 1, all.end());
  std::uint64_t state = settings.seed ^ std::hash<std::string>{}(config.to_string());
  for (int i = 0; i < settings.extra_builds; ++i) {
    const std::size_t pick = splitmix64_next(state) % others.size();
    chosen.push_back(others[pick]);
    others.erase(others.begin() + std::ptrdiff_t(pick));
  }
  return chosen;
}

ConfigurationOutcome fuzz_configuration_on(FuzzBackend& backend, const KernelTemplate& tmpl,
                                           const Configuration& config,
                                           const FuzzSettings& settings,
                                           const std::vector<GemmCase>& replay) {
  using Kind = ConfigurationOutcome::Kind;
  const auto start = std::chrono::steady_clock::now();
  ConfigurationOutcome outcome;
  if (!backend.context_lost().empty()) {
    outcome.kind = Kind::skipped;
    outcome.detail = "not run: " + backend.context_lost() +
                     " broke the CUDA context, which cannot recover in this process; run this "
                     "configuration again on its own (--config)";
    return outcome;
  }
  bool lost = false;  // a launch broke the CUDA context
  int asked = 0;
  try {
    const GemmShape typical = replay.empty() ? GemmShape{64, 64, 64} : replay.front().problem.shape;
    // One executor per build of the configuration, made when a case first needs it.
    std::map<std::string, std::unique_ptr<GemmExecutor>> executors;
    std::string skip_reason;
    const auto executor_of = [&](const Specialization& build) -> GemmExecutor* {
      std::unique_ptr<GemmExecutor>& executor = executors[build.to_string()];
      if (!executor) {
        executor = executor_for(backend, tmpl, tmpl.build_configuration(config, build), typical,
                                skip_reason);
      }
      return executor.get();
    };
    const auto gpu_of = [](GemmExecutor* executor) { return dynamic_cast<GpuExecutor*>(executor); };
    if (replay.empty()) {
      for (const Specialization& build : builds_to_fuzz(tmpl, config, settings)) {
        GemmExecutor* executor = executor_of(build);
        if (executor == nullptr) {
          outcome.kind = Kind::skipped;
          outcome.detail = skip_reason;
          break;
        }
        const FuzzReport report = fuzz_configuration(*executor, config, tmpl.precision, settings,
                                                     CaseRequirements(tmpl, config, build));
        asked += settings.cases;
        outcome.report.cases_passed += report.cases_passed;
        if (tmpl.specializes.any()) outcome.builds.push_back(build.to_string());
        if (report.verdict != FuzzVerdict::passed) {
          const int passed_before = outcome.report.cases_passed - report.cases_passed;
          outcome.report = report;
          outcome.report.cases_passed += passed_before;
          break;
        }
        // The probe's problems are plain ones: the plain build runs them.
        if (GpuExecutor* gpu = gpu_of(executor); gpu != nullptr && build.plain() &&
                                                 !probe_passes(backend, *gpu, tmpl, config, outcome, lost)) {
          break;
        }
      }
    } else {
      asked = int(replay.size());
      for (const GemmCase& gemm_case : replay) {
        FuzzReport one;
        GemmExecutor* executor = executor_of(tmpl.specialization(gemm_case.problem));
        GpuExecutor* gpu = gpu_of(executor);
        if (executor == nullptr) {
          outcome.kind = Kind::skipped;
          outcome.detail = skip_reason;
          break;
        }
        if (gpu != nullptr && is_probe_problem(gemm_case.problem)) {
          if (auto finding = backend.large_index_probe()->check(gpu->kernel(), tmpl, config,
                                                                gemm_case.problem)) {
            record_probe_finding(*finding, one);
            lost = finding->context_lost;
          } else {
            one.cases_passed = 1;
          }
        } else if (host_elements(gemm_case.problem) > kMaxHostElements) {
          outcome.kind = Kind::skipped;
          outcome.detail = fmt::format("the case {} is too large to mirror on the host",
                                       gemm_case.problem.to_string());
          break;
        } else {
          one = run_single_case(*executor, gemm_case, tmpl.precision);
        }
        outcome.report.cases_passed += one.cases_passed;
        if (one.verdict != FuzzVerdict::passed) {
          outcome.report.verdict = one.verdict;
          outcome.report.counterexample = one.counterexample;
          outcome.report.finding = one.finding;
          break;
        }
      }
    }
    for (const auto& [name, executor] : executors) {
      lost = lost || (executor && gpu_of(executor.get()) != nullptr && executor->context_lost());
    }
    executors.clear();
    if (lost) backend.mark_context_lost(fmt::format("{} [{}]", tmpl.name, config.to_string()));
    // A pass is every case asked for, run and passed (fuzz_configuration settles the same).
    if (outcome.kind != Kind::skipped && outcome.report.verdict == FuzzVerdict::passed &&
        outcome.report.cases_passed < asked) {
      outcome.report.verdict = FuzzVerdict::too_few_cases;
      outcome.report.finding = fmt::format("only {} of {} cases ran", outcome.report.cases_passed, asked);
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

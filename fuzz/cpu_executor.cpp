#include "fuzz/cpu_executor.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "tuner/backend/cpu/kernel_build.h"
#include "tuner/backend/cpu/sanitizer_runtime.h"

namespace tiletune {

CpuExecutor::CpuExecutor(const KernelTemplate& tmpl, const Configuration& config,
                         const CpuBackendOptions& options)
    : template_(tmpl),
      config_(config),
      kernel_(tmpl, config, options),
      sanitize_(options.sanitize),
      source_file_(std::filesystem::path(kernel_source_origin(tmpl)).filename().string()) {}

std::string CpuExecutor::backend_name() const {
  return sanitize_ ? fmt::format("cpu ({} workers, sanitized)", kernel_.workers())
                   : fmt::format("cpu ({} workers)", kernel_.workers());
}

void CpuExecutor::launch(const GemmCase& gemm_case, GemmOperands& operands) const {
  const GemmProblem& p = gemm_case.problem;
  const LaunchGeometry geometry = template_.launch_geometry(config_, p.shape, drawn_sm_count(gemm_case.schedule_seed));
  kernel_.launch(geometry, operands.a.data(), operands.b.data(), operands.c.data(), p,
                 gemm_case.schedule_seed,
                 operands.bias.storage.empty() ? nullptr : operands.bias.data());
}

PoisonedGuards::Region guarded_region(const GuardedMatrix& m) {
  return {m.storage.data(), m.storage.size(), m.data(), m.rows, m.cols, m.ld};
}

void CpuExecutor::run(const GemmCase& gemm_case, GemmOperands& operands) {
  const GemmProblem& p = gemm_case.problem;
  if (!p.valid()) throw LaunchError("invalid problem " + p.to_string());
  template_.check_requirements(config_, p);
  if (!sanitize_) {
    launch(gemm_case, operands);
    return;
  }

  SanitizerReportCapture capture(source_file_);
  std::vector<SanitizerReport> reports;
  {
    const PoisonedGuards guards{guarded_region(operands.a), guarded_region(operands.b),
                                guarded_region(operands.c)};
    try {
      launch(gemm_case, operands);
    } catch (const LaunchError&) {
      // A trap or divergent barriers after a report: the report came first, it is the finding.
      reports = capture.take();
      if (reports.empty()) throw;
    }
  }
  if (reports.empty()) reports = capture.take();
  if (reports.empty()) return;
  place_in_object(reports, kernel_.loaded_path().string(), source_file_);
  // UBSan reports each check of a loaded object once: the next case must see it again.
  const bool undefined_behaviour = std::any_of(
      reports.begin(), reports.end(),
      [](const SanitizerReport& r) { return r.tool != "AddressSanitizer"; });
  if (undefined_behaviour) kernel_.reload();
  throw SanitizerFinding(std::move(reports));
}

}  // namespace tiletune

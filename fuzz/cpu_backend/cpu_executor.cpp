#include "fuzz/cpu_backend/cpu_executor.h"

#include <fmt/format.h>

namespace tiletune {

CpuExecutor::CpuExecutor(const KernelTemplate& tmpl, const Configuration& config,
                         const CpuBackendOptions& options)
    : template_(tmpl), config_(config), kernel_(tmpl, config, options) {}

std::string CpuExecutor::backend_name() const {
  return fmt::format("cpu ({} workers)", kernel_.workers());
}

void CpuExecutor::run(const GemmCase& gemm_case, GemmOperands& operands) {
  const GemmProblem& p = gemm_case.problem;
  if (!p.valid()) throw LaunchError("invalid problem " + p.to_string());
  const LaunchGeometry geometry = template_.launch_geometry(config_, p.shape);
  kernel_.launch(geometry, operands.a.data(), operands.b.data(), operands.c.data(), int(p.shape.m),
                 int(p.shape.n), int(p.shape.k), int(p.lda), int(p.ldb), int(p.ldc),
                 gemm_case.schedule_seed);
}

}  // namespace tiletune

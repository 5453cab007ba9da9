#include "tuner/pipeline/cpu_full_shape_check.h"

#include <chrono>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "fuzz/gemm_operands.h"
#include "fuzz/property_runner.h"
#include "tuner/pipeline/evaluator.h"  // failed_check_status

namespace tiletune {
namespace {

// The case that stands for the full problem: real-valued inputs from the tune's data seed.
GemmCase full_shape_case(const GemmProblem& problem, std::uint64_t data_seed) {
  GemmCase full;
  full.problem = problem;
  full.inputs = InputKind::real;
  full.data_seed = data_seed;
  return full;
}

// Host bytes the full-shape case takes: A, B and C (every entry of a batch) inside their guard
// bands, C's copy that the check compares the guards against, and the reference (value and
// magnitude, in double).
double full_shape_bytes(const GemmProblem& p) {
  const double guards = double(guard_elements(p.lda) + guard_elements(p.ldb) + guard_elements(p.ldc));
  return 4.0 * (2 * guards + double(p.a_elements()) + double(p.b_elements()) + 2 * double(p.c_elements())) +
         16.0 * double(p.batch) * double(p.shape.m) * double(p.shape.n);
}

// MemAvailable from /proc/meminfo, in bytes; nothing where it cannot be read.
std::optional<double> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string name;
  double kib = 0;
  std::string unit;
  while (meminfo >> name >> kib >> unit) {
    if (name == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// Why the full shape does not fit in this machine's memory, or nothing when it does.
std::optional<std::string> exceeds_host_memory(const GemmProblem& problem) {
  const double needed = full_shape_bytes(problem);
  const std::optional<double> available = available_memory_bytes();
  if (!available || needed <= *available) return std::nullopt;
  return fmt::format("the shape {} needs {:.1f} GiB of host memory on the CPU backend, {:.1f} GiB are "
                     "available",
                     problem.shape.to_string(), needed / (1 << 30), *available / (1 << 30));
}

}  // namespace

const ReferenceTable& CpuFullShapeCheck::reference_of(const GemmCase& full, const StageCallback& stage) {
  const GemmProblem& p = full.problem;
  const std::string name = fmt::format("reference-{}x{}x{}-ld{}-{}-{}-seed{}", p.shape.m, p.shape.n,
                                       p.shape.k, p.lda, p.ldb, p.transposes().to_string(),
                                       full.data_seed);
  if (!reference_ || reference_name_ != name) {
    reference_.reset();  // one shape's at a time
    reference_ = references_.get(name, [&] {
      stage("reference");
      return compute_reference(make_operands(full));
    });
    reference_name_ = name;
  }
  return *reference_;
}

std::optional<FullShapeFailure> CpuFullShapeCheck::check(GemmExecutor& executor,
                                                         const KernelTemplate& tmpl,
                                                         const Configuration& config,
                                                         const GemmProblem& problem,
                                                         std::uint64_t data_seed,
                                                         const StageCallback& stage) {
  if (auto too_large = exceeds_host_memory(problem)) {
    return FullShapeFailure{ResultStatus::device_limit, *too_large};
  }
  const GemmCase full = full_shape_case(problem, data_seed);
  tmpl.check_requirements(config, full.problem);  // the search space leaves out shapes that fail
  // A shared reference table is of the plain product (C = A * B, one matrix); the oracle judges
  // any other problem against its own reference, element by element (judge_contract).
  const ReferenceTable* reference = full.problem.plain() ? &reference_of(full, stage) : nullptr;
  stage("verify");
  const FuzzReport check = run_single_case(executor, full, tmpl.precision, reference);
  if (check.verdict != FuzzVerdict::passed) {
    return FullShapeFailure{failed_check_status(check.verdict), "at the full shape: " + check.finding};
  }
  return std::nullopt;
}

// Wall-clock runs of the whole grid, by the same rules as the GPU timer.
Timing CpuFullShapeCheck::time(GemmExecutor& executor, const KernelTemplate&, const Configuration&,
                               const GemmProblem& problem, std::uint64_t data_seed,
                               const TimingSettings& settings) {
  const GemmCase full = full_shape_case(problem, data_seed);
  GemmOperands operands = make_operands(full);
  for (int i = 0; i < settings.warmup_runs; ++i) executor.run(full, operands);
  std::vector<double> samples;
  double total_ms = 0;
  while (int(samples.size()) < settings.max_runs &&
         (int(samples.size()) < settings.min_runs || total_ms < settings.target_seconds * 1e3)) {
    const auto start = std::chrono::steady_clock::now();
    executor.run(full, operands);
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    total_ms += samples.back();
  }
  return summarize_runs(std::move(samples));
}

}  // namespace tiletune

#include "tuner/pipeline/cpu_evaluator.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "fuzz/cpu_executor.h"
#include "fuzz/gemm_operands.h"
#include "tuner/backend/cpu/cpu_kernel.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/pipeline/kernel_timer.h"

namespace tiletune {
namespace {

// The case that stands for the full shape: packed, real-valued inputs from the tune's data seed.
GemmCase full_shape_case(const GemmShape& shape, std::uint64_t data_seed) {
  GemmCase full;
  full.problem = GemmProblem::packed(shape);
  full.inputs = InputKind::real;
  full.data_seed = data_seed;
  return full;
}

// Host bytes the full-shape case takes: A, B and C inside their guard bands, C's copy that the
// check compares the guards against, and the reference (value and magnitude, in double).
double full_shape_bytes(const GemmShape& shape) {
  const GemmProblem p = GemmProblem::packed(shape);
  const double guards = double(guard_elements(p.lda) + guard_elements(p.ldb) + guard_elements(p.ldc));
  return 4.0 * (2 * guards + double(shape.m) * double(p.lda) + double(shape.k) * double(p.ldb) +
                2 * double(shape.m) * double(p.ldc)) +
         16.0 * double(shape.m) * double(shape.n);
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
std::optional<std::string> exceeds_host_memory(const GemmShape& shape) {
  const double needed = full_shape_bytes(shape);
  const std::optional<double> available = available_memory_bytes();
  if (!available || needed <= *available) return std::nullopt;
  return fmt::format("the shape {} needs {:.1f} GiB of host memory on the CPU backend, {:.1f} GiB are "
                     "available",
                     shape.to_string(), needed / (1 << 30), *available / (1 << 30));
}

// Wall-clock runs of the whole grid, by the same rules as the GPU timer.
Timing time_on_cpu(CpuExecutor& executor, const GemmCase& gemm_case, const TimingSettings& settings) {
  GemmOperands operands = make_operands(gemm_case);
  for (int i = 0; i < settings.warmup_runs; ++i) executor.run(gemm_case, operands);
  std::vector<double> samples;
  double total_ms = 0;
  while (int(samples.size()) < settings.max_runs &&
         (int(samples.size()) < settings.min_runs || total_ms < settings.target_seconds * 1e3)) {
    const auto start = std::chrono::steady_clock::now();
    executor.run(gemm_case, operands);
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    total_ms += samples.back();
  }
  return summarize_runs(std::move(samples));
}

}  // namespace

DeviceProperties cpu_backend_device() {
  DeviceProperties d;
  d.name = "CPU backend";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = int(std::max(1u, std::thread::hardware_concurrency()));
  d.max_threads_per_block = 1024;
  d.max_block_dim[0] = 1024;
  d.max_block_dim[1] = 1024;
  d.max_block_dim[2] = 64;
  d.max_grid_dim[0] = 2147483647;
  d.max_grid_dim[1] = 65535;
  d.max_grid_dim[2] = 65535;
  d.max_shared_bytes_per_block = 48 * 1024;
  d.max_shared_bytes_per_block_optin = 227 * 1024;
  d.max_registers_per_block = 65536;
  d.max_registers_per_sm = 65536;
  d.max_threads_per_sm = 2048;
  d.warp_size = 32;
  return d;
}

CpuEvaluator::CpuEvaluator(CpuBackendOptions options, int ordinal, SharedReferences references)
    : options_(std::move(options)), device_(cpu_backend_device()),
      references_(std::move(references)) {
  device_.ordinal = ordinal;
}

const ReferenceTable& CpuEvaluator::reference_of(const GemmCase& full, const StageCallback& stage) {
  const GemmProblem& p = full.problem;
  const std::string name = fmt::format("reference-{}x{}x{}-ld{}-{}-seed{}", p.shape.m, p.shape.n,
                                       p.shape.k, p.lda, p.ldb, full.data_seed);
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

EvaluationOutcome CpuEvaluator::evaluate(const KernelTemplate& tmpl, const EvaluationRequest& request,
                                         const StageCallback& stage, const CaseCallback& before_case) {
  EvaluationOutcome outcome;
  ResultRecord& result = outcome.result;
  result = result_keys(tmpl, request);
  const Configuration config = tmpl.parse_configuration(request.config);

  stage("build");
  std::unique_ptr<CpuExecutor> executor;
  try {
    executor = std::make_unique<CpuExecutor>(tmpl, config, options_);
  } catch (const CompileError& e) {
    result.status = ResultStatus::compile_error;
    result.detail = e.log();
    return outcome;
  } catch (const UnsupportedOnBackend& e) {
    // What this backend cannot run, as a device lacking a feature: the configuration's outcome,
    // not the end of the tune.
    result.status = ResultStatus::device_limit;
    result.detail = e.what();
    return outcome;
  }
  try {
    result.dynamic_shared_bytes = int(tmpl.launch_geometry(config, request.shape, drawn_sm_count(0)).dynamic_shared_bytes);
    if (request.fuzz) {
      stage("fuzz");
      if (!passes_fuzz_stage(*executor, tmpl, config, request, before_case, fuzz_references_,
                             result)) {
        return outcome;
      }
    }
    outcome.fuzz_passed = true;
    if (!request.measure) return outcome;

    if (auto too_large = exceeds_host_memory(request.shape)) {
      result.status = ResultStatus::device_limit;
      result.detail = *too_large;
      return outcome;
    }
    const GemmCase full = full_shape_case(request.shape, request.data_seed);
    tmpl.check_requirements(config, full.problem);
    const ReferenceTable& reference = reference_of(full, stage);
    stage("verify");
    const FuzzReport check = run_single_case(*executor, full, tmpl.precision, &reference);
    if (check.verdict != FuzzVerdict::passed) {
      result.status = failed_check_status(check.verdict);
      result.detail = "at the full shape: " + check.finding;
      return outcome;
    }
    stage("time");
    const Timing timing = time_on_cpu(*executor, full, request.timing);
    set_timing(result, timing, request.shape);
  } catch (const LaunchError& e) {
    result.status = ResultStatus::launch_error;
    result.detail = e.what();
  } catch (const UnsupportedOnBackend& e) {
    result.status = ResultStatus::device_limit;
    result.detail = e.what();
  } catch (const std::bad_alloc&) {
    result.status = ResultStatus::device_limit;
    result.detail = fmt::format("the shape {} does not fit in host memory on the CPU backend",
                                request.shape.to_string());
  } catch (const TemplateError& e) {
    // The geometry at the full shape fails (a grid of zero blocks), or the shape does not meet a
    // requirement (the search space leaves those out).
    result.status = ResultStatus::launch_error;
    result.detail = std::string("cannot run the full shape: ") + e.what();
  }
  return outcome;
}

std::vector<Timing> CpuEvaluator::remeasure(const std::vector<const KernelTemplate*>& templates,
                                            const RemeasureRequest& request) {
  std::vector<std::unique_ptr<CpuExecutor>> executors;
  for (const RemeasuredConfig& each : request.configs) {
    const KernelTemplate& tmpl = *templates.at(each.tmpl);
    executors.push_back(std::make_unique<CpuExecutor>(tmpl, tmpl.parse_configuration(each.config), options_));
  }
  const GemmCase full = full_shape_case(request.shape, request.data_seed);
  return time_in_rounds(executors.size(), request.rounds, [&](std::size_t i) {
    return time_on_cpu(*executors[i], full, request.timing);
  });
}

}  // namespace tiletune

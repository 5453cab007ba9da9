#include "tuner/pipeline/tuning_run.h"

#include <fmt/format.h>

#include "fuzz/gpu_executor.h"
#include "tuner/nvrtc_compiler.h"
#include "tuner/pipeline/shape_verifier.h"
#include "tuner/search_space.h"

namespace tiletune {
namespace {

std::string fuzz_detail(const FuzzReport& report) {
  std::string detail = report.finding;
  if (report.counterexample) {
    detail += fmt::format("\nminimal case: {}\nreplay: --case '{}'",
                          report.counterexample->problem.to_string(),
                          report.counterexample->to_string());
  }
  return detail;
}

}  // namespace

GpuRecord make_gpu_record(const DeviceProperties& device) {
  GpuRecord gpu;
  gpu.name = device.name;
  gpu.cc_major = device.cc_major;
  gpu.cc_minor = device.cc_minor;
  gpu.sm_count = device.sm_count;
  gpu.clock_khz = device.clock_khz;
  gpu.memory_bytes = device.memory_bytes;
  gpu.driver_version = device.driver_version;
  gpu.nvrtc_version = nvrtc_version();
  return gpu;
}

TuningRun::TuningRun(const GpuDevice& device, ResultStore& store, TuningSettings settings)
    : device_(device), store_(store), settings_(std::move(settings)),
      gpu_(make_gpu_record(device.properties())), compiled_(device.properties().arch()) {
  gpu_id_ = store_.register_gpu(gpu_);
}

void TuningRun::tune(const KernelTemplate& tmpl, const GemmShape& shape,
                     const std::function<void(const TuningEvent&)>& on_event) {
  store_.register_template({tmpl.name, tmpl.source_hash, tmpl.path.string(), tmpl.source});
  const std::vector<Configuration> configs = enumerate_configurations(tmpl, &shape);
  std::unique_ptr<ShapeVerifier> verifier;  // built on first need: a resumed tune may need none

  std::vector<Configuration> pending;
  for (const Configuration& config : configs) {
    if (settings_.remeasure ||
        !store_.has_result(gpu_id_, tmpl.source_hash, config.to_string(), shape)) {
      pending.push_back(config);
    }
  }
  if (!pending.empty()) {
    on_event(TuningEvent{&tmpl, shape, &pending.front(), 0, int(configs.size()),
                         fmt::format("compiling {} configurations", pending.size()), nullptr});
    compiled_.prepare(tmpl, pending);
  }

  for (std::size_t i = 0; i < configs.size(); ++i) {
    TuningEvent event{&tmpl, shape, &configs[i], int(i) + 1, int(configs.size()), "", nullptr};
    if (!settings_.remeasure &&
        store_.has_result(gpu_id_, tmpl.source_hash, configs[i].to_string(), shape)) {
      event.stage = "recorded earlier";
      on_event(event);
      continue;
    }
    if (!verifier) {
      event.stage = "reference";
      on_event(event);
      verifier = std::make_unique<ShapeVerifier>(device_, GemmProblem::packed(shape),
                                                 settings_.data_seed);
    }
    const ResultRecord result = evaluate(tmpl, configs[i], shape, *verifier, [&](const std::string& stage) {
      event.stage = stage;
      on_event(event);
    });
    store_.record_result(gpu_id_, gpu_, result);
    event.stage = "done";
    event.result = &result;
    on_event(event);
  }
}

ResultRecord TuningRun::evaluate(const KernelTemplate& tmpl, const Configuration& config,
                                 const GemmShape& shape, ShapeVerifier& verifier,
                                 const std::function<void(const std::string&)>& stage) {
  ResultRecord result;
  result.template_name = tmpl.name;
  result.template_hash = tmpl.source_hash;
  result.config = config.to_string();
  result.shape = shape;

  stage("compile");
  const CompiledKernelImage* compiled = nullptr;
  try {
    compiled = &compiled_.get(tmpl, config);
  } catch (const CompileError& e) {
    result.status = ResultStatus::compile_error;
    result.detail = e.log();
    return result;
  }
  const CompiledKernelImage& image = *compiled;
  GpuExecutor executor(device_, tmpl, config, image);
  const PtxasReport& resources = executor.resources();
  result.registers = resources.registers;
  result.static_shared_bytes = resources.static_shared_bytes;
  result.spill_bytes = resources.spill_bytes();

  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape);
  result.dynamic_shared_bytes = int(geometry.dynamic_shared_bytes);
  if (auto limit = exceeds_device_limits(geometry, resources, device_.properties())) {
    result.status = ResultStatus::device_limit;
    result.detail = *limit;
    return result;
  }

  const std::string fuzz_key = tmpl.source_hash + ' ' + result.config;
  if (!fuzzed_.contains(fuzz_key)) {
    stage("fuzz");
    const FuzzReport fuzz = fuzz_configuration(executor, config, settings_.fuzz);
    FuzzOutcome outcome;
    if (fuzz.verdict != FuzzVerdict::passed) {
      outcome.status = fuzz.verdict == FuzzVerdict::wrong_result ? ResultStatus::wrong_result
                                                                 : ResultStatus::launch_error;
      outcome.detail = fuzz_detail(fuzz);
    }
    fuzzed_.emplace(fuzz_key, outcome);
    if (executor.context_lost()) {  // nothing more can run in this process: keep what we know
      result.status = outcome.status;
      result.detail = outcome.detail;
      store_.record_result(gpu_id_, gpu_, result);
      throw LaunchError(result.detail);
    }
  }
  if (const FuzzOutcome& fuzzed = fuzzed_.at(fuzz_key); fuzzed.status != ResultStatus::ok) {
    result.status = fuzzed.status;
    result.detail = fuzzed.detail;
    return result;
  }

  GpuKernel kernel(image, tmpl.entry);
  stage("verify");
  try {
    if (auto wrong = verifier.verify(kernel, geometry)) {
      result.status = ResultStatus::wrong_result;
      result.detail = *wrong;
      return result;
    }
    stage("time");
    const Timing timing = time_launches(
        [&](CUstream stream) {
          kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), verifier.problem(),
                        stream);
        },
        nullptr, settings_.timing);
    result.median_ms = timing.median_ms;
    result.min_ms = timing.min_ms;
    result.max_ms = timing.max_ms;
    result.runs = timing.runs;
    result.tflops = shape.flops() / (timing.median_ms * 1e-3) / 1e12;
  } catch (const CudaError& e) {
    result.status = ResultStatus::launch_error;
    result.detail = e.what();
    if (e.context_is_lost()) {
      store_.record_result(gpu_id_, gpu_, result);
      throw;
    }
  }
  return result;
}

}  // namespace tiletune

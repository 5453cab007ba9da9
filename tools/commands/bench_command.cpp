// tiletune bench [KERNEL.cu...] [--shape MxNxK ...] [--kernel NAME] [--precision P] [--db PATH]
//
// For each shape: the best recorded configuration among templates declaring the precision (fp32
// by default; tuning the given templates of that precision first where the database has none),
// rebuilt from the template source the database keeps, verified at the full shape, then timed
// side by side with cuBLAS in the matching mode (cublas_sgemm.h: TF32 for tf32, else SGEMM) on the
// same inputs in the same run. Beside each speed, the largest error of its output against the
// double-precision reference on those inputs: max |c - ref| / sum|a||b| in units of the
// precision's unit roundoff, and max |c - ref|. Each measured row is recorded (bench_results) for
// `tiletune report`.
#include <cmath>

#include <fmt/format.h>

#include "tools/bench/bench_suite.h"
#include "tools/bench/cublas_sgemm.h"
#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/error_bound.h"
#include "tuner/pipeline/shape_verifier.h"
#include "tuner/pipeline/tuning_session.h"

namespace tiletune::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> kernels;
  std::vector<std::string> shapes;
  std::string kernel_name;
  std::string precision = "fp32";
  std::string db = "tiletune.db";
};

// The templates given that declare the precision benched; the others are said and left out, and
// none at all is bad input.
std::vector<KernelTemplate> templates_declaring(const std::vector<KernelTemplate>& given,
                                                Precision precision) {
  std::vector<KernelTemplate> kept;
  std::string others;
  for (const KernelTemplate& tmpl : given) {
    if (tmpl.precision == precision) {
      kept.push_back(tmpl);
    } else {
      others += fmt::format("{}{} ({})", others.empty() ? "" : ", ", tmpl.name,
                            to_string(tmpl.precision));
    }
  }
  if (!given.empty() && kept.empty()) {
    throw UsageError(fmt::format("none of the templates given declares precision {}: {}",
                                 to_string(precision), others));
  }
  if (!others.empty()) {
    fmt::print(stderr, "tiletune: not of precision {}, left out: {}\n", to_string(precision),
               others);
  }
  return kept;
}

// "1.7u 2.4e-06": the largest relative error in units of the precision's unit roundoff, then the
// largest absolute error.
std::string error_cell(const ResultError& error, Precision precision) {
  return fmt::format("{:.3g}u {:.2g}", error.max_relative / unit_roundoff(precision),
                     error.max_absolute);
}

KernelTemplate recorded_template(const ResultStore& store, const ResultRecord& best) {
  for (const TemplateRecord& t : store.templates()) {
    if (t.name == best.template_name && t.source_hash == best.template_hash) {
      return parse_template(t.source, t.path.empty() ? t.name : t.path);
    }
  }
  throw std::runtime_error(fmt::format("the database lacks the source of {} {}", best.template_name,
                                       best.template_hash));
}

int run(const BenchOptions& options) {
  const Precision precision = parse_precision_option(options.precision);
  const std::vector<KernelTemplate> templates =
      templates_declaring(load_templates(options.kernels), precision);
  std::vector<std::string> shape_texts = options.shapes;
  if (shape_texts.empty()) shape_texts.assign(std::begin(kBenchSuite), std::end(kBenchSuite));
  const std::vector<GemmShape> shapes = parse_shapes(shape_texts);
  GpuDevice device;
  ResultStore store(options.db);
  std::unique_ptr<TuningSession> tuning;  // started on first need: shapes may all be recorded
  const DeviceProperties& gpu = device.properties();
  const std::int64_t gpu_id = store.register_gpu(make_gpu_record(gpu));
  const std::optional<std::string> only =
      options.kernel_name.empty() ? std::nullopt : std::optional(options.kernel_name);
  CublasSgemm cublas(precision);
  const TimingSettings timing;

  fmt::print("{} ({} SMs, {:.0f} MHz, FP32 peak {:.1f} TFLOP/s), precision {} against {} in the "
             "same run; errors: max |c - ref| / sum|a||b| in u = {:g}, then max |c - ref|\n",
             gpu.name, gpu.sm_count, gpu.clock_khz / 1e3, gpu.fp32_peak_tflops(),
             to_string(precision), cublas_yardstick(precision), unit_roundoff(precision));
  fmt::print("{:<16} {:<10} {:<58} {:>9} {:>8} {:>16} {:>9} {:>8} {:>16} {:>6} {:>6}\n", "shape",
             "template", "config", "us", "TFLOP/s", "error", "cuBLAS us", "TFLOP/s", "cuBLAS error",
             "ratio", "%peak");
  double log_ratio_sum = 0;
  int measured = 0, missing = 0;
  for (const GemmShape& shape : shapes) {
    std::optional<ResultRecord> best = store.best(gpu.name, shape, only, precision);
    if (!best) {
      if (!tuning && !templates.empty()) {
        tuning = std::make_unique<TuningSession>(SessionOptions{}, std::vector<int>{});
      }
      TuningRun& run = tuning->run(store, TuningSettings{});
      std::vector<const KernelTemplate*> tuned;
      for (const KernelTemplate& tmpl : templates) {
        run.tune(tmpl, shape, [&](const TuningEvent& e) {
          progress_line(fmt::format("tuning {} {} [{}/{}] {}", tmpl.name, shape.to_string(),
                                    e.done, e.total, e.stage), false);
        });
        tuned.push_back(&tmpl);
      }
      // Tuned one after the other: their best are re-measured together before one is chosen.
      progress_line(fmt::format("re-measuring the best of {} templates at {} together", tuned.size(),
                                shape.to_string()), false);
      run.confirm_across(tuned, shape, true);
      progress_line("", false);
      best = store.best(gpu.name, shape, only, precision);
    }
    if (!best) {
      ++missing;
      fmt::print("{:<16} no correct configuration of precision {} recorded (give templates to "
                 "tune)\n", shape.to_string(), to_string(precision));
      continue;
    }
    const KernelTemplate tmpl = recorded_template(store, *best);
    const Configuration config = tmpl.parse_configuration(best->config);
    const GpuKernel kernel(compile_configuration(tmpl, config, gpu.arch()), tmpl.entry,
                           entry_form(tmpl));
    const LaunchGeometry geometry = tmpl.launch_geometry(config, shape, gpu.sm_count);
    tmpl.check_requirements(config, GemmProblem::packed(shape));
    ShapeVerifier verifier(device, GemmProblem::packed(shape), 7);
    if (auto wrong = verifier.verify(kernel, geometry, tmpl.precision)) {
      throw std::runtime_error(fmt::format("{} [{}] is wrong: {}", tmpl.name, best->config, *wrong));
    }
    const GemmProblem& problem = verifier.problem();
    const auto our_launch = [&](CUstream s) {
      kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), problem, s);
    };
    const auto their_launch = [&](CUstream s) {
      cublas.run(problem, verifier.a(), verifier.b(), verifier.c(), s);
    };
    const ResultError our_error = verifier.error(our_launch);
    const ResultError their_error = verifier.error(their_launch);
    const Timing ours = time_launches(our_launch, nullptr, timing);
    const Timing theirs = time_launches(their_launch, nullptr, timing);
    const double our_tflops = shape.tflops(ours.median_ms);
    const double cublas_tflops = shape.tflops(theirs.median_ms);
    const double ratio = our_tflops / cublas_tflops;
    store.record_bench(gpu_id, BenchRecord{gpu.name, best->template_name, best->template_hash, best->config,
                                           shape, ours.median_ms, theirs.median_ms, ""});
    log_ratio_sum += std::log(ratio);
    ++measured;
    // The FP32 peak is no roof for the tensor cores.
    const std::string peak = precision == Precision::fp32
                                 ? fmt::format("{:.1f}%",
                                               100.0 * our_tflops / gpu.fp32_peak_tflops())
                                 : "-";
    fmt::print("{:<16} {:<10} {:<58} {:>9.1f} {:>8.3f} {:>16} {:>9.1f} {:>8.3f} {:>16} {:>6.3f} "
               "{:>6}\n",
               shape.to_string(), tmpl.name, best->config, ours.median_ms * 1e3, our_tflops,
               error_cell(our_error, precision), theirs.median_ms * 1e3, cublas_tflops,
               error_cell(their_error, precision), ratio, peak);
  }
  if (measured > 0) {
    fmt::print("geometric mean of ratios over {} shapes: {:.3f}\n", measured,
               std::exp(log_ratio_sum / measured));
  }
  return missing == 0 ? kSuccess : kFindings;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* command = app.add_subcommand("bench",
                                         "time the best recorded configurations against cuBLAS");
  command->add_option("kernels", options->kernels, "templates to tune where the database has no result")->check(CLI::ExistingFile);
  command->add_option("--shape", options->shapes, "problem sizes MxNxK (default: the standard suite)");
  command->add_option("--kernel", options->kernel_name, "only this template (by name)");
  command->add_option("--precision", options->precision,
                      "bench templates declaring this precision (fp32, tf32, tf32x3), against "
                      "cuBLAS SGEMM (TF32 for tf32)")
      ->capture_default_str();
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

// tiletune bench [KERNEL.cu...] [--shape MxNxK ...] [--kernel NAME] [--precision P] [--db PATH]
//                [--op nn|nt|tn|tt] [--batch B] [--epilogue E]
//
// For each shape: the best recorded configuration among templates declaring the precision (fp32
// by default; tuning the given templates of that precision first where the database has none),
// rebuilt from the template source the database keeps, verified at the full shape, then timed
// side by side with cuBLAS in the matching mode (cublas_sgemm.h: TF32 for tf32, else SGEMM) on the
// same inputs in the same run. Beside each speed, the largest error of its output against the
// double-precision reference on those inputs: max |c - ref| / sum|a||b| in units of the
// precision's unit roundoff, and max |c - ref|. Each measured row is recorded (bench_results) for
// `tiletune report`.
//
// --op, --batch and --epilogue bench the BLAS contract's problem at each shape instead (alpha 1,
// beta 0, every operand packed) with the configuration recorded for the shape's plain product,
// where its template serves the problem. cuBLAS computes the same transposes and strided batch;
// an epilogue has two yardsticks: cuBLAS followed by an elementwise kernel (epilogue_kernel.h),
// and cuBLASLt's fused epilogue (cublaslt_matmul.h). Every output is verified before it is timed.
// Such rows are not recorded: the database's bench rows are the plain product's.
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "tools/bench/bench_suite.h"
#include "tools/bench/cublas_sgemm.h"
#include "tools/bench/cublaslt_matmul.h"
#include "tools/bench/epilogue_kernel.h"
#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/commands/commands.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/error_bound.h"
#include "tuner/pipeline/shape_verifier.h"
#include "tuner/pipeline/tuning_session.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/selection.h"

namespace tiletune::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> kernels;
  std::vector<std::string> shapes;
  std::string kernel_name;
  std::string precision = "fp32";
  std::string db = "tiletune.db";
  std::string op = "nn";
  std::int64_t batch = 1;
  std::string epilogue = "none";
};

// The problem benched at a shape: the contract the options ask for, alpha 1 and beta 0, every
// operand packed (leading dimensions the stored rows' lengths, a batch's entries back to back).
// Throws UsageError where the batch makes it too large.
GemmProblem benched_problem(const GemmShape& shape, const BenchOptions& options) {
  GemmProblem p = GemmProblem::packed(shape);
  p.op_a = options.op[0] == 't' ? Op::t : Op::n;
  p.op_b = options.op[1] == 't' ? Op::t : Op::n;
  p.lda = p.a_columns();
  p.ldb = p.b_columns();
  p.epilogue = *parse_epilogue(options.epilogue);  // the option's check admits no other word
  p.batch = options.batch;
  if (p.batch > 1) {
    p.stride_a = p.a_rows() * p.lda;
    p.stride_b = p.b_rows() * p.ldb;
    p.stride_c = shape.m * p.ldc;
  }
  if (std::string why = p.invalid_reason(); !why.empty()) {
    throw UsageError(fmt::format("--batch {} at {}: {}", options.batch, shape.to_string(), why));
  }
  return p;
}

// "op=nt batch=4 bias_gelu": the contract column.
std::string contract_cell(const GemmProblem& p) {
  return fmt::format("op={}{} batch={} {}", to_char(p.op_a), to_char(p.op_b), p.batch,
                     to_string(p.epilogue));
}

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

// One launch measured: verified first (a wrong output is an error naming `who`), then its error
// and its time.
struct Measured {
  ResultError error;
  Timing timing;
};
Measured measure(ShapeVerifier& verifier, const std::function<void(CUstream)>& launch,
                 Precision precision, const std::string& who, const TimingSettings& timing) {
  if (auto wrong = verifier.verify(launch, precision)) {
    throw std::runtime_error(fmt::format("{} is wrong: {}", who, *wrong));
  }
  return {verifier.error(launch), time_launches(launch, nullptr, timing)};
}

int run(const BenchOptions& options) {
  const Precision precision = parse_precision_option(options.precision);
  const std::vector<KernelTemplate> templates =
      templates_declaring(load_templates(options.kernels), precision);
  std::vector<std::string> shape_texts = options.shapes;
  if (shape_texts.empty()) shape_texts.assign(std::begin(kBenchSuite), std::end(kBenchSuite));
  const std::vector<GemmShape> shapes = parse_shapes(shape_texts);
  std::vector<GemmProblem> problems;
  for (const GemmShape& shape : shapes) problems.push_back(benched_problem(shape, options));
  const bool plain = problems.front().plain();
  const bool epilogue = problems.front().epilogue != Epilogue::none;
  GpuDevice device;
  ResultStore store(options.db);
  std::unique_ptr<TuningSession> tuning;  // started on first need: shapes may all be recorded
  const DeviceProperties& gpu = device.properties();
  const std::int64_t gpu_id = store.register_gpu(make_gpu_record(gpu));
  const std::optional<std::string> only =
      options.kernel_name.empty() ? std::nullopt : std::optional(options.kernel_name);
  CublasSgemm cublas(precision);
  // cuBLAS's outputs are held to the bound of the arithmetic it is asked for.
  const Precision cublas_precision = precision == Precision::tf32 ? Precision::tf32 : Precision::fp32;
  const std::unique_ptr<EpilogueKernel> epilogue_kernel =
      epilogue ? std::make_unique<EpilogueKernel>(device) : nullptr;
  const TimingSettings timing;

  const std::string yardsticks =
      epilogue ? fmt::format("{} + an epilogue kernel, and cuBLASLt", cublas_yardstick(precision))
               : std::string(cublas_yardstick(precision));
  const std::string contract =
      plain ? "" : fmt::format(", problems {} (alpha 1, beta 0, packed)", contract_cell(problems.front()));
  fmt::print("{} ({} SMs, {:.0f} MHz, FP32 peak {:.1f} TFLOP/s), precision {} against {} in the "
             "same run{}; errors: max |c - ref| / sum|a||b| in u = {:g}, then max |c - ref|\n",
             gpu.name, gpu.sm_count, gpu.clock_khz / 1e3, gpu.fp32_peak_tflops(),
             to_string(precision), yardsticks, contract, unit_roundoff(precision));
  if (plain) {
    fmt::print("{:<16} {:<10} {:<58} {:>9} {:>8} {:>16} {:>9} {:>8} {:>16} {:>6} {:>6}\n", "shape",
               "template", "config", "us", "TFLOP/s", "error", "cuBLAS us", "TFLOP/s",
               "cuBLAS error", "ratio", "%peak");
  } else if (!epilogue) {
    fmt::print("{:<16} {:<24} {:<10} {:<58} {:>9} {:>8} {:>16} {:>9} {:>8} {:>16} {:>6} {:>6}\n",
               "shape", "contract", "template", "config", "us", "TFLOP/s", "error", "cuBLAS us",
               "TFLOP/s", "cuBLAS error", "ratio", "%peak");
  } else {
    fmt::print("{:<16} {:<24} {:<10} {:<58} {:>9} {:>8} {:>16} {:>11} {:>8} {:>16} {:>6} {:>9} "
               "{:>8} {:>16} {:>6} {:>6}\n",
               "shape", "contract", "template", "config", "us", "TFLOP/s", "error", "cuBLAS+k us",
               "TFLOP/s", "cuBLAS+k error", "ratio", "Lt us", "TFLOP/s", "Lt error", "ratio",
               "%peak");
  }
  double log_ratio_sum = 0, log_lt_ratio_sum = 0;
  int measured = 0, lt_measured = 0, missing = 0, skipped = 0;
  // Each recorded version parsed once: a problem may pass over many records of one template.
  std::map<std::string, KernelTemplate> parsed_versions;  // by source hash
  const auto template_of = [&](const ResultRecord& record) -> const KernelTemplate& {
    auto found = parsed_versions.find(record.template_hash);
    if (found == parsed_versions.end()) {
      found = parsed_versions.emplace(record.template_hash, recorded_template(store, record)).first;
    }
    return found->second;
  };
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& shape = shapes[i];
    const GemmProblem& problem = problems[i];
    // A record tuned for the problem's transposes and batch (`tune --op`, `--batch`) first, as the
    // library chooses.
    std::optional<ResultRecord> best =
        problem.tuned_for().plain() ? std::nullopt
                                    : store.best(gpu.name, shape, only, precision, problem.tuned_for());
    if (!best) best = store.best(gpu.name, shape, only, precision);
    if (!best && !templates.empty()) {  // no templates given: nothing to tune it with
      if (!tuning) {
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
    // As the library chooses (runtime::cheapest_serving): the fastest record that serves the
    // problem, of those tuned for its transposes and batch first, then of the plain product's,
    // unless it adds into C and one that keeps C is faster with the pass over C counted.
    std::optional<std::string> cannot;  // why the fastest recorded cannot serve it
    const ResultRecord fastest = *best;
    best.reset();
    const auto serves = [&](const ResultRecord& record, bool seeking) {
      const KernelTemplate& candidate = template_of(record);
      const Configuration candidate_config = candidate.parse_configuration(record.config);
      std::optional<std::string> why = candidate.unsupported(problem, candidate_config);
      if (!why) {
        try {
          candidate.check_requirements(candidate_config, problem);
        } catch (const RequirementNotMet& e) {
          why = e.what();
        }
      }
      if (why && seeking && !cannot) cannot = std::move(why);
      return !why;
    };
    const auto adds_into_c = [&](const ResultRecord& record) {
      const KernelTemplate& candidate = template_of(record);
      return candidate.may_add_into_c(candidate.parse_configuration(record.config));
    };
    const double pass_ms = runtime::epilogue_pass_ms(problem);
    for (const TunedFor kind : {problem.tuned_for(), TunedFor{}}) {
      const std::vector<ResultRecord> ranking = store.ranking(gpu.name, shape, only, precision, kind);
      const auto chosen = runtime::cheapest_serving(
          ranking.begin(), ranking.end(), pass_ms,
          [](const ResultRecord& record) { return record.median_ms; }, serves, adds_into_c);
      if (chosen != ranking.end()) best = *chosen;
      if (best || kind.plain()) break;
    }
    if (!best) {
      ++skipped;
      fmt::print("{:<16} skipped: no record serves {}; the best recorded, {} [{}]: {}\n",
                 shape.to_string(), contract_cell(problem), fastest.template_name, fastest.config,
                 cannot.value_or("not served"));
      continue;
    }
    const KernelTemplate& tmpl = template_of(*best);
    const Configuration config = tmpl.parse_configuration(best->config);
    // The build that serves the problem, where the template compiles parts of it in.
    const Configuration build = tmpl.build_configuration(config, problem);
    const GpuKernel kernel(compile_configuration(tmpl, build, gpu.arch()), tmpl.entry,
                           entry_form(tmpl));
    const LaunchGeometry geometry = tmpl.launch_geometry(build, shape, gpu.sm_count);
    ShapeVerifier verifier(device, problem, 7);
    const auto our_launch = [&](CUstream s) {
      kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), problem, s, verifier.bias());
    };
    // cuBLAS computes the product; an epilogue is the kernel's after it, in the same stream.
    GemmProblem product = problem;
    product.epilogue = Epilogue::none;
    const auto their_launch = [&](CUstream s) {
      cublas.run(product, verifier.a(), verifier.b(), verifier.c(), s);
      if (epilogue_kernel) epilogue_kernel->run(problem, verifier.c(), verifier.bias(), s);
    };
    const Measured ours = measure(verifier, our_launch, tmpl.precision,
                                  fmt::format("{} [{}]", tmpl.name, best->config), timing);
    const Measured theirs =
        measure(verifier, their_launch, cublas_precision,
                epilogue ? fmt::format("{} + the epilogue kernel", cublas_yardstick(precision))
                         : std::string(cublas_yardstick(precision)),
                timing);
    // cuBLASLt where it serves the problem; where not, the row says why.
    std::optional<Measured> lt;
    std::string lt_refusal;
    if (epilogue) {
      try {
        const CublasLtMatmul matmul(problem, verifier.bias(), precision);
        lt = measure(verifier, [&](CUstream s) {
          matmul.run(verifier.a(), verifier.b(), verifier.c(), s);
        }, cublas_precision, "cuBLASLt", timing);
      } catch (const CublasLtUnavailable& e) {
        lt_refusal = e.what();
      }
    }
    const double flop_scale = double(problem.batch);
    const double our_tflops = shape.tflops(ours.timing.median_ms) * flop_scale;
    const double cublas_tflops = shape.tflops(theirs.timing.median_ms) * flop_scale;
    const double ratio = our_tflops / cublas_tflops;
    if (plain) {
      store.record_bench(gpu_id, BenchRecord{gpu.name, best->template_name, best->template_hash,
                                             best->config, shape, ours.timing.median_ms,
                                             theirs.timing.median_ms, ""});
    }
    log_ratio_sum += std::log(ratio);
    ++measured;
    // The FP32 peak is no roof for the tensor cores.
    const std::string peak = precision == Precision::fp32
                                 ? fmt::format("{:.1f}%",
                                               100.0 * our_tflops / gpu.fp32_peak_tflops())
                                 : "-";
    if (plain) {
      fmt::print("{:<16} {:<10} {:<58} {:>9.1f} {:>8.3f} {:>16} {:>9.1f} {:>8.3f} {:>16} {:>6.3f} "
                 "{:>6}\n",
                 shape.to_string(), tmpl.name, best->config, ours.timing.median_ms * 1e3,
                 our_tflops, error_cell(ours.error, precision), theirs.timing.median_ms * 1e3,
                 cublas_tflops, error_cell(theirs.error, precision), ratio, peak);
      continue;
    }
    const std::string left = fmt::format(
        "{:<16} {:<24} {:<10} {:<58} {:>9.1f} {:>8.3f} {:>16} {:>9.1f} {:>8.3f} {:>16} {:>6.3f}",
        shape.to_string(), contract_cell(problem), tmpl.name, best->config,
        ours.timing.median_ms * 1e3, our_tflops, error_cell(ours.error, precision),
        theirs.timing.median_ms * 1e3, cublas_tflops, error_cell(theirs.error, precision), ratio);
    if (!epilogue) {
      fmt::print("{} {:>6}\n", left, peak);
    } else if (lt) {
      const double lt_tflops = shape.tflops(lt->timing.median_ms) * flop_scale;
      log_lt_ratio_sum += std::log(our_tflops / lt_tflops);
      ++lt_measured;
      fmt::print("{} {:>9.1f} {:>8.3f} {:>16} {:>6.3f} {:>6}\n", left, lt->timing.median_ms * 1e3,
                 lt_tflops, error_cell(lt->error, precision), our_tflops / lt_tflops, peak);
    } else {
      fmt::print("{} {:>9} {:>8} {:>16} {:>6} {:>6} (cuBLASLt: {})\n", left, "-", "-", "-", "-",
                 peak, lt_refusal);
    }
  }
  if (measured > 0 && !epilogue) {
    fmt::print("geometric mean of ratios over {} shapes: {:.3f}\n", measured,
               std::exp(log_ratio_sum / measured));
  } else if (measured > 0) {
    fmt::print("geometric mean of ratios over {} shapes: {:.3f} vs {} + kernel", measured,
               std::exp(log_ratio_sum / measured), cublas_yardstick(precision));
    if (lt_measured > 0) {
      fmt::print(", over {} shapes: {:.3f} vs cuBLASLt\n", lt_measured,
                 std::exp(log_lt_ratio_sum / lt_measured));
    } else {
      fmt::print(", none vs cuBLASLt\n");
    }
  }
  return missing == 0 && skipped == 0 ? kSuccess : kFindings;
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
  command->add_option("--op", options->op,
                      "transposes of A and B (n: as stored, t: transposed), every operand packed; "
                      "alpha 1 and beta 0 throughout")
      ->capture_default_str()
      ->check(CLI::IsMember({"nn", "nt", "tn", "tt"}));
  command->add_option("--batch", options->batch,
                      "a strided batch of this many products, entries back to back")
      ->capture_default_str()
      ->check(kPositive);
  command->add_option("--epilogue", options->epilogue,
                      "bias and activation after the product (GELU: tanh form), against cuBLAS "
                      "followed by an elementwise kernel and against cuBLASLt's fused epilogue")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "bias", "relu", "bias_relu", "gelu", "bias_gelu"}));
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

// tiletune query --shape MxNxK [--lda N --ldb N --ldc N] [--kernel NAME] [--gpu NAME] [--db PATH]
//                [--precision fp32|tf32x3|tf32] [--json] [--exact | --nearest | --trial K]
//
// The best correct configuration recorded for a GPU and problem, chosen by the runtime library's
// rule (tuner/runtime/selection.h): this GPU's records, else another GPU's of the same compute
// capability, then architecture; the exact shape, else the configuration the GPU's performance
// model predicts fastest among those whose requirements admit the problem (leading dimensions
// included) and whose tuning limits admit the shape; --nearest takes the nearest recorded shape's
// fastest instead, as before the model; --exact refuses all but the exact shape on this GPU. Without --kernel every template recorded is asked
// and the best answer wins: the nearer GPU step, then the exact shape, the nearer shape, the faster.
// Only templates at least as accurate as --precision (fp32 > tf32x3 > tf32; default fp32) answer.
// --trial K, on a GPU: the runtime library's first-call trial of the answer's template there.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <tiletune/tiletune.h>

#include "db/result_store.h"
#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/commands/commands.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/core/precision.h"
#include "tuner/runtime/record_set.h"
#include "tuner/runtime/selection.h"

namespace tiletune::cli {
namespace {

using runtime::GpuStep;
using runtime::RecordSet;
using runtime::Selection;
using runtime::SelectionRequest;

struct QueryOptions {
  std::string shape;
  std::optional<std::int64_t> lda, ldb, ldc;  // default: packed
  std::string op = "nn";
  std::int64_t batch = 1;
  std::string kernel;
  std::string gpu;
  std::string db = "tiletune.db";
  std::string precision = "fp32";
  bool json = false;
  bool exact = false;
  bool nearest = false;  // the nearest recorded shape's choice, not the model's
  int trial = 0;         // the first-call trial's candidates, timed on this GPU (0: none)
};

const char* to_string(GpuStep step) {
  switch (step) {
    case GpuStep::this_gpu: return "this_gpu";
    case GpuStep::same_compute_capability: return "same_compute_capability";
    case GpuStep::same_architecture: return "same_architecture";
    case GpuStep::default_config: return "default_config";
  }
  return "";
}

GemmProblem problem_of(const QueryOptions& options) {
  GemmProblem problem = GemmProblem::packed(GemmShape::parse(options.shape),
                                            {Transposes::parse(options.op).value(), options.batch});
  if (options.lda) problem.lda = *options.lda;
  if (options.ldb) problem.ldb = *options.ldb;
  if (options.ldc) problem.ldc = *options.ldc;
  if (problem.batch > 1) problem.pack_entries();  // at the leading dimensions given
  if (!problem.valid()) {
    throw UsageError(fmt::format("invalid leading dimensions for {}: {} (lda >= {}, ldb >= {} and "
                                 "ldc >= N are needed, each at most {})",
                                 problem.shape.to_string(), problem.to_string(),
                                 problem.op_a == Op::n ? "K" : "M", problem.op_b == Op::n ? "N" : "K",
                                 std::numeric_limits<int>::max()));
  }
  return problem;
}

// The GPU asked for: --gpu, else the one in this machine, else the only one recorded. Sets the
// request's gpu_name or here, and returns the name for messages.
std::string choose_gpu(const QueryOptions& options, const RecordSet& records,
                       SelectionRequest& request) {
  if (!options.gpu.empty()) return request.gpu_name = options.gpu;
  try {
    // A copy: the GpuDevice is a temporary, gone at the end of this statement.
    const DeviceProperties here = GpuDevice().properties();
    request.here = runtime::GpuIdentity{here.name, here.cc_major, here.cc_minor};
    return here.name;
  } catch (const GpuUnavailable&) {
  }
  std::set<std::string> names;
  for (const runtime::RecordedGpu& g : records.gpus) names.insert(g.name);
  if (names.size() == 1) return request.gpu_name = *names.begin();
  if (names.empty()) throw UsageError(fmt::format("{}: no GPU recorded yet (run 'tiletune tune' first)", options.db));
  throw UsageError(fmt::format("no GPU here and {} GPUs recorded ({}): choose one with --gpu",
                               names.size(), fmt::join(names, ", ")));
}

// --trial K: the runtime library's first-call trial of the model's K candidates for the answer's
// template, on this GPU (nothing recorded: query only reads). Throws GpuUnavailable without one.
Plan trial_plan(const QueryOptions& options, const Selection& answer, const GemmProblem& problem) {
  const GpuDevice here;  // without a GPU: GpuUnavailable, exit 3
  Options library_options;
  library_options.trial_candidates = options.trial;
  library_options.lowest_precision = answer.templ->precision;
  library_options.gpu_name = options.gpu;
  const Library library = Library::open(options.db, library_options);
  return library.gemm(answer.templ->name)
      .plan(Problem{problem.shape.m, problem.shape.n, problem.shape.k, problem.lda, problem.ldb, problem.ldc});
}

std::string describe_trial(const Plan& plan, const std::string& gpu) {
  if (plan.trial_candidates == 0) {
    const std::size_t at = plan.why.find("; the first-call trial");
    return "no first-call trial" + (at == std::string::npos ? std::string(": the model did not choose")
                                                            : plan.why.substr(at + 1));
  }
  return fmt::format("first-call trial on {}: {} [{}] {:.4f} ms, the fastest of the model's {} timed", gpu,
                     plan.template_name, plan.config, plan.expected_ms, plan.trial_candidates);
}

// Which of two templates' answers query gives: the nearer GPU step, the exact shape (a record
// tuned for the problem's transposes and batch first, the faster there), else a prediction (the
// faster predicted), else the nearer recorded shape (its faster), then the template's name.
auto preference(const Selection& s, const GemmProblem& asked) {
  const double distance = s.exact_shape || s.predicted ? 0.0 : log_distance(s.choice->shape, asked.shape);
  const double ms = s.predicted ? s.predicted->ms : s.choice->median_ms;
  return std::make_tuple(s.step, !s.exact_shape, s.choice->tuned_for() != asked.tuned_for(), !s.predicted,
                         distance, ms, s.templ->name);
}

int run(const QueryOptions& options) {
  const Precision lowest = parse_precision_option(options.precision);
  const GemmProblem problem = problem_of(options);
  const GemmShape& requested = problem.shape;
  if (!std::filesystem::exists(options.db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", options.db));
  }
  const RecordSet records = runtime::load_database_records(options.db);
  SelectionRequest request;
  request.problem = problem;
  request.exact_only = options.exact;
  request.predict = !options.nearest;
  request.lowest_precision = lowest;
  const std::string gpu = choose_gpu(options, records, request);

  std::vector<std::string> names;
  int less_accurate = 0;  // templates left out by --precision
  if (!options.kernel.empty()) {
    const runtime::RecordedTemplate* asked = records.find_template(options.kernel);
    if (asked != nullptr && !at_least_as_accurate(asked->precision, lowest)) {
      const char* declared = tiletune::to_string(asked->precision);
      fmt::print(stderr, "tiletune: template {} declares precision {}, below the lowest asked for "
                 "({}): --precision {} accepts it\n", options.kernel, declared, options.precision,
                 declared);
      return kFindings;
    }
    names.push_back(options.kernel);
  } else {
    for (const runtime::RecordedTemplate& t : records.templates) {
      if (at_least_as_accurate(t.precision, request.lowest_precision)) {
        names.push_back(t.name);
      } else {
        ++less_accurate;
      }
    }
  }
  std::optional<Selection> best;
  std::string reason;  // why nothing was found, when a single template was asked
  for (const std::string& name : names) {
    request.template_name = name;
    try {
      Selection answer = runtime::select_configuration(records, request);
      if (!best || preference(answer, problem) < preference(*best, problem)) best = answer;
    } catch (const runtime::NoSelection& e) {
      reason = e.what();
    }
  }
  if (!best) {
    const std::string left_out =
        less_accurate == 0 ? ""
                           : fmt::format(" ({} template{} of a precision below {} left out: "
                                         "--precision accepts {})",
                                         less_accurate, less_accurate == 1 ? "" : "s",
                                         options.precision, less_accurate == 1 ? "it" : "them");
    fmt::print(stderr, "tiletune: no correct configuration recorded for {} on {}{}{}{}\n",
               requested.to_string(), gpu, options.kernel.empty() ? "" : " of template " + options.kernel,
               names.size() == 1 ? " (" + reason + ")" : "", left_out);
    return kFindings;
  }

  std::optional<Plan> trial;
  if (options.trial > 1 && best->predicted) trial = trial_plan(options, *best, problem);
  const runtime::RecordedChoice& choice = *best->choice;
  const std::string& recorded_gpu = records.gpus[choice.gpu].name;
  const GemmShape& answered = choice.shape;
  if (options.json) {
    nlohmann::json out = {
        {"gpu", gpu},
        {"recorded_gpu", recorded_gpu},
        {"gpu_step", to_string(best->step)},
        {"shape", requested.to_string()},
        {"op", problem.transposes().to_string()},
        {"tuned_for_op", choice.op.to_string()},
        {"batch", problem.batch},
        {"tuned_for_batch", choice.batch},
        {"lda", problem.lda},
        {"ldb", problem.ldb},
        {"ldc", problem.ldc},
        {"recorded_shape", answered.to_string()},
        {"exact", best->exact_shape},
        {"chosen_by", best->exact_shape ? "exact_shape" : best->predicted ? "performance_model" : "nearest_shape"},
        {"predicted_ms", best->predicted ? nlohmann::json(best->predicted->ms) : nlohmann::json()},
        {"excluded_by_requirements", best->excluded},
        {"template", best->templ->name},
        {"template_hash", best->templ->source_hash},
        {"precision", tiletune::to_string(best->templ->precision)},
        {"config", best->config},
        {"median_ms", choice.median_ms},
        {"min_ms", choice.min_ms},
        {"max_ms", choice.max_ms},
        {"runs", choice.runs},
        {"tflops", choice.tflops},
        {"registers", choice.registers},
        {"static_shared_bytes", choice.static_shared_bytes},
        {"dynamic_shared_bytes", choice.dynamic_shared_bytes},
        {"fuzz_cases", choice.fuzz_cases},
        {"recorded_at", choice.recorded_at},
        {"why", best->why},
    };
    if (trial) {
      out["trial"] = {{"config", trial->config}, {"ms", trial->expected_ms},
                      {"timed", trial->trial_candidates}, {"why", trial->why}};
    }
    // The hardware counters `tiletune profile` recorded for the configuration answered, if any.
    const ResultStore store(options.db, ResultStore::Access::read_only);
    for (const CounterRecord& counters : store.counters(recorded_gpu, best->templ->name)) {
      if (counters.template_hash == best->templ->source_hash && counters.config == best->config &&
          counters.shape == answered) {
        out["counters"] = counters.values;
        out["counters_ncu_version"] = counters.ncu_version;
      }
    }
    fmt::print("{}\n", out.dump(2));
  } else {
    if (best->step != GpuStep::this_gpu || best->predicted) {
      fmt::print("{}\n", best->why);
    } else if (!best->exact_shape) {
      fmt::print("{} was not tuned on {}; nearest recorded shape: {}{}\n", requested.to_string(),
                 gpu, answered.to_string(),
                 best->excluded > 0 ? fmt::format(" ({} faster configurations left out: their "
                                                  "requirements exclude {})",
                                                  best->excluded,
                                                  problem == GemmProblem::packed(requested)
                                                      ? requested.to_string()
                                                      : problem.to_string())
                                    : "");
    }
    if (best->predicted) {
      fmt::print("{} {}: {} [{}] predicted {:.4f} ms, {:.2f} TFLOP/s, precision {} (recorded at "
                 "{}: {:.4f} ms, {})\n",
                 recorded_gpu, requested.to_string(), best->templ->name, best->config,
                 best->predicted->ms, requested.tflops(best->predicted->ms),
                 tiletune::to_string(best->templ->precision), answered.to_string(), choice.median_ms,
                 choice.recorded_at);
    } else {
      fmt::print("{} {}: {} [{}] {:.4f} ms, {:.2f} TFLOP/s, precision {} (median of {} runs, "
                 "recorded {})\n",
                 recorded_gpu,
                 answered.to_string() + (choice.tuned_for().plain() ? "" : " " + choice.tuned_for().to_string()),
                 best->templ->name, best->config, choice.median_ms, choice.tflops,
                 tiletune::to_string(best->templ->precision),
                 choice.runs, choice.recorded_at);
    }
    if (trial) fmt::print("{}\n", describe_trial(*trial, gpu));
  }
  return kSuccess;
}

}  // namespace

void add_query_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<QueryOptions>();
  CLI::App* command = app.add_subcommand("query", "the best recorded configuration for a shape");
  command->add_option("--shape", options->shape, "problem size MxNxK")->required();
  command->add_option("--op", options->op,
                      "the transposes (nt: B stored N x K): a record tuned for them at the shape "
                      "('tune --op') is chosen first")
      ->capture_default_str()->check(CLI::IsMember({"nn", "nt", "tn", "tt"}));
  command->add_option("--batch", options->batch,
                      "a strided batch of this many products (entries packed): a record tuned for "
                      "it at the shape ('tune --batch') is chosen first")
      ->capture_default_str()->check(kPositive);
  command->add_option("--lda", options->lda, "leading dimension of A (default: packed, K or M with op t)");
  command->add_option("--ldb", options->ldb, "leading dimension of B (default: packed, N or K with op t)");
  command->add_option("--ldc", options->ldc, "leading dimension of C (default: N, packed)");
  command->add_option("--kernel", options->kernel, "only this template (by name)");
  command->add_option("--gpu", options->gpu, "GPU name (default: this machine's, or the only one recorded)");
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_flag("--json", options->json, "print JSON");
  command->add_option("--precision", options->precision,
                      "the least accurate precision accepted: fp32 > tf32x3 > tf32")
      ->capture_default_str();
  CLI::Option* exact = command->add_flag("--exact", options->exact, "only the exact shape's records answer");
  CLI::Option* nearest = command->add_flag(
      "--nearest", options->nearest,
      "at a shape not recorded, the nearest recorded shape's fastest, not the performance model's choice");
  nearest->excludes(exact);
  command->add_option("--trial", options->trial,
                      "on a GPU, at a shape not recorded: time the model's K candidates as the library's "
                      "first-call trial does (Options::trial_candidates) and say which is fastest")
      ->check(CLI::Range(2, 64))->excludes(exact)->excludes(nearest);
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

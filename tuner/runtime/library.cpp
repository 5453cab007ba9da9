// The public API (include/tiletune/tiletune.h) over the runtime's parts: records (record_set.h,
// bundle.h), the selection rule (selection.h), the plan cache (plan_cache.h) and the two runners.
#include <tiletune/tiletune.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "db/result_store.h"
#include "tuner/backend/cpu/cpu_device.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/core/precision.h"
#include "tuner/runtime/bundle.h"
#include "tuner/runtime/cpu_runner.h"
#include "tuner/runtime/first_call_trial.h"
#include "tuner/runtime/gpu_runner.h"
#include "tuner/runtime/miss_log.h"
#include "tuner/runtime/plan_cache.h"
#include "tuner/runtime/public_problem.h"
#include "tuner/runtime/selection.h"

#ifndef TILETUNE_VERSION
#define TILETUNE_VERSION "unknown"
#endif

namespace tiletune {
namespace {

using runtime::RecordedTemplate;

// Runs `body`, turning every internal failure into the public exceptions, their message kept.
template <class Body>
auto translated(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const runtime::NoSelection& e) {
    throw NoConfiguration(e.what());
  } catch (const RequirementNotMet& e) {
    throw InvalidProblem(e.what());
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
}

using runtime::to_gemm_problem;

// The problem, checked: throws InvalidProblem with one line naming the first thing wrong (sizes and
// leading dimensions within the kernels' 32-bit range, the batch's strides).
GemmProblem checked(const Problem& p) {
  GemmProblem problem = to_gemm_problem(p);
  if (const std::string why = problem.invalid_reason(); !why.empty()) {
    throw InvalidProblem(fmt::format("problem {}: {}", problem.to_string(), why));
  }
  return problem;
}

// The parts of the BLAS contract a plan serves, as its key has them (" op=tn, alpha and beta, a
// batch, epilogue=bias"): not alpha's value, which the plan's problems may differ in.
std::string contract_parts(const GemmProblem& p) {
  std::string parts;
  const auto add = [&](const std::string& part) { parts += (parts.empty() ? " " : ", ") + part; };
  if (p.op_a != Op::n || p.op_b != Op::n) add(fmt::format("op={}{}", to_char(p.op_a), to_char(p.op_b)));
  if (p.alpha != 1 || p.beta != 0) add(p.beta != 0 ? "alpha and beta (C read)" : "alpha");
  if (p.batch != 1) add("a strided batch");
  if (p.epilogue != Epilogue::none) add(fmt::format("epilogue={}", to_string(p.epilogue)));
  return parts;
}

GpuMatch to_gpu_match(runtime::GpuStep step) {
  switch (step) {
    case runtime::GpuStep::this_gpu: return GpuMatch::this_gpu;
    case runtime::GpuStep::same_compute_capability: return GpuMatch::same_compute_capability;
    case runtime::GpuStep::same_architecture: return GpuMatch::same_architecture;
    case runtime::GpuStep::default_config: return GpuMatch::none;
  }
  return GpuMatch::none;
}

}  // namespace

namespace detail {

// What a problem runs: its plan, geometry and loaded kernel, prepared once per context. (In
// detail, not the unnamed namespace: GemmState, which keeps them, has external linkage.)
struct Prepared {
  Plan plan;
  LaunchGeometry geometry;
  std::shared_ptr<const GpuKernel> gpu;
  std::shared_ptr<const CpuKernel> cpu;
};

class LibraryState {
 public:
  Options options;
  std::string source;
  runtime::RecordSet owned_records;       // from a database
  std::optional<runtime::Bundle> bundle;  // or from a bundle (its records inside)
  std::unique_ptr<runtime::MissLog> misses;
  runtime::MissLog::EarlierTrials earlier_trials;  // read from `misses` when opened, for trials

  const runtime::RecordSet& records() const { return bundle ? bundle->records : owned_records; }

  // Made when the library is opened (runners touch no driver until asked), so that a run never
  // takes a library-wide lock to find them.
  void make_runners() {
    const auto cache = [&](const char* kind) {
      return options.cache_dir.empty() ? std::filesystem::path()
                                       : std::filesystem::path(options.cache_dir) / kind;
    };
    models_ = std::make_unique<runtime::PerformanceModels>(records());
    if (options.backend == Backend::gpu) {
      gpu_ = std::make_unique<runtime::GpuRunner>(bundle ? &*bundle : nullptr, cache("cubins"));
    } else {
      cpu_ = std::make_unique<runtime::CpuRunner>(cache("cpu"));
    }
    // The models are fitted in the background from the start (tens of milliseconds for a
    // template of hundreds of configurations), so that the first plan at a shape not recorded
    // finds its model ready; a plan that comes sooner waits for its own template's alone. A fit
    // that fails here is tried again by the plan that needs it, which reports the failure.
    try {
      fitting_ = std::async(std::launch::async, [this] {
        try {
          models_->fit_all([&](const runtime::RecordedTemplate& t) {
            return t.parsed && at_least_as_accurate(t.precision, options.lowest_precision);
          });
        } catch (const std::exception&) {
        }
      });
    } catch (const std::system_error&) {
      // no thread to spare: each model is fitted by its first plan instead
    }
  }
  runtime::GpuRunner& gpu() const { return *gpu_; }
  // The records' performance models: fitted in the background once opened, or by the first plan that needs one.
  runtime::PerformanceModels& models() const { return *models_; }
  runtime::CpuRunner& cpu() const { return *cpu_; }

  // The state of a template's Gemm handles, made on first use and kept with the library.
  GemmState& gemm(const std::string& name);

 private:
  std::mutex mutex_;
  std::unique_ptr<runtime::GpuRunner> gpu_;
  std::unique_ptr<runtime::CpuRunner> cpu_;
  std::unique_ptr<runtime::PerformanceModels> models_;
  std::map<std::string, std::unique_ptr<GemmState>> gemms_;
  std::future<void> fitting_;  // last: destroyed first, waiting for the fits that read the rest
};

class GemmState {
 public:
  GemmState(LibraryState& library, const RecordedTemplate& templ) : library_(library), templ_(templ) {}

  const std::string& name() const { return templ_.name; }
  Precision precision() const { return templ_.precision; }
  LibraryState& library() const { return library_; }
  // The calling thread's CUDA context, which keys the plans (null on the CPU backend).
  CUcontext context() const {
    return library_.options.backend == Backend::gpu ? library_.gpu().current_context() : nullptr;
  }

  // The prepared launch for the problem in the context (null on the CPU backend), from the cache
  // or prepared now.
  std::shared_ptr<const Prepared> prepared(CUcontext context, const GemmProblem& problem) {
    const runtime::PlanKey key = runtime::PlanKey::of(context, problem);
    if (auto found = cache_.find(key)) return found;
    return cache_.insert(key, prepare(context, problem));
  }

  // The time the problem's choice in the context expects (0: unknown), found as its plan finds it
  // but without loading a kernel, timing a trial or recording a miss (Blas ranks templates so).
  // With the pass over C a configuration that adds into it costs the problem (epilogue_pass_ms).
  double expected_ms(CUcontext context, const GemmProblem& problem) {
    const Selected selected = select(context, problem, 1);
    const double ms = expected_ms_of(selected.chosen, problem);
    const KernelTemplate& parsed = *templ_.parsed;
    const bool adds_into_c = ms > 0 && parsed.may_add_into_c(parsed.parse_configuration(selected.chosen.config));
    return adds_into_c ? ms + runtime::epilogue_pass_ms(problem) : ms;
  }

 private:
  // The choice of a configuration for a problem, and what it was made for.
  struct Selected {
    runtime::Selection chosen;
    const DeviceProperties* device = nullptr;  // the context's GPU; null on the CPU backend
    int sm_count = 0;
  };
  // `candidates`: how many the model names where it chooses (a first-call trial's, else 1).
  Selected select(CUcontext context, const GemmProblem& problem, std::size_t candidates);
  // The selection's time for the problem: the model's prediction, else its record's time scaled
  // by the problem's flops; 0 where no record chose (a declared default).
  static double expected_ms_of(const runtime::Selection& chosen, const GemmProblem& problem);
  std::shared_ptr<const Prepared> prepare(CUcontext context, const GemmProblem& problem);

  // What a first-call trial chose (timed 0: none; why then says why, or is empty).
  struct Trial {
    std::string config;
    double ms = 0;
    int timed = 0, fuzz_cases = 0;
    std::string why;  // appended to the plan's
  };
  // `pass_ms`: what a candidate that adds into C pays over the timed product for the caller's
  // problem (runtime::epilogue_pass_ms), which the trial counts in.
  Trial first_call_trial(CUcontext context, const DeviceProperties* device, const runtime::Selection& chosen,
                         const GemmProblem& problem, double pass_ms);
  int fuzz_cases_of(const runtime::Selection& chosen, const std::string& config) const;

  LibraryState& library_;  // which owns this state
  const RecordedTemplate& templ_;
  runtime::PlanCache<Prepared> cache_;
};

GemmState& LibraryState::gemm(const std::string& name) {
  const std::lock_guard lock(mutex_);
  if (auto found = gemms_.find(name); found != gemms_.end()) return *found->second;
  const RecordedTemplate* templ = records().find_template(name);
  if (templ == nullptr) {
    std::string known;
    for (const RecordedTemplate& t : records().templates) known += (known.empty() ? "" : ", ") + t.name;
    throw NoConfiguration(fmt::format("{}: no template named {} (recorded: {})", source, name,
                                      known.empty() ? "none" : known));
  }
  if (!at_least_as_accurate(templ->precision, options.lowest_precision)) {
    throw NoConfiguration(fmt::format(
        "{}: template {} declares precision {}, below the lowest this library accepts ({}); set "
        "Options::lowest_precision (C: tiletune_library_open_with_precision) to {} to accept it",
        source, name, to_string(templ->precision), to_string(options.lowest_precision),
        to_string(templ->precision)));
  }
  if (!templ->parsed) {
    throw Error(fmt::format("{}: the recorded version {} of {} cannot be read by this tiletune {}",
                            source, templ->source_hash, name, TILETUNE_VERSION));
  }
  return *gemms_.emplace(name, std::make_unique<GemmState>(*this, *templ)).first->second;
}

GemmState::Selected GemmState::select(CUcontext context, const GemmProblem& problem, std::size_t candidates) {
  LibraryState& library = library_;
  const Options& options = library.options;
  if (const std::optional<std::string> why = templ_.parsed->unsupported(problem)) {
    throw NoConfiguration(fmt::format("problem {}: {}", problem.to_string(), *why));
  }
  Selected selected;
  runtime::SelectionRequest request;
  request.template_name = templ_.name;
  request.problem = problem;
  request.gpu_name = options.gpu_name;
  request.lowest_precision = options.lowest_precision;
  if (options.backend == Backend::gpu) {
    selected.device = &library.gpu().device(context);
    request.here = runtime::GpuIdentity{selected.device->name, selected.device->cc_major,
                                        selected.device->cc_minor};
  }
  // The CPU backend launches with schedule seed 0 (Gemm::run), whose multiprocessor count this is.
  selected.sm_count = selected.device ? selected.device->sm_count : drawn_sm_count(0);
  request.sm_count = selected.sm_count;
  if (auto found = options.defaults.find(templ_.name); found != options.defaults.end()) {
    request.default_config = found->second;
  }
  request.candidates = candidates;
  selected.chosen = runtime::select_configuration(library.records(), request, &library.models());
  return selected;
}

double GemmState::expected_ms_of(const runtime::Selection& chosen, const GemmProblem& problem) {
  if (chosen.predicted) return chosen.predicted->ms;
  if (const runtime::RecordedChoice* choice = chosen.choice) {
    return choice->median_ms * problem.shape.flops() / choice->shape.flops();
  }
  return 0;
}

std::shared_ptr<const Prepared> GemmState::prepare(CUcontext context, const GemmProblem& problem) {
  LibraryState& library = library_;
  const Options& options = library.options;
  const bool on_gpu = options.backend == Backend::gpu;
  auto prepared = std::make_shared<Prepared>();
  const Selected selected =
      select(context, problem, options.trial_candidates > 1 ? std::size_t(options.trial_candidates) : 1);
  const runtime::Selection& chosen = selected.chosen;
  const DeviceProperties* device = selected.device;
  const int sm_count = selected.sm_count;

  // Where the model chose, a first-call trial may choose among its fastest instead. It times C = A *
  // B at the shape (packed where the problem is more): records are kept by shape, and the trial's
  // times are kept as records of its shape.
  const GemmProblem timed = problem.plain() ? problem : GemmProblem::packed(problem.shape);
  Trial trial = chosen.predicted && options.trial_candidates > 1
                    ? first_call_trial(context, device, chosen, timed, runtime::epilogue_pass_ms(problem))
                    : Trial{};
  const KernelTemplate& parsed = *templ_.parsed;
  // An earlier process's winner was found for C = A * B: it may have no build of this problem.
  if (trial.timed > 0 && parsed.unsupported(problem, parsed.parse_configuration(trial.config))) {
    trial = Trial{};
  }
  const std::string& chosen_config = trial.timed > 0 ? trial.config : chosen.config;
  const Configuration config = parsed.parse_configuration(chosen_config);
  parsed.check_requirements(config, problem);
  const Specialization build = parsed.specialization(problem);
  prepared->geometry =
      parsed.launch_geometry(parsed.build_configuration(config, build), problem.shape, sm_count);

  Plan& plan = prepared->plan;
  plan.template_name = templ_.name;
  plan.template_hash = templ_.source_hash;
  plan.precision = templ_.precision;
  plan.config = chosen_config;
  plan.gpu_match = to_gpu_match(chosen.step);
  plan.backend = options.backend;
  plan.why = chosen.why + trial.why;
  if (!problem.plain()) {
    // Records are keyed by shape: what was tuned for C = A * B serves the rest of the contract.
    plan.why += build.plain()
                    ? fmt::format(" (tuned for C = A * B; serves{} at run time)", contract_parts(problem))
                    : fmt::format(" (tuned for C = A * B; serves{} in its build {})", contract_parts(problem),
                                  build.to_string());
    if (prepared->geometry.epilogue_pass && (problem.beta != 0 || problem.epilogue != Epilogue::none)) {
      plan.why += "; it adds into C, so its kernel computes alpha * op(A) * op(B) and a pass over C after it "
                  "applies beta and the epilogue";
    }
  }
  if (const runtime::RecordedChoice* choice = chosen.choice) {
    plan.gpu = library.records().gpus[choice->gpu].name;
    plan.recorded_M = choice->shape.m;
    plan.recorded_N = choice->shape.n;
    plan.recorded_K = choice->shape.k;
    plan.exact = chosen.step == runtime::GpuStep::this_gpu && chosen.exact_shape;
    plan.expected_ms = expected_ms_of(chosen, problem);
    plan.fuzz_cases = choice->fuzz_cases;
    if (trial.timed > 0) {
      plan.expected_ms = trial.ms;
      plan.trial_candidates = trial.timed;
      plan.fuzz_cases = trial.fuzz_cases;
    }
  }
  plan.grid = prepared->geometry.grid;
  plan.block = prepared->geometry.block;
  plan.dynamic_shared_bytes = prepared->geometry.dynamic_shared_bytes;
  plan.zero_output = prepared->geometry.zero_output;

  if (library.misses && !plan.exact) {
    const std::string gpu = !options.gpu_name.empty() ? options.gpu_name
                            : device != nullptr       ? device->name
                                                      : plan.gpu;
    // `tune --missed` tunes C = A * B at the shape, which is what serves the contract problem.
    library.misses->record(gpu, templ_.name,
                           problem.plain() ? problem : GemmProblem::packed(problem.shape));
  }
  if (on_gpu) {
    prepared->gpu = library.gpu().kernel(context, templ_, chosen_config, build, prepared->geometry);
  } else {
    prepared->cpu = library.cpu().kernel(templ_, chosen_config, build);
  }
  return prepared;
}

// The GPU (or "CPU backend") whose times a trial measures, as the database keys it.
GpuRecord trial_device_record(const DeviceProperties& device) {
  try {
    return make_gpu_record(device);
  } catch (const std::exception&) {  // no NVRTC to ask for its version: the rest identifies it
    return GpuRecord{device.name, device.cc_major, device.cc_minor, device.sm_count, device.clock_khz,
                     device.memory_bytes, device.driver_version, ""};
  }
}

GemmState::Trial GemmState::first_call_trial(CUcontext context, const DeviceProperties* device,
                                             const runtime::Selection& chosen, const GemmProblem& problem,
                                             double pass_ms) {
  LibraryState& library = library_;
  const bool on_gpu = device != nullptr;
  const DeviceProperties timed_on = on_gpu ? *device : cpu_backend_device();
  Trial trial;
  // An earlier process's trial at this shape: its winner, timed on this same kind of device.
  const auto earlier = library.earlier_trials.find({timed_on.name, templ_.source_hash, problem.shape});
  if (earlier != library.earlier_trials.end()) {
    const runtime::MissLog::EarlierTrial& found = earlier->second;
    const auto fits = [&] {
      try {
        return templ_.parsed->satisfies_requirements(templ_.parsed->parse_configuration(found.config), problem);
      } catch (const TemplateError&) {
        return false;
      }
    };
    if (fits()) {
      trial.config = found.config;
      trial.ms = found.median_ms;
      trial.timed = found.timed;
      trial.fuzz_cases = fuzz_cases_of(chosen, found.config);
      trial.why = fmt::format("; an earlier first-call trial on {} timed {} candidates at {}: [{}] fastest, {:.4g} ms",
                              timed_on.name, found.timed, problem.shape.to_string(), found.config, found.median_ms);
      return trial;
    }
  }
  if (chosen.candidates.size() < 2) return trial;
  try {
    std::vector<runtime::TrialCandidate> candidates;
    for (const auto& [text, prediction] : chosen.candidates) {
      runtime::TrialCandidate candidate;
      candidate.config = text;
      const Configuration config = templ_.parsed->parse_configuration(text);
      templ_.parsed->check_requirements(config, problem);
      const Specialization build = templ_.parsed->specialization(problem);
      candidate.geometry = templ_.parsed->launch_geometry(templ_.parsed->build_configuration(config, build),
                                                          problem.shape,
                                                          on_gpu ? device->sm_count : drawn_sm_count(0));
      if (on_gpu) candidate.gpu = library.gpu().kernel(context, templ_, text, build, candidate.geometry);
      else candidate.cpu = library.cpu().kernel(templ_, text, build);
      candidates.push_back(std::move(candidate));
    }
    const std::vector<runtime::TrialTime> times =
        on_gpu ? runtime::time_candidates_on_gpu(candidates, problem, std::size_t(device->l2_cache_bytes))
               : runtime::time_candidates_on_cpu(candidates, problem);
    const auto cost = [&](const runtime::TrialTime& t) {
      const bool adds = candidates[std::size_t(&t - times.data())].geometry.epilogue_pass;
      return t.median_ms + (adds ? pass_ms : 0.0);
    };
    const auto fastest = std::min_element(times.begin(), times.end(), [&](const auto& a, const auto& b) {
      return cost(a) < cost(b);
    });
    trial.config = fastest->config;
    trial.ms = fastest->median_ms;
    trial.timed = int(times.size());
    trial.fuzz_cases = fuzz_cases_of(chosen, trial.config);
    trial.why = fmt::format("; the first-call trial timed the model's {} fastest: [{}] fastest, {:.4g} ms{}",
                            times.size(), trial.config, trial.ms,
                            trial.config == chosen.config
                                ? " (the model's own choice)"
                                : fmt::format(" (the model's choice {:.4g} ms)", times.front().median_ms));
    if (library.misses) {
      std::vector<std::pair<std::string, double>> rows;
      for (const runtime::TrialTime& t : times) rows.emplace_back(t.config, t.median_ms);
      library.misses->record_trial(trial_device_record(timed_on),
                                   {templ_.name, templ_.source_hash, templ_.path, templ_.source, templ_.precision},
                                   problem.shape, rows);
    }
  } catch (const std::exception& e) {
    // The model's choice stands; the plan says why there was no trial.
    trial = Trial{};
    const std::string_view cause = e.what();
    trial.why = fmt::format("; the first-call trial could not run: {}", cause.substr(0, cause.find('\n')));
  }
  return trial;
}

// The fuzz cases a candidate passed when tuned (its records' most), for the plan.
int GemmState::fuzz_cases_of(const runtime::Selection& chosen, const std::string& config) const {
  int most = 0;
  for (const runtime::RecordedChoice& c : library_.records().choices) {
    if (c.templ == std::size_t(chosen.templ - library_.records().templates.data()) && c.config == config) {
      most = std::max(most, c.fuzz_cases);
    }
  }
  return most;
}

}  // namespace detail

std::string Problem::to_string() const { return to_gemm_problem(*this).to_string(); }

const char* to_string(GpuMatch match) {
  switch (match) {
    case GpuMatch::this_gpu: return "this GPU";
    case GpuMatch::same_compute_capability: return "a GPU of the same compute capability";
    case GpuMatch::same_architecture: return "a GPU of the same architecture";
    case GpuMatch::none: return "no record (the declared default)";
  }
  return "?";
}

std::string Plan::to_string() const {
  std::string text = fmt::format("{} [{}] on the {} backend, precision {}\n", template_name,
                                 config, backend == Backend::gpu ? "GPU" : "CPU",
                                 tiletune::to_string(precision));
  if (gpu_match == GpuMatch::none) {
    text += "  no record fits: the declared default\n";
  } else {
    text += fmt::format("  recorded on {} ({}) at {}x{}x{}{}; expected {:.4f} ms; passed {} fuzz cases\n",
                        gpu, tiletune::to_string(gpu_match), recorded_M, recorded_N, recorded_K,
                        exact ? " (exact)" : "", expected_ms, fuzz_cases);
  }
  text += fmt::format("  grid {}x{}x{}, block {}x{}x{}, {} bytes of dynamic shared memory{}\n", grid[0],
                      grid[1], grid[2], block[0], block[1], block[2], dynamic_shared_bytes,
                      zero_output ? ", C cleared first" : "");
  text += "  why: " + why;
  return text;
}

Gemm::Gemm(std::shared_ptr<detail::GemmState> state) : state_(std::move(state)) {}

const std::string& Gemm::name() const { return state_->name(); }

Precision Gemm::precision() const { return state_->precision(); }

Plan Gemm::plan(const Problem& problem) const {
  return translated([&] {
    const GemmProblem p = checked(problem);  // before the context: a bad problem touches no driver
    return state_->prepared(state_->context(), p)->plan;
  });
}

double Gemm::expected_ms(const Problem& problem) const {
  return translated([&] {
    const GemmProblem p = checked(problem);
    return state_->expected_ms(state_->context(), p);
  });
}

void Gemm::run(const Problem& problem, const float* A, const float* B, float* C, void* stream) const {
  run(problem, A, B, C, stream, nullptr);
}

void Gemm::run(const Problem& problem, const float* A, const float* B, float* C, void* stream,
               const float* bias) const {
  translated([&] {
    const GemmProblem p = checked(problem);
    if (A == nullptr || B == nullptr || C == nullptr) {
      throw InvalidProblem(fmt::format("problem {}: {} is a null pointer", problem.to_string(),
                                       A == nullptr ? "A" : B == nullptr ? "B" : "C"));
    }
    if (adds_bias(problem.epilogue) != (bias != nullptr)) {
      throw InvalidProblem(fmt::format("problem {}: {}", problem.to_string(),
                                       bias == nullptr ? "its epilogue adds a bias, but the bias pointer is null"
                                                       : "a bias was given, but its epilogue adds none"));
    }
    // The plan is shared by problems that differ in alpha, beta or the batch (PlanKey): the launch
    // takes those from this one.
    detail::LibraryState& library = state_->library();
    if (library.options.backend == Backend::cpu) {
      const std::shared_ptr<const detail::Prepared> prepared = state_->prepared(nullptr, p);
      prepared->cpu->launch(prepared->geometry, A, B, C, p, 0, bias);
      return;
    }
    const CUcontext context = library.gpu().current_context();
    const std::shared_ptr<const detail::Prepared> prepared = state_->prepared(context, p);
    prepared->gpu->launch(prepared->geometry, CUdeviceptr(A), CUdeviceptr(B), CUdeviceptr(C), p,
                          static_cast<CUstream>(stream), CUdeviceptr(bias));
  });
}

Library::Library(std::shared_ptr<detail::LibraryState> state) : state_(std::move(state)) {}

Library Library::open(const std::string& path, const Options& options) {
  return translated([&] {
    auto state = std::make_shared<detail::LibraryState>();
    state->options = options;
    if (path.empty()) throw Error("an empty path names no tiletune database or bundle");
    if (runtime::is_bundle(path)) {
      state->source = "bundle " + path;
      state->bundle = runtime::read_bundle(path);
    } else if (std::filesystem::is_regular_file(path)) {
      state->source = "database " + path;
      state->owned_records = runtime::load_database_records(path);
    } else {
      throw Error(fmt::format("{}: no such tiletune database or bundle", path));
    }
    if (!options.record_misses.empty()) {
      state->misses = std::make_unique<runtime::MissLog>(options.record_misses);
      if (options.trial_candidates > 1) state->earlier_trials = state->misses->earlier_trials();
    }
    state->make_runners();
    return Library(std::move(state));
  });
}

Library Library::open(const EmbeddedBundle& bundle, const Options& options) {
  return translated([&] {
    auto state = std::make_shared<detail::LibraryState>();
    state->options = options;
    state->source = "embedded bundle";
    state->bundle = runtime::read_bundle(bundle);
    if (!options.record_misses.empty()) {
      state->misses = std::make_unique<runtime::MissLog>(options.record_misses);
      if (options.trial_candidates > 1) state->earlier_trials = state->misses->earlier_trials();
    }
    state->make_runners();
    return Library(std::move(state));
  });
}

Gemm Library::gemm(const std::string& template_name) const {
  // The handle keeps the whole library alive (the aliasing constructor) and points at its part.
  return translated([&] { return Gemm(std::shared_ptr<detail::GemmState>(state_, &state_->gemm(template_name))); });
}

std::vector<std::string> Library::templates() const {
  std::vector<std::string> names;
  for (const RecordedTemplate& t : state_->records().templates) names.push_back(t.name);
  return names;  // RecordSet keeps them sorted by name
}

std::string Library::source() const { return state_->source; }

const Options& Library::options() const { return state_->options; }

const char* version() { return TILETUNE_VERSION; }

}  // namespace tiletune

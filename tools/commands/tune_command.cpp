// tiletune tune KERNEL.cu... --shape MxNxK [--shape ...] [--strategy NAME --budget B] [--db PATH]
// tiletune tune --missed [KERNEL.cu...] [--db PATH]: the shapes the runtime library missed on this
// GPU (Options::record_misses), per template; a shape's misses are forgotten once it has a winner.
// tiletune tune KERNEL.cu... --workload SHAPES.txt --budget N [--search-budget B]: the N shapes of
// the workload that `tiletune plan` names for this GPU (tuner/runtime/workload_plan.h).
// tiletune tune ... --shard I/N: this process's share of the tune (tuner/search/tune_shard.h), into
// its own database, for `tiletune merge` to join.
//
// Evaluates configurations in a worker process (a crash or a hang is recorded and the tune goes
// on; with --devices, one per GPU, each handed configurations as it is free: device_pool.h),
// records every outcome at once (Ctrl-C or kill -9 lose nothing; the same command resumes),
// re-measures the best few together (of each template, then of the templates of one precision at
// each shape), and prints the winner of each template and shape with where the time went (and,
// with --devices, what each device settled). Exits 1 when some template and shape has no correct
// configuration (none of those it settled was correct, or none admits the shape and no other
// template of its precision has a winner there).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/cli/progress_bar.h"
#include "tools/cli/session_options.h"
#include "tools/cli/workload_planning.h"
#include "tools/commands/commands.h"
#include "tools/commands/tune_report.h"
#include "tuner/core/configurations.h"
#include "tuner/search/search_strategy.h"

namespace tiletune::cli {
namespace {

struct TuneOptions {
  std::vector<std::string> kernels;
  std::vector<std::string> shapes{"4096x4096x4096"};
  std::string db = "tiletune.db";
  int cases = 30;
  std::uint64_t seed = 1;
  bool remeasure = false;
  std::string strategy = "exhaustive";
  std::string budget;
  bool keep_spilling = false;
  bool cold_start = false;
  int confirm_top = 5;
  bool missed = false;
  std::string workload;       // a workload file: tune the --budget shapes `plan` names
  std::string search_budget;  // with --workload, what --budget is without it
  std::string shard;  // "I/N"; empty: the whole tune
  std::string op = "nn";  // the transposes tuned
  std::int64_t batch = 1;  // the strided batch tuned
  SessionOptions session;
};

// The plans' searches grouped by shape and precision, in the order of their first search: those of
// two templates or more, which are re-measured together once all are searched.
std::vector<AcrossTemplates> across_templates(const std::vector<TuningPlan>& plans) {
  std::vector<AcrossTemplates> groups;
  std::size_t search = 0;
  for (const TuningPlan& plan : plans) {
    for (const GemmShape& shape : plan.shapes) {
      auto group = std::find_if(groups.begin(), groups.end(), [&](const AcrossTemplates& g) {
        return g.shape == shape && g.precision == plan.tmpl.precision;
      });
      if (group == groups.end()) {
        AcrossTemplates fresh;
        fresh.shape = shape;
        fresh.precision = plan.tmpl.precision;
        group = groups.insert(groups.end(), std::move(fresh));
      }
      group->templates.push_back(&plan.tmpl);
      group->searches.push_back(search++);
    }
  }
  std::erase_if(groups, [](const AcrossTemplates& g) { return g.templates.size() < 2; });
  return groups;
}

// `name_device`: start with the device the step happened on ("[1] "), when there are several.
std::string describe(const TuningEvent& e, bool name_device) {
  std::string line = name_device && e.device >= 0 ? fmt::format("[{}] ", e.device) : "";
  line += fmt::format("{} {}", e.tmpl->name, e.shape.to_string());
  if (e.config) line += " " + e.config->to_string();
  line += ": ";
  if (e.result == nullptr) return line + e.stage;
  if (e.stage == "recorded earlier") line += "(recorded earlier) ";
  line += to_string(e.result->status);
  if (e.result->status == ResultStatus::ok) {
    return line + fmt::format(" {:.4f} ms {:.2f} TFLOP/s", e.result->median_ms, e.result->tflops);
  }
  return line + ": " + e.result->detail.substr(0, e.result->detail.find('\n'));
}

// What the whole tune will settle at most: every template x shape search's limit (of a shard that
// shares out configurations, its share).
int planned_total(const std::vector<TuningPlan>& plans, const TuningSettings& settings) {
  int total = 0;
  for (const auto& [tmpl, shapes] : plans) {
    for (const GemmShape& shape : shapes) {
      total += int(plan_search(tmpl, enumerate_configurations(tmpl, &shape, settings.tuned_for()), settings).limit);
    }
  }
  return total;
}

// The misses of this GPU, per template name, per shape: the problems (leading dimensions) missed.
using Misses = std::map<std::string, std::map<GemmShape, std::vector<MissedProblem>>>;

Misses misses_of(const ResultStore& store, const std::string& gpu_name) {
  Misses misses;
  for (MissedProblem& row : store.missed_problems(gpu_name)) {
    // Only the library records misses, of problems it checked; a row edited in is passed over.
    if (!row.problem.valid()) {
      fmt::print(stderr, "tiletune: the missed problem {} of {} is no valid problem: skipped\n",
                 row.problem.to_string(), row.template_name);
      continue;
    }
    const GemmShape shape = row.problem.shape;
    misses[row.template_name][shape].push_back(std::move(row));
  }
  return misses;
}

// The templates to tune the misses with: those given that were missed, or, with none given, the
// current versions recorded in the database. What cannot be tuned is said and skipped.
std::vector<KernelTemplate> missed_templates(const std::vector<KernelTemplate>& given,
                                            const ResultStore& store, const Misses& misses,
                                            const std::string& gpu_name) {
  std::vector<KernelTemplate> templates;
  if (!given.empty()) {
    for (const KernelTemplate& tmpl : given) {
      if (misses.contains(tmpl.name)) {
        templates.push_back(tmpl);
      } else {
        fmt::print(stderr, "tiletune: nothing of {} was missed on {}: skipped\n", tmpl.name, gpu_name);
      }
    }
    return templates;
  }
  std::set<std::string> recorded;
  for (const TemplateRecord& record : store.templates()) {
    if (!misses.contains(record.name)) continue;
    recorded.insert(record.name);
    try {
      KernelTemplate tmpl = parse_template(record.source, record.path.empty() ? record.name : record.path);
      tmpl.path = record.path;  // as it was tuned: kept in the database and the cubin cache's key
      templates.push_back(std::move(tmpl));
    } catch (const TemplateError& error) {
      fmt::print(stderr, "tiletune: the recorded version {} of {} is refused by this tiletune: {}; "
                 "skipped (give its file to tune it)\n", record.source_hash, record.name, error.what());
    }
  }
  for (const auto& [name, shapes] : misses) {
    if (!recorded.contains(name)) {
      fmt::print(stderr, "tiletune: {} was missed but the database has no source of it: skipped "
                 "(give its file to tune it)\n", name);
    }
  }
  return templates;
}

// "warp_tiled: 2 missed shapes for 3 problems (met 5 times): 100x200x300, 64x4096x4096"
std::string describe_misses(const std::string& name, const std::map<GemmShape, std::vector<MissedProblem>>& shapes) {
  int problems = 0, met = 0;
  std::string list;
  for (const auto& [shape, rows] : shapes) {
    problems += int(rows.size());
    for (const MissedProblem& row : rows) met += row.count;
    list += (list.empty() ? "" : ", ") + shape.to_string();
  }
  return fmt::format("{}: {} missed shape{} for {} problem{} (met {} time{}): {}", name, shapes.size(),
                     shapes.size() == 1 ? "" : "s", problems, problems == 1 ? "" : "s", met,
                     met == 1 ? "" : "s", list);
}

// A guided search cannot be split: a shard keeps the (template, shape) pairs it owns.
void keep_owned_pairs(std::vector<TuningPlan>& plans, const TuneShard& shard) {
  std::vector<TuneShard::Pair> pairs;
  for (const auto& [tmpl, shapes] : plans) {
    for (const GemmShape& shape : shapes) pairs.push_back({tmpl.name, tmpl.source_hash, shape});
  }
  const std::vector<bool> owned = shard.owned_pairs(pairs);
  std::size_t i = 0;
  for (TuningPlan& plan : plans) {
    std::erase_if(plan.shapes, [&](const GemmShape&) { return !owned[i++]; });
  }
  std::erase_if(plans, [](const TuningPlan& plan) { return plan.shapes.empty(); });
}

// The searches of a tune, per model, before it starts: its templates and shapes, settings and
// shard.
struct TunePlan {
  std::vector<TuningPlan> plans;
  TuningSettings settings;
};

TuningSettings settings_of(const TuneOptions& options) {
  TuningSettings settings;
  settings.fuzz.cases = options.cases;
  settings.fuzz.seed = options.seed;
  settings.data_seed = options.seed;
  settings.strategy_seed = options.seed;
  settings.remeasure = options.remeasure;
  settings.strategy = options.strategy;
  settings.pruning.keep_spilling = options.keep_spilling;
  settings.warm_start = !options.cold_start;
  settings.confirm_top = options.confirm_top;
  settings.op = Transposes::parse(options.op).value();  // CLI11 checked it
  settings.strided_batch = options.batch;
  try {
    const std::string& budget = options.workload.empty() ? options.budget : options.search_budget;
    if (!budget.empty()) settings.budget = SearchBudget::parse(budget);
    if (!options.shard.empty()) settings.shard = TuneShard::parse(options.shard);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return settings;
}

// With --workload, --budget is the number of shapes to tune.
std::size_t workload_budget(const TuneOptions& options) {
  std::size_t shapes = 0;
  const char* end = options.budget.data() + options.budget.size();
  const auto [rest, error] = std::from_chars(options.budget.data(), end, shapes);
  if (options.budget.empty() || error != std::errc() || rest != end) {
    throw UsageError(fmt::format("--workload needs --budget N, the number of shapes to tune{}",
                                 options.budget.empty() ? "" : fmt::format(" (not '{}')", options.budget)));
  }
  return shapes;
}

// With --workload: each template's shapes are those `plan` names for the GPU, said first. False,
// said in one line, when there is nothing to tune.
bool plan_workload_shapes(const TuneOptions& options, const std::string& gpu_name, std::vector<TuningPlan>& plans) {
  WorkloadPlanning planning;
  planning.workload_path = options.workload;
  planning.db = options.db;
  planning.gpu_name = gpu_name;
  for (const TuningPlan& plan : plans) planning.templates.push_back(plan.tmpl.name);
  planning.budget = workload_budget(options);
  const PlannedWorkload planned = plan_workload(planning);
  fmt::print(stderr, "{}", describe(planned, planning));
  std::vector<GemmShape> shapes;
  for (const runtime::PlannedShape& p : planned.plan.to_tune) shapes.push_back(p.shape);
  for (TuningPlan& plan : plans) plan.shapes = shapes;
  if (shapes.empty()) fmt::print("nothing of {} to tune on {}\n", options.workload, gpu_name);
  return !shapes.empty();
}

// The templates given at the shapes given (none yet with --missed: those come from the database),
// checked before any file is made.
TunePlan plan_tune(const TuneOptions& options, const std::vector<KernelTemplate>& given) {
  if (!options.missed && options.kernels.empty()) {
    throw UsageError("tune needs kernel template files (KERNEL.cu ...), or --missed");
  }
  for (const KernelTemplate& tmpl : given) {
    check_enumerable(tmpl);
    check_not_empty(tmpl, enumerate_configurations(tmpl));  // nothing to tune is no tune
  }
  TunePlan plan;
  plan.settings = settings_of(options);
  if (!options.workload.empty()) {
    workload_budget(options);  // checked now; the shapes are planned once the GPU is known
    for (const KernelTemplate& tmpl : given) plan.plans.push_back({tmpl, {}});
  } else if (!options.missed) {
    const std::vector<GemmShape> shapes = parse_shapes(options.shapes);
    const TunedFor kind = plan.settings.tuned_for();
    for (const GemmShape& shape : shapes) {
      if (std::string why = GemmProblem::packed(shape, kind).invalid_reason(); !why.empty()) {
        throw UsageError(fmt::format("--shape {} with {}: {}", shape.to_string(), kind.to_string(), why));
      }
    }
    // Transposes or a batch a template does not serve: said in one line each, and the others tuned.
    std::vector<std::string> unserved;
    for (const KernelTemplate& tmpl : given) {
      if (auto why = tmpl.unsupported(GemmProblem::packed(shapes.front(), kind))) {
        unserved.push_back(std::move(*why));
      } else {
        plan.plans.push_back({tmpl, shapes});
      }
    }
    if (plan.plans.empty()) {
      throw UsageError(fmt::format("no template given serves {}: nothing to tune ({})", kind.to_string(),
                                   fmt::join(unserved, "; ")));
    }
    for (const std::string& why : unserved) fmt::print(stderr, "tiletune: {}: not tuned\n", why);
  } else if (!std::filesystem::exists(options.db)) {
    throw UsageError(fmt::format("{}: no such database: no problem was missed there", options.db));
  }
  const TuneShard& shard = plan.settings.shard;
  if (!shard.whole() && is_guided_strategy(options.strategy)) keep_owned_pairs(plan.plans, shard);
  return plan;
}

// A shard's share of configurations, or of guided searches, may be empty: said in one line, with
// its database made (an empty one), so that merging every shard's file needs no exception. False
// when there is nothing to do.
bool shard_has_work(const TuneOptions& options, const TunePlan& plan) {
  const TuneShard& shard = plan.settings.shard;
  const int share = planned_total(plan.plans, plan.settings);
  if (share == 0) {
    const ResultStore store(options.db);
    fmt::print("shard {}: no work in this tune ({} strategy), nothing tuned; {} holds nothing of it\n",
               shard.to_string(), options.strategy, options.db);
    return false;
  }
  fmt::print(stderr, "shard {} of this tune: {} configurations at most, {}\n", shard.to_string(), share,
             is_guided_strategy(options.strategy) ? "its share of the template and shape pairs"
                                                  : "its share of each template's configurations");
  return true;
}

// With --missed: the plans of what was missed on the GPU (its templates, at the shapes missed).
// False, said in one line, when there is nothing to tune.
bool add_missed_plans(const TuneOptions& options, const std::vector<KernelTemplate>& given,
                      const ResultStore& store, const std::string& gpu_name, Misses& misses,
                      std::vector<TuningPlan>& plans) {
  misses = misses_of(store, gpu_name);
  for (KernelTemplate& tmpl : missed_templates(given, store, misses, gpu_name)) {
    check_enumerable(tmpl);
    std::vector<GemmShape> shapes;
    for (const auto& [shape, rows] : misses.at(tmpl.name)) shapes.push_back(shape);
    plans.push_back({std::move(tmpl), std::move(shapes)});
  }
  if (!plans.empty()) return true;
  if (misses.empty()) {
    fmt::print("nothing was missed on {} in {}: nothing to tune\n", gpu_name, options.db);
  } else {
    fmt::print("nothing missed on {} in {} can be tuned with the templates at hand\n", gpu_name,
               options.db);
  }
  return false;
}

// The plans each model tunes. A template of one GPU family's instructions (arch sm_90a) is left
// out, in one line, where no GPU of the tune is of that family, and on each model of another
// family where some are.
std::vector<std::vector<TuningPlan>> plans_per_model(std::vector<TuningPlan>& plans,
                                                     const std::vector<TuningRun*>& runs) {
  const auto runs_on = [](const TuningPlan& plan, const TuningRun& run) {
    return plan.tmpl.runs_on(run.gpu_record().arch());
  };
  std::erase_if(plans, [&](const TuningPlan& plan) {
    std::vector<std::string> archs;
    for (const TuningRun* run : runs) {
      if (runs_on(plan, *run)) return false;
      archs.push_back(run->gpu_record().arch());
    }
    fmt::print(stderr, "{}: skipped: it uses instructions of {} only, and this tune's GPUs are {}\n",
               plan.tmpl.name, plan.tmpl.feature_arch, fmt::join(archs, ", "));
    return true;
  });
  std::vector<std::vector<TuningPlan>> model_plans(runs.size());
  for (std::size_t m = 0; m < runs.size(); ++m) {
    for (const TuningPlan& plan : plans) {
      if (runs_on(plan, *runs[m])) {
        model_plans[m].push_back(plan);
      } else {
        const GpuRecord& model = runs[m]->gpu_record();
        fmt::print(stderr, "{}: skipped on {} ({}): it uses instructions of {} only\n", plan.tmpl.name,
                   model.name, model.arch(), plan.tmpl.feature_arch);
      }
    }
  }
  return model_plans;
}

// "tuning on NVIDIA H200 (sm_90, 132 SMs, ...), strategy ..., database ...", a line per model.
// Returns the devices over every model.
std::size_t print_header(const TuneOptions& options, const TuningSettings& settings,
                         const TuningSession& session, const std::vector<TuningRun*>& runs) {
  std::size_t devices = 0;
  for (std::size_t m = 0; m < runs.size(); ++m) {
    const GpuRecord& model = runs[m]->gpu_record();
    const DevicePool& pool = session.devices(m);
    devices += pool.size();
    std::string where;  // ", devices 0,1" with --devices
    for (std::size_t i = 0; options.session.devices && i < pool.size(); ++i) {
      where += fmt::format("{}{}", i ? "," : pool.size() > 1 ? ", devices " : ", device ",
                           pool.lane(i).device.ordinal);
    }
    fmt::print(stderr, "tuning on {} ({}, {} SMs, driver {}, NVRTC {}){}, {}strategy {}{}, database {}\n",
               model.name, model.arch(), model.sm_count, model.driver_version, model.nvrtc_version, where,
               settings.tuned_for().plain() ? "" : settings.tuned_for().to_string() + ", ", options.strategy,
               settings.budget ? ", budget " + settings.budget->to_string() : "", options.db);
  }
  return devices;
}

// A whole exhaustive tune on the GPU compiles each template's configurations in the background
// while the templates before it are fuzzed and timed (TuningSession::compile_ahead): those of
// the templates the database has no version of, so that resuming a tune compiles nothing extra.
void compile_ahead(TuningSession& session, const TuneOptions& options, const TuningSettings& settings,
                   const std::vector<std::vector<TuningPlan>>& model_plans, const ResultStore& store) {
  if (options.session.backend != "gpu" || settings.strategy != "exhaustive" || settings.budget ||
      !settings.shard.whole() || !settings.tuned_for().plain()) {  // ahead: plain builds only
    return;
  }
  std::set<std::string> recorded;
  for (const TemplateRecord& version : store.templates(false)) recorded.insert(version.source_hash);
  for (std::size_t m = 0; m < model_plans.size(); ++m) {
    std::vector<std::pair<KernelTemplate, std::vector<GemmShape>>> later;
    for (std::size_t i = 1; i < model_plans[m].size(); ++i) {  // the first compiles at once anyway
      const TuningPlan& plan = model_plans[m][i];
      if (!recorded.contains(plan.tmpl.source_hash)) later.emplace_back(plan.tmpl, plan.shapes);
    }
    session.compile_ahead(m, std::move(later));
  }
}

// Runs every model's searches, then re-measures across templates, with the progress bar; with
// --missed, forgets the misses of each shape tuned.
TuneOutcome run_searches(const TuneOptions& options, const TuningSettings& settings,
                         const std::vector<TuningRun*>& runs,
                         const std::vector<std::vector<TuningPlan>>& model_plans,
                         std::size_t devices, ResultStore& store) {
  const auto start = std::chrono::steady_clock::now();
  const std::string& gpu_name = runs[0]->gpu_record().name;
  int planned = 0;
  for (const std::vector<TuningPlan>& each : model_plans) planned += planned_total(each, settings);
  ProgressBar bar(planned);
  TuneOutcome outcome;
  std::map<int, int> per_device;  // configurations each device settled, for the bar
  for (std::size_t m = 0; m < runs.size(); ++m) {  // each model tunes its templates at every shape
    TuningRun* const run = runs[m];
    const std::size_t first_summary = outcome.summaries.size();  // this model's, in its plans' order
    std::vector<AcrossTemplates> across_groups = across_templates(model_plans[m]);
    for (const AcrossTemplates& across : across_groups) run->confirm_across_later(across.precision, across.shape);
    for (const auto& [tmpl, shapes] : model_plans[m]) {
      const auto on_event = [&](const TuningEvent& event) {
        if (event.stage == "tuned" && options.missed) {
          // Tuned at last, the library finds an exact record: forgotten at once, so that a tune
          // cut short keeps the misses of what it has not reached. Without a winner it stays missed.
          if (store.best(gpu_name, event.shape, event.tmpl->name, event.tmpl->precision)) {
            store.forget_misses(gpu_name, event.tmpl->name, event.shape);
            ++outcome.forgotten;
          } else {
            ++outcome.still_missed;
          }
        }
        const bool finished = event.result != nullptr;
        if (finished) {
          ++outcome.settled;
          ++outcome.counts[event.stage == "recorded earlier" ? "recorded earlier"
                                                            : to_string(event.result->status)];
          if (event.device >= 0) ++per_device[event.device];
        }
        std::string current = describe(event, devices > 1);
        if (devices > 1 && !finished) {
          current += " |";
          for (const auto& [device, count] : per_device) current += fmt::format(" [{}] {}", device, count);
        }
        bar.update(outcome.settled, current, finished);
      };
      for (TuningSummary& summary : run->tune(tmpl, shapes, on_event)) {
        for (const auto& [stage, seconds] : summary.stage_seconds) outcome.stage_seconds[stage] += seconds;
        outcome.summaries.push_back(std::move(summary));
      }
    }
    // Every template searched: at each shape, the best of each template of one precision are
    // re-measured together, so that the fastest of the precision is chosen among times taken
    // together and not minutes apart.
    for (AcrossTemplates& across : across_groups) {
      for (const std::size_t search : across.searches) {
        across.measured_new = across.measured_new || outcome.summaries.at(first_summary + search).measured_new;
      }
      bar.update(outcome.settled, fmt::format("{} {}: re-measuring the best of {} templates together",
                                              across.shape.to_string(), to_string(across.precision),
                                              across.templates.size()), false);
      across.note = run->confirm_across(across.templates, across.shape, across.measured_new);
      if (!across.note.empty()) outcome.across_notes.push_back({m, std::move(across)});
    }
  }
  bar.finish();
  outcome.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

int run(const TuneOptions& options) {
  const std::vector<KernelTemplate> given = load_templates(options.kernels);
  TunePlan plan = plan_tune(options, given);
  if (!plan.settings.shard.whole() && !shard_has_work(options, plan)) return kSuccess;

  TuningSession session(options.session, selected_devices(options.session));
  ResultStore store(options.db);
  const std::vector<TuningRun*>& runs = session.runs(store, plan.settings);
  Misses misses;
  if (options.missed) {
    if (runs.size() > 1) {
      throw UsageError("--missed tunes the misses of one GPU model: give --devices of one model");
    }
    if (!add_missed_plans(options, given, store, runs[0]->gpu_record().name, misses, plan.plans)) {
      return kSuccess;
    }
  }
  if (!options.workload.empty()) {
    if (runs.size() > 1) {
      throw UsageError("--workload plans for one GPU model's records: give --devices of one model");
    }
    if (!plan_workload_shapes(options, runs[0]->gpu_record().name, plan.plans)) return kSuccess;
  }
  const std::vector<std::vector<TuningPlan>> model_plans = plans_per_model(plan.plans, runs);
  if (plan.plans.empty()) {
    fmt::print("no template given runs on this tune's GPUs: nothing tuned\n");
    return kSuccess;
  }
  const std::size_t devices = print_header(options, plan.settings, session, runs);
  for (const auto& [tmpl, shapes] : plan.plans) {
    if (options.missed) fmt::print(stderr, "{}\n", describe_misses(tmpl.name, misses.at(tmpl.name)));
  }
  compile_ahead(session, options, plan.settings, model_plans, store);
  const TuneOutcome outcome = run_searches(options, plan.settings, runs, model_plans, devices, store);

  TuneReport report{store, session, runs, model_plans, outcome};
  report.shares_configurations =
      !plan.settings.shard.whole() && !is_guided_strategy(options.strategy);
  report.per_device = options.session.devices.has_value();
  report.missed = options.missed;
  return report_tune(report);
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<TuneOptions>();
  CLI::App* command = app.add_subcommand(
      "tune", "compile, fuzz, verify and time configurations; record the results");
  command->add_option("kernels", options->kernels, "kernel template files (.cu); optional with --missed")
      ->check(CLI::ExistingFile);
  CLI::Option* shape = command->add_option("--shape", options->shapes, "problem size MxNxK (repeatable)")
      ->capture_default_str();
  command->add_flag("--missed", options->missed,
                    "tune the shapes the runtime library missed on this GPU (recorded with "
                    "Options::record_misses), with the templates given or, without any, those recorded")
      ->excludes(shape);
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_option("--strategy", options->strategy, "how to search the space")
      ->capture_default_str()->check(CLI::IsMember(search_strategy_names()));
  command->add_option("--budget", options->budget,
                      "per template and shape: N evaluations, N% of the space, or a time (90s, 5m, 1h); "
                      "with --workload: the number of shapes to tune");
  CLI::Option* workload =
      command->add_option("--workload", options->workload,
                          "tune the --budget shapes of this workload file that 'tiletune plan' names "
                          "(a shape a line, 'MxNxK' or 'MxNxK CALLS')")
          ->check(CLI::ExistingFile)->excludes(shape)->excludes("--missed");
  command->add_option("--search-budget", options->search_budget,
                      "with --workload: what --budget is without it, per template and shape")
      ->needs(workload);
  command->add_option("--cases", options->cases, "property cases per configuration")->capture_default_str()->check(kPositive);
  command->add_option("--seed", options->seed, "seed of the property cases, the timing inputs and the strategy")->capture_default_str();
  command->add_option("--confirm", options->confirm_top, "re-measure the best N together before the winner stands (0: never)")
      ->capture_default_str()->check(kNonNegative);
  command->add_flag("--keep-spilling", options->keep_spilling, "evaluate configurations whose registers spill");
  command->add_flag("--cold-start", options->cold_start,
                    "a guided strategy starts from a spread-out sample only, not from the winners of the nearest recorded shapes");
  command->add_flag("--remeasure", options->remeasure, "evaluate again what is already recorded");
  command->add_option("--op", options->op,
                      "the transposes to tune (packed operands; nt: B stored N x K, as a linear "
                      "layer's weights): each configuration fuzzed, verified and timed in the build "
                      "that serves them, and recorded for them")
      ->capture_default_str()->check(CLI::IsMember({"nn", "nt", "tn", "tt"}))
      ->excludes("--missed")->excludes(workload);
  command->add_option("--batch", options->batch,
                      "the strided batch to tune: this many products of the shape, each entry's "
                      "operands right after the one before (attention's many small products): each "
                      "configuration fuzzed, verified and timed in the build that serves it, over "
                      "the whole batch, and recorded for it")
      ->capture_default_str()->check(kPositive)
      ->excludes("--missed")->excludes(workload);
  command->add_option("--shard", options->shard,
                      "I/N: do shard I (0 to N-1) of N of this tune, into its own --db, for 'tiletune "
                      "merge' (exhaustive, random: the configurations; guided: the template and shape "
                      "pairs; an evaluation or share --budget is the whole tune's)")
      ->excludes("--missed")->excludes(workload);
  add_session_options(*command, options->session);
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

#include "tuner/pipeline/tuning_run.h"

#include <algorithm>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "tuner/nvrtc_compiler.h"
#include "tuner/search/search_strategy.h"
#include "tuner/search_space.h"

namespace tiletune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What the tuner needs of a compile: whether it worked, NVRTC's log if not, ptxas's report if so.
// (The worker loads the cubin itself, from the disk cache.)
struct CompileVerdict {
  bool compiled = false;
  std::string log;
  PtxasReport report;
};

std::vector<CompileVerdict> compile_all(CompiledKernels& compiled, const KernelTemplate& tmpl,
                                        const std::vector<Configuration>& configs) {
  compiled.prepare(tmpl, configs);
  std::vector<CompileVerdict> verdicts(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    try {
      verdicts[i].report = compiled.get(tmpl, configs[i]).report;
      verdicts[i].compiled = true;
    } catch (const CompileError& e) {
      verdicts[i].log = e.log();
    }
  }
  return verdicts;
}

bool is_pruned(ResultStatus status) {
  return status == ResultStatus::device_limit || status == ResultStatus::pruned;
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

struct TuningRun::Search {
  Search(const KernelTemplate& t, const GemmShape& s, const std::function<void(const TuningEvent&)>& e)
      : tmpl(t), shape(s), on_event(e) {}

  const KernelTemplate& tmpl;
  GemmShape shape;
  const std::function<void(const TuningEvent&)>& on_event;
  std::vector<Configuration> space;
  std::map<std::string, ResultRecord> recorded;
  std::unique_ptr<SearchStrategy> strategy;
  std::size_t limit = 0;  // configurations to settle at most
  std::optional<Clock::time_point> deadline;
  std::map<std::string, ResultRecord> settled_ok;  // by configuration
  bool measured_new = false;
  TuningSummary summary;

  bool out_of_time() const { return deadline && Clock::now() >= *deadline; }
  void event(const Configuration* config, const std::string& stage, const ResultRecord* result = nullptr) const {
    on_event(TuningEvent{&tmpl, shape, config, summary.settled, int(limit), stage, result});
  }
};

TuningRun::TuningRun(WorkerClient& worker, ResultStore& store, CompiledKernels& compiled,
                     TuningSettings settings)
    : worker_(worker), store_(store), compiled_(compiled), settings_(std::move(settings)),
      device_(worker.device()), gpu_(make_gpu_record(device_)) {
  gpu_id_ = store_.register_gpu(gpu_);
}

ResultRecord TuningRun::record(const ResultRecord& result) {
  store_.record_result(gpu_id_, gpu_, result);
  return result;
}

void TuningRun::settle(Search& search, std::size_t index, const ResultRecord& result, bool recorded_earlier) {
  TuningSummary& summary = search.summary;
  ++summary.settled;
  if (recorded_earlier) ++summary.recorded_earlier;
  if (is_pruned(result.status)) ++summary.pruned;
  const bool ok = result.status == ResultStatus::ok;
  search.strategy->observe(index, ok ? std::optional(result.median_ms) : std::nullopt);
  if (ok) {
    search.settled_ok[result.config] = result;
    if (!summary.best || result.median_ms < summary.best->median_ms) summary.best = result;
  }
  search.event(&search.space[index], recorded_earlier ? "recorded earlier" : "done", &result);
}

ResultRecord TuningRun::evaluate_compiled(Search& search, const Configuration& config) {
  EvaluationRequest request;
  request.tmpl = {search.tmpl.name, search.tmpl.source_hash, search.tmpl.path.string(), search.tmpl.source};
  request.config = config.to_string();
  request.shape = search.shape;
  const std::string fuzz_key = search.tmpl.source_hash + ' ' + request.config;
  request.fuzz = !fuzz_passed_.contains(fuzz_key);
  request.fuzz_settings = settings_.fuzz;
  request.timing = settings_.timing;
  request.data_seed = settings_.data_seed;

  std::string stage = "start";
  Clock::time_point stage_start = Clock::now();
  const auto close_stage = [&] { search.summary.stage_seconds[stage] += seconds_since(stage_start); };
  EvaluationOutcome outcome = worker_.evaluate(request, [&](const std::string& next) {
    close_stage();
    stage = next;
    stage_start = Clock::now();
    search.event(&config, next);
  });
  close_stage();
  ++search.summary.evaluated;
  if (outcome.fuzz_passed) {
    fuzz_passed_.insert(fuzz_key);
  } else if (outcome.result.status == ResultStatus::wrong_result ||
             outcome.result.status == ResultStatus::launch_error) {
    fuzz_failed_[fuzz_key] = outcome.result;  // stands for the other shapes of this run
  }
  return outcome.result;
}

void TuningRun::evaluate_batch(Search& search, const std::vector<std::size_t>& batch) {
  std::vector<std::size_t> to_compile;
  for (std::size_t index : batch) {
    const Configuration& config = search.space[index];
    const std::string text = config.to_string();
    if (auto found = search.recorded.find(text); found != search.recorded.end()) {
      settle(search, index, found->second, true);
      continue;
    }
    if (auto failed = fuzz_failed_.find(search.tmpl.source_hash + ' ' + text); failed != fuzz_failed_.end()) {
      ResultRecord result = failed->second;
      result.shape = search.shape;
      settle(search, index, record(result), false);
      continue;
    }
    if (auto verdict = prune_before_compile(search.tmpl, config, search.shape, device_)) {
      ResultRecord result;
      result.template_name = search.tmpl.name;
      result.template_hash = search.tmpl.source_hash;
      result.config = text;
      result.shape = search.shape;
      result.status = verdict->status;
      result.detail = verdict->detail;
      settle(search, index, record(result), false);
      continue;
    }
    to_compile.push_back(index);
  }
  if (to_compile.empty()) return;

  // Compiling runs a chunk ahead of the worker: the next chunk compiles on all cores while the
  // worker evaluates this one.
  const std::size_t chunk = std::max(8u, std::thread::hardware_concurrency());
  std::vector<std::vector<Configuration>> chunks;
  for (std::size_t i = 0; i < to_compile.size(); i += chunk) {
    chunks.emplace_back();
    for (std::size_t j = i; j < std::min(to_compile.size(), i + chunk); ++j) {
      chunks.back().push_back(search.space[to_compile[j]]);
    }
  }
  search.event(&search.space[to_compile.front()], fmt::format("compiling {} configurations", to_compile.size()));
  const auto compile_chunk = [&](std::size_t c) {
    return std::async(std::launch::async, [&, c] { return compile_all(compiled_, search.tmpl, chunks[c]); });
  };
  std::future<std::vector<CompileVerdict>> next = compile_chunk(0);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const Clock::time_point wait_start = Clock::now();
    const std::vector<CompileVerdict> verdicts = next.get();
    search.summary.stage_seconds["compile"] += seconds_since(wait_start);
    if (c + 1 < chunks.size()) next = compile_chunk(c + 1);
    for (std::size_t j = 0; j < chunks[c].size(); ++j) {
      if (search.out_of_time()) return;  // `next` finishes compiling: the cache keeps it
      const std::size_t index = to_compile[c * chunk + j];
      const Configuration& config = search.space[index];
      const CompileVerdict& verdict = verdicts[j];
      ResultRecord result;
      result.template_name = search.tmpl.name;
      result.template_hash = search.tmpl.source_hash;
      result.config = config.to_string();
      result.shape = search.shape;
      if (!verdict.compiled) {
        result.status = ResultStatus::compile_error;
        result.detail = verdict.log;
      } else if (auto pruned = prune_after_compile(search.tmpl, config, search.shape, verdict.report,
                                                    device_, settings_.pruning)) {
        result.status = pruned->status;
        result.detail = pruned->detail;
        result.registers = verdict.report.registers;
        result.static_shared_bytes = verdict.report.static_shared_bytes;
        result.spill_bytes = verdict.report.spill_bytes();
      } else {
        result = evaluate_compiled(search, config);
        if (result.registers == 0) result.registers = verdict.report.registers;
        if (result.static_shared_bytes == 0) result.static_shared_bytes = verdict.report.static_shared_bytes;
        result.spill_bytes = verdict.report.spill_bytes();
        search.measured_new = true;
      }
      settle(search, index, record(result), false);
    }
  }
}

void TuningRun::confirm(Search& search) {
  if (!search.measured_new || settings_.confirm_top < 2 || settings_.confirm_rounds < 1) return;
  std::vector<ResultRecord> top;
  for (const ResultRecord& r : store_.ranking(gpu_.name, search.shape, search.tmpl.name)) {
    if (r.template_hash != search.tmpl.source_hash) continue;
    top.push_back(r);
    if (int(top.size()) == settings_.confirm_top) break;
  }
  if (top.size() < 2) return;
  search.event(nullptr, fmt::format("re-measuring the best {}", top.size()));
  RemeasureRequest request;
  request.tmpl = {search.tmpl.name, search.tmpl.source_hash, search.tmpl.path.string(), search.tmpl.source};
  for (const ResultRecord& r : top) request.configs.push_back(r.config);
  request.shape = search.shape;
  request.timing = settings_.confirm_timing;
  request.rounds = settings_.confirm_rounds;
  request.data_seed = settings_.data_seed;
  const Clock::time_point start = Clock::now();
  std::string why_not;
  const std::optional<std::vector<Timing>> timings = worker_.remeasure(request, why_not);
  search.summary.stage_seconds["confirm"] += seconds_since(start);
  if (!timings) {
    search.summary.confirm_note = "the best were not re-measured: " + why_not;
    return;
  }
  for (std::size_t i = 0; i < top.size(); ++i) {
    ResultRecord r = top[i];
    set_timing(r, (*timings)[i], search.shape);
    r.detail = fmt::format("re-measured with the best {} in {} interleaved rounds", top.size(),
                           request.rounds);
    record(r);
    if (search.settled_ok.contains(r.config)) search.settled_ok[r.config] = r;
  }
  search.summary.best.reset();
  for (const auto& [config, r] : search.settled_ok) {
    if (!search.summary.best || r.median_ms < search.summary.best->median_ms) search.summary.best = r;
  }
  search.summary.confirm_note = fmt::format("the best {} re-measured together in {} rounds", top.size(),
                                            request.rounds);
}

void TuningRun::remember_fuzzed(const KernelTemplate& tmpl) {
  if (!remembered_.insert(tmpl.source_hash).second) return;
  for (const GemmShape& shape : store_.shapes_with_results(gpu_.name, tmpl.name)) {
    for (const auto& [config, result] : store_.recorded_results(gpu_id_, tmpl.source_hash, shape)) {
      if (result.status == ResultStatus::ok) fuzz_passed_.insert(tmpl.source_hash + ' ' + config);
    }
  }
}

TuningSummary TuningRun::tune(const KernelTemplate& tmpl, const GemmShape& shape,
                              const std::function<void(const TuningEvent&)>& on_event) {
  store_.register_template({tmpl.name, tmpl.source_hash, tmpl.path.string(), tmpl.source});
  Search search(tmpl, shape, on_event);
  search.space = enumerate_configurations(tmpl, &shape);
  search.summary.space = int(search.space.size());
  if (!settings_.remeasure) search.recorded = store_.recorded_results(gpu_id_, tmpl.source_hash, shape);
  remember_fuzzed(tmpl);
  search.strategy = make_search_strategy(settings_.strategy, tmpl, search.space, settings_.strategy_seed);
  search.limit = search.space.size();
  if (settings_.budget) {
    if (auto evaluations = settings_.budget->evaluation_limit(search.space.size())) {
      search.limit = std::min(search.limit, *evaluations);
    }
    if (auto seconds = settings_.budget->time_limit()) search.deadline = Clock::now() + *seconds;
  }

  // Strategies that do not learn propose everything at once, so that compiling runs ahead of the
  // worker through the whole space; learning ones propose a batch at a time.
  const bool learns = settings_.strategy != "exhaustive" && settings_.strategy != "random";
  const std::size_t batch =
      learns ? (settings_.batch ? settings_.batch : std::max(8u, std::thread::hardware_concurrency()))
             : search.limit;
  while (std::size_t(search.summary.settled) < search.limit && !search.out_of_time()) {
    const std::vector<std::size_t> proposed =
        search.strategy->propose(std::min(batch, search.limit - std::size_t(search.summary.settled)));
    if (proposed.empty()) break;
    evaluate_batch(search, proposed);
  }
  confirm(search);
  return search.summary;
}

}  // namespace tiletune

#include "tuner/pipeline/tuning_run.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <future>
#include <mutex>
#include <random>
#include <stop_token>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "fuzz/case_generator.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/configurations.h"
#include "tuner/search/search_strategy.h"

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

// Compiles a batch's configurations in the background, on all cores and in order, while the
// tuner evaluates those compiled already. Going out of scope stops compiling what has not started
// (a time budget ran out) and waits for what has: the disk cache keeps it.
class CompileAhead {
 public:
  CompileAhead(CompiledKernels& compiled, const KernelTemplate& tmpl, std::vector<Configuration> configs)
      : configs_(std::move(configs)), verdicts_(configs_.size()) {
    task_ = std::async(std::launch::async, [this, &compiled, &tmpl] {
      try {
        compiled.prepare(tmpl, configs_, [this](std::size_t i, const CompileOutcome& outcome) {
          CompileVerdict verdict;
          verdict.compiled = outcome.image.has_value();
          if (outcome.image) verdict.report = outcome.image->report;
          else verdict.log = outcome.log;
          std::lock_guard lock(mutex_);
          verdicts_[i] = std::move(verdict);
          ready_.notify_all();
        }, stop_.get_token());
      } catch (...) {
        finish();
        throw;
      }
      finish();
    });
  }
  ~CompileAhead() {
    stop_.request_stop();
    if (task_.valid()) task_.wait();  // get() in wait() may have taken it
  }

  // Whether configs[i]'s verdict is in (or the compiling stopped), waiting at most `within`.
  bool ready(std::size_t i, std::chrono::milliseconds within) {
    std::unique_lock lock(mutex_);
    return ready_.wait_for(lock, within, [&] { return verdicts_[i].has_value() || finished_; });
  }

  // Waits for configs[i]'s verdict. Rethrows what stopped the compiling (NvrtcError).
  const CompileVerdict& wait(std::size_t i) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return verdicts_[i].has_value() || finished_; });
    if (verdicts_[i]) return *verdicts_[i];
    lock.unlock();
    task_.get();
    throw std::logic_error("the compile of " + configs_[i].to_string() + " gave no outcome");
  }

 private:
  void finish() {
    std::lock_guard lock(mutex_);
    finished_ = true;
    ready_.notify_all();
  }

  std::vector<Configuration> configs_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::optional<CompileVerdict>> verdicts_;
  bool finished_ = false;
  std::stop_source stop_;
  std::future<void> task_;
};

// Fills in what ptxas reported where the worker did not (it had no image to ask: the fuzz failed
// before, or the CPU backend).
void add_report(ResultRecord& result, const PtxasReport& report) {
  if (result.registers == 0) result.registers = report.registers;
  if (result.static_shared_bytes == 0) result.static_shared_bytes = report.static_shared_bytes;
  result.spill_bytes = report.spill_bytes();
}

// What fuzz verdicts are remembered by: the fuzz depends on the template version and the
// configuration, not on the shape.
std::string fuzz_key(const KernelTemplate& tmpl, const std::string& config) {
  return tmpl.source_hash + ' ' + config;
}

// How a re-measured result's detail starts: what says that the confirmation recorded it. The
// re-measurement across templates (confirm_across) starts its results' detail with the second,
// which begins with the first: a result it recorded counts as confirmed within its template too.
constexpr std::string_view kConfirmedDetail = "re-measured with the best ";
constexpr std::string_view kAcrossTemplatesDetail = "re-measured with the best of ";

// What a worker is sent of a template: its source travels along (the worker may have started
// after it changed).
TemplateRecord template_record(const KernelTemplate& tmpl) {
  return {tmpl.name, tmpl.source_hash, tmpl.path.string(), tmpl.source, tmpl.precision};
}

// Waits for the devices' work on a batch before the batch's search goes: drain() ends a batch
// that finishes; one that unwinds (an exception) forgets what the lanes were still delivering.
class LanesDone {
 public:
  explicit LanesDone(DevicePool& devices) : devices_(devices), unwinding_(std::uncaught_exceptions()) {}
  ~LanesDone() {
    if (std::uncaught_exceptions() > unwinding_) devices_.abandon();
  }
  LanesDone(const LanesDone&) = delete;
  LanesDone& operator=(const LanesDone&) = delete;

 private:
  DevicePool& devices_;
  int unwinding_;
};

// What a configuration's fuzz cases are drawn from besides the seed: its tile sizes
// (case_generator.h). Configurations of one family (warp_tiled's differ in SWIZZLE alone) draw the
// same cases, whose references a fuzz worker handed them one after the other computes once.
std::string case_family(const Configuration& config) {
  std::string family;
  for (const std::int64_t modulus : remainder_moduli(config)) family += fmt::format("{},", modulus);
  return family;
}

// The configurations with each family's together, in the order of the families' first.
void gather_families(std::vector<std::size_t>& indices, const std::vector<Configuration>& space) {
  std::map<std::string, std::size_t> rank;  // of each family, by its first configuration
  for (const std::size_t index : indices) rank.emplace(case_family(space[index]), rank.size());
  std::stable_sort(indices.begin(), indices.end(), [&](std::size_t a, std::size_t b) {
    return rank.at(case_family(space[a])) < rank.at(case_family(space[b]));
  });
}

bool is_pruned(ResultStatus status) {
  return status == ResultStatus::device_limit || status == ResultStatus::pruned;
}

// confirm_across_later's key of a shape and precision.
std::string across_key(Precision precision, const GemmShape& shape) {
  return fmt::format("{} {}", to_string(precision), shape.to_string());
}

}  // namespace

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
  // A result of this search with its keys filled in and nothing else.
  ResultRecord result_keys(const std::string& config) const {
    ResultRecord result;
    result.template_name = tmpl.name;
    result.template_hash = tmpl.source_hash;
    result.config = config;
    result.shape = shape;
    return result;
  }
  void event(const Configuration* config, const std::string& stage, const ResultRecord* result = nullptr,
             int device = -1) const {
    on_event(TuningEvent{&tmpl, shape, config, summary.settled, int(limit), device, stage, result});
  }
};

TuningRun::TuningRun(DevicePool& devices, ResultStore& store, CompiledKernels& compiled,
                     TuningSettings settings)
    : devices_(devices), store_(store), compiled_(compiled), settings_(std::move(settings)),
      device_(devices.lane(0).device), gpu_(make_gpu_record(device_)) {
  gpu_id_ = store_.register_gpu(gpu_);
  run_id_ = fmt::format("{:016x}", (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}());
}

ResultRecord TuningRun::record(const ResultRecord& result) {
  ResultRecord recorded = result;
  recorded.op = settings_.op;  // a failure met at another shape stands for this one as it is
  recorded.batch = settings_.strided_batch;
  store_.record_result(gpu_id_, gpu_, recorded);
  return recorded;
}

void TuningRun::settle(Search& search, std::size_t index, const ResultRecord& result, bool recorded_earlier,
                       int device) {
  TuningSummary& summary = search.summary;
  ++summary.settled;
  if (recorded_earlier) ++summary.recorded_earlier;
  if (is_pruned(result.status)) ++summary.pruned;
  const bool ok = result.status == ResultStatus::ok;
  search.strategy->observe(index, ok ? std::optional(result.median_ms) : std::nullopt);
  TraceRecord step;
  step.run_id = run_id_;
  step.template_name = search.tmpl.name;
  step.template_hash = search.tmpl.source_hash;
  step.shape = search.shape;
  step.seq = summary.settled;
  step.strategy = settings_.strategy;
  step.config = result.config;
  step.status = result.status;
  step.median_ms = ok ? result.median_ms : 0;
  step.recorded_earlier = recorded_earlier;
  store_.record_trace(gpu_id_, step);
  if (ok) {
    search.settled_ok[result.config] = result;
    if (!summary.best || result.median_ms < summary.best->median_ms) summary.best = result;
  }
  search.event(&search.space[index], recorded_earlier ? "recorded earlier" : "done", &result, device);
}

EvaluationRequest TuningRun::request_for(const Search& search, const Configuration& config) const {
  EvaluationRequest request;
  request.tmpl = template_record(search.tmpl);
  request.config = config.to_string();
  request.shape = search.shape;
  request.op = settings_.op;
  request.batch = settings_.strided_batch;
  request.fuzz = needs_fuzz(search.tmpl, request.config);
  request.fuzz_settings = settings_.fuzz;
  request.timing = settings_.timing;
  request.data_seed = settings_.data_seed;
  return request;
}

bool TuningRun::needs_fuzz(const KernelTemplate& tmpl, const std::string& config) const {
  return !fuzz_passed_.contains(fuzz_key(tmpl, config));
}

void TuningRun::note_fuzz_verdict(const Search& search, const EvaluationRequest& request,
                                  const EvaluationOutcome& outcome) {
  const std::string key = fuzz_key(search.tmpl, request.config);
  if (outcome.fuzz_passed) {
    fuzz_passed_.insert(key);
    if (request.fuzz && settings_.tuned_for().plain()) {
      store_.record_fuzz_pass(gpu_id_, search.tmpl.name, search.tmpl.source_hash, request.config,
                              request.fuzz_settings.cases);
    }
  } else if (outcome.result.status == ResultStatus::wrong_result ||
             outcome.result.status == ResultStatus::launch_error) {
    fuzz_failed_[key] = outcome.result;  // stands for the other shapes of this run
  }
}

void TuningRun::evaluate_on(DeviceLane& lane, Search& search, const std::vector<std::size_t>& indices,
                            std::vector<EvaluationRequest> requests,
                            const std::map<std::size_t, PtxasReport>& reports) {
  const int device = lane.device.ordinal;
  std::vector<bool> to_measure(indices.size(), true);
  std::vector<EvaluationRequest> to_fuzz;
  std::vector<std::size_t> fuzzed;  // the position in `indices` of each request to fuzz
  std::vector<std::string> families;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].fuzz) continue;
    to_fuzz.push_back(requests[i]);
    fuzzed.push_back(i);
    families.push_back(case_family(search.space[indices[i]]));
  }
  if (lane.fuzz_pool && !to_fuzz.empty() && !search.out_of_time()) {
    // The lane's own worker fuzzes too: it would only wait for the pool.
    const std::string doing = fmt::format("fuzzing {} configurations in {} workers", to_fuzz.size(),
                                          std::min<std::size_t>(to_fuzz.size(), lane.fuzz_pool->size() + 1));
    devices_.deliver([&search, doing, device] { search.event(nullptr, doing, nullptr, device); });
    const Clock::time_point start = Clock::now();
    std::vector<std::optional<EvaluationOutcome>> outcomes =
        lane.fuzz_pool->fuzz(to_fuzz, families, lane.worker.get());
    const double seconds = seconds_since(start);
    lane.stage_seconds["fuzz"] += seconds;
    ++lane.stage_counts["fuzz"];
    devices_.deliver([&search, seconds] { search.summary.stage_seconds["fuzz"] += seconds; });
    for (std::size_t k = 0; k < to_fuzz.size(); ++k) {
      if (!outcomes[k]) continue;  // no worker could take it: the lane's fuzzes it below
      const std::size_t i = fuzzed[k], index = indices[i];
      if (outcomes[k]->fuzz_passed) {
        requests[i].fuzz = false;
      } else {
        to_measure[i] = false;
        ++lane.settled;
      }
      devices_.deliver([this, &search, request = to_fuzz[k], outcome = std::move(*outcomes[k]), index,
                        report = reports.at(index), device] {
        note_fuzz_verdict(search, request, outcome);
        if (outcome.fuzz_passed) return;
        ++search.summary.evaluated;
        ResultRecord result = outcome.result;
        add_report(result, report);
        settle(search, index, record(result), false, device);
      });
    }
  }
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (!to_measure[i]) continue;
    if (search.out_of_time()) return;
    const std::size_t index = indices[i];
    const Configuration* config = &search.space[index];
    std::map<std::string, double> stage_seconds;
    std::string stage = "start";
    Clock::time_point stage_start = Clock::now();
    const auto close_stage = [&] { stage_seconds[stage] += seconds_since(stage_start); };
    EvaluationOutcome outcome = lane.worker->evaluate(requests[i], [&](const std::string& next) {
      close_stage();
      stage = next;
      stage_start = Clock::now();
      ++lane.stage_counts[next];
      devices_.deliver([&search, config, next, device] { search.event(config, next, nullptr, device); });
    });
    close_stage();
    ++lane.settled;
    for (const auto& [name, seconds] : stage_seconds) lane.stage_seconds[name] += seconds;
    devices_.deliver([this, &search, request = std::move(requests[i]), outcome = std::move(outcome), index,
                      report = reports.at(index), stage_seconds = std::move(stage_seconds), device] {
      for (const auto& [name, seconds] : stage_seconds) search.summary.stage_seconds[name] += seconds;
      ++search.summary.evaluated;
      note_fuzz_verdict(search, request, outcome);
      ResultRecord result = outcome.result;
      add_report(result, report);
      search.measured_new = true;
      settle(search, index, record(result), false, device);
    });
  }
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
    if (auto failed = fuzz_failed_.find(fuzz_key(search.tmpl, text)); failed != fuzz_failed_.end()) {
      ResultRecord result = failed->second;
      result.shape = search.shape;
      settle(search, index, record(result), false);
      continue;
    }
    if (auto verdict = prune_before_compile(search.tmpl, config, search.shape, device_)) {
      ResultRecord result = search.result_keys(text);
      result.status = verdict->status;
      result.detail = verdict->detail;
      settle(search, index, record(result), false);
      continue;
    }
    to_compile.push_back(index);
  }
  if (to_compile.empty()) return;
  // A learning strategy is told its outcomes in the order it proposed them; the others' families
  // go to the lanes together, to be fuzzed by one worker.
  if (!is_guided_strategy(settings_.strategy)) gather_families(to_compile, search.space);

  std::vector<Configuration> configs;
  for (const std::size_t index : to_compile) configs.push_back(search.space[index]);
  // The fuzz workers start with the first batch that has something to fuzz, beside its compiling:
  // a tune whose configurations all passed their fuzz (at other shapes, in an earlier run) starts
  // none.
  if (std::any_of(configs.begin(), configs.end(), [&](const Configuration& config) {
        return needs_fuzz(search.tmpl, config.to_string());
      })) {
    devices_.start_fuzzing();
  }
  search.event(&configs.front(), fmt::format("compiling {} configurations", configs.size()));
  // Their builds for the tune's transposes and batch: what the worker loads, and whose ptxas
  // report prunes.
  std::vector<Configuration> builds;
  const GemmProblem full = GemmProblem::packed(search.shape, settings_.tuned_for());
  for (const Configuration& config : configs) builds.push_back(search.tmpl.build_configuration(config, full));
  CompileAhead ahead(compiled_, search.tmpl, std::move(builds));

  // Groups of two configurations per fuzz worker go to whichever device is free: its pool and its
  // worker fuzz a group, then the worker measures it while the pool waits. With several
  // devices, a group is at most a device's share of what remains, so that the groups shrink
  // towards the end of the batch and the devices finish it together.
  const std::size_t fuzz_workers = devices_.fuzz_workers_per_lane();
  const std::size_t largest = fuzz_workers > 0 ? 2 * (fuzz_workers + 1) : 1;
  LanesDone lanes_done(devices_);  // the lanes' work refers to the search
  int groups_out = 0;               // dispatched, and not delivered back in full
  bool stopped = false;
  for (std::size_t begin = 0, group = 0; begin < to_compile.size() && !stopped; begin += group) {
    const std::size_t share = (to_compile.size() - begin + devices_.size() - 1) / devices_.size();
    group = std::clamp<std::size_t>(share, 1, largest);
    std::vector<std::size_t> runnable;
    std::map<std::size_t, PtxasReport> reports;
    for (std::size_t j = begin; j < std::min(to_compile.size(), begin + group); ++j) {
      stopped = search.out_of_time();
      if (stopped) break;
      const std::size_t index = to_compile[j];
      const Clock::time_point wait_start = Clock::now();
      // What the devices finish meanwhile is recorded at once.
      while (!ahead.ready(j, std::chrono::milliseconds(20))) devices_.run_delivered();
      const CompileVerdict& verdict = ahead.wait(j);
      search.summary.stage_seconds["compile"] += seconds_since(wait_start);
      ResultRecord result = search.result_keys(configs[j].to_string());
      if (!verdict.compiled) {
        result.status = ResultStatus::compile_error;
        result.detail = verdict.log;
      } else if (auto pruned = prune_after_compile(search.tmpl, configs[j], search.shape, verdict.report,
                                                    device_, settings_.pruning)) {
        result.status = pruned->status;
        result.detail = pruned->detail;
        add_report(result, verdict.report);
      } else {
        runnable.push_back(index);
        reports[index] = verdict.report;
        continue;
      }
      settle(search, index, record(result), false);
    }
    if (stopped || runnable.empty()) continue;
    std::vector<EvaluationRequest> requests;
    for (const std::size_t index : runnable) requests.push_back(request_for(search, search.space[index]));
    ++groups_out;
    devices_.dispatch([this, &search, runnable, requests = std::move(requests), reports,
                       &groups_out](DeviceLane& lane) {
      evaluate_on(lane, search, runnable, requests, reports);
      devices_.deliver([&groups_out] { --groups_out; });
    });
  }
  // The batch's groups only: a device may still re-measure the best of an earlier search.
  devices_.wait_until([&] { return groups_out == 0; });
}

RemeasureRequest TuningRun::remeasure_request(const GemmShape& shape) const {
  RemeasureRequest request;
  request.shape = shape;
  request.op = settings_.op;
  request.batch = settings_.strided_batch;
  request.timing = settings_.confirm_timing;
  request.rounds = settings_.confirm_rounds;
  request.data_seed = settings_.data_seed;
  return request;
}

void TuningRun::confirm_across_later(Precision precision, const GemmShape& shape) {
  confirmed_across_.insert(across_key(precision, shape));
}

bool TuningRun::confirm(Search& search) {
  if (settings_.confirm_top < 2 || settings_.confirm_rounds < 1) return false;
  if (confirmed_across_.contains(across_key(search.tmpl.precision, search.shape))) {
    search.summary.confirm_note = "its best re-measured with the other templates' (below)";
    return false;
  }
  std::vector<ResultRecord> top;
  int ok = 0, confirmed = 0;  // results of this version and shape: ok, and of those re-measured
  for (const ResultRecord& r : store_.ranking(gpu_.name, search.shape, search.tmpl.name, settings_.tuned_for())) {
    if (r.template_hash != search.tmpl.source_hash) continue;
    ++ok;
    if (r.detail.starts_with(kConfirmedDetail)) ++confirmed;
    if (int(top.size()) < settings_.confirm_top) top.push_back(r);
  }
  if (top.size() < 2) return false;
  // Each result the confirmation re-measures is recorded as such when it ends: fewer of them than
  // it re-measures means that it did not finish (a kill while it ran), and a resumed tune, which
  // measures nothing new, must still redo it.
  const bool completed_earlier = confirmed >= std::min(ok, settings_.confirm_top);
  if (!search.measured_new && completed_earlier) return false;
  search.event(nullptr, fmt::format("re-measuring the best {}", top.size()));
  RemeasureRequest request = remeasure_request(search.shape);
  request.templates = {template_record(search.tmpl)};
  for (const ResultRecord& r : top) request.configs.push_back({0, r.config});
  // On one device, whichever is free: with several, the next search goes on meanwhile on the
  // others (tune() waits for every confirmation before it returns).
  const Clock::time_point start = Clock::now();
  devices_.dispatch([this, &search, top, request, start](DeviceLane& lane) {
    std::string why_not;
    const Clock::time_point lane_start = Clock::now();  // `start` counts the wait for a free lane
    std::optional<std::vector<Timing>> timings = lane.worker->remeasure(request, why_not);
    const double seconds = seconds_since(start);
    lane.stage_seconds["confirm"] += seconds_since(lane_start);
    ++lane.stage_counts["confirm"];
    devices_.deliver([this, &search, top, request, timings = std::move(timings), why_not, seconds] {
      search.summary.stage_seconds["confirm"] += seconds;
      record_confirmation(search, top, request, timings, why_not);
    });
  });
  if (devices_.size() == 1) devices_.drain();
  return true;
}

void TuningRun::record_confirmation(Search& search, const std::vector<ResultRecord>& top,
                                    const RemeasureRequest& request,
                                    const std::optional<std::vector<Timing>>& timings,
                                    const std::string& why_not) {
  if (!timings) {
    search.summary.confirm_note = "the best were not re-measured: " + why_not;
    search.event(nullptr, "tuned");
    return;
  }
  for (std::size_t i = 0; i < top.size(); ++i) {
    ResultRecord r = top[i];
    set_timing(r, (*timings)[i], search.shape);
    r.detail = fmt::format("{}{} in {} interleaved rounds", kConfirmedDetail, top.size(), request.rounds);
    record(r);
    if (search.settled_ok.contains(r.config)) search.settled_ok[r.config] = r;
  }
  search.summary.best.reset();
  for (const auto& [config, r] : search.settled_ok) {
    if (!search.summary.best || r.median_ms < search.summary.best->median_ms) search.summary.best = r;
  }
  search.summary.confirm_note = fmt::format("the best {} re-measured together in {} rounds", top.size(),
                                            request.rounds);
  search.event(nullptr, "tuned");
}

std::string TuningRun::confirm_across(const std::vector<const KernelTemplate*>& templates,
                                      const GemmShape& shape, bool measured_new) {
  if (settings_.confirm_top < 1 || settings_.confirm_rounds < 1) return "";
  RemeasureRequest request = remeasure_request(shape);
  std::vector<ResultRecord> top;
  // As in confirm(): each result it re-measures is recorded as such when it ends, so a template
  // with fewer of them than it re-measures was not (a kill while it ran, or a later tune of that
  // template alone, whose own re-measurement wrote its results again).
  bool completed_earlier = true;
  for (const KernelTemplate* tmpl : templates) {
    int ok = 0, remeasured = 0;
    for (const ResultRecord& r : store_.ranking(gpu_.name, shape, tmpl->name, settings_.tuned_for())) {
      if (r.template_hash != tmpl->source_hash) continue;
      if (ok == 0) request.templates.push_back(template_record(*tmpl));
      if (++ok <= settings_.confirm_top) {
        request.configs.push_back({request.templates.size() - 1, r.config});
        top.push_back(r);
      }
      if (r.detail.starts_with(kAcrossTemplatesDetail)) ++remeasured;
    }
    completed_earlier = completed_earlier && remeasured >= std::min(ok, settings_.confirm_top);
  }
  const bool alone_deferred = request.templates.size() == 1 && top.size() >= 2 &&
                              confirmed_across_.contains(across_key(templates.front()->precision, shape));
  if (request.templates.size() < 2 && !alone_deferred) return "";
  if (!measured_new && completed_earlier) return "";
  std::optional<std::vector<Timing>> timings;
  std::string why_not;
  devices_.dispatch([&](DeviceLane& lane) {
    const Clock::time_point start = Clock::now();
    std::string lane_why_not;
    std::optional<std::vector<Timing>> lane_timings = lane.worker->remeasure(request, lane_why_not);
    lane.stage_seconds["confirm"] += seconds_since(start);
    ++lane.stage_counts["confirm"];
    devices_.deliver([&, lane_timings = std::move(lane_timings), lane_why_not] {
      timings = lane_timings;
      why_not = lane_why_not;
    });
  });
  devices_.drain();  // the timings are delivered by now
  const std::string what = fmt::format("the best {} of {} templates ({} each at most)", top.size(),
                                       request.templates.size(), settings_.confirm_top);
  if (!timings) return what + " were not re-measured together: " + why_not;
  for (std::size_t i = 0; i < top.size(); ++i) {
    ResultRecord r = top[i];
    set_timing(r, (*timings)[i], shape);
    r.detail = fmt::format("{}{} templates ({} each at most) together in {} interleaved rounds",
                           kAcrossTemplatesDetail, request.templates.size(), settings_.confirm_top,
                           request.rounds);
    record(r);
  }
  return fmt::format("{} re-measured together in {} rounds", what, request.rounds);
}

void TuningRun::remember_fuzzed(const KernelTemplate& tmpl) {
  // The database's passes are of the plain build: another build is fuzzed in this run.
  if (!settings_.tuned_for().plain() || !remembered_.insert(tmpl.source_hash).second) return;
  for (const auto& [config, cases] : store_.fuzz_passes(gpu_id_, tmpl.source_hash)) {
    if (cases >= settings_.fuzz.cases) fuzz_passed_.insert(fuzz_key(tmpl, config));
  }
}

TuningSummary TuningRun::tune(const KernelTemplate& tmpl, const GemmShape& shape,
                              const std::function<void(const TuningEvent&)>& on_event) {
  return std::move(tune(tmpl, std::vector<GemmShape>{shape}, on_event).front());
}

std::vector<TuningSummary> TuningRun::tune(const KernelTemplate& tmpl, const std::vector<GemmShape>& shapes,
                                           const std::function<void(const TuningEvent&)>& on_event) {
  store_.register_template({tmpl.name, tmpl.source_hash, tmpl.path.string(), tmpl.source, tmpl.precision});
  std::vector<std::unique_ptr<Search>> searches;
  LanesDone lanes_done(devices_);  // the confirmations still running refer to their searches
  for (const GemmShape& shape : shapes) {
    searches.push_back(std::make_unique<Search>(tmpl, shape, on_event));
    run_search(*searches.back());
    searches.back()->summary.measured_new = searches.back()->measured_new;
    if (!confirm(*searches.back())) searches.back()->event(nullptr, "tuned");
  }
  devices_.drain();
  std::vector<TuningSummary> summaries;
  for (const auto& search : searches) summaries.push_back(search->summary);
  return summaries;
}

PlannedSearch plan_search(const KernelTemplate& tmpl, const std::vector<Configuration>& space,
                          const TuningSettings& settings,
                          const std::vector<std::size_t>& starting_points) {
  PlannedSearch planned{make_search_strategy(settings.strategy, tmpl, space, settings.strategy_seed,
                                             starting_points),
                        space.size()};
  if (settings.budget) {
    if (auto evaluations = settings.budget->evaluation_limit(space.size())) {
      planned.limit = std::min(planned.limit, *evaluations);
    }
  }
  // A guided search cannot be split: its shard owns whole (template, shape) pairs instead.
  if (!is_guided_strategy(settings.strategy) && !settings.shard.whole()) {
    planned.strategy = settings.shard.cut(std::move(planned.strategy), planned.limit,
                                          tmpl.source_hash, space);
  }
  return planned;
}

void TuningRun::run_search(Search& search) {
  const KernelTemplate& tmpl = search.tmpl;
  const GemmShape& shape = search.shape;
  search.space = enumerate_configurations(tmpl, &shape, settings_.tuned_for());
  search.summary.space = int(search.space.size());
  if (!settings_.remeasure) {
    search.recorded = store_.recorded_results(gpu_id_, tmpl.source_hash, shape, settings_.tuned_for());
  }
  remember_fuzzed(tmpl);
  // Strategies that do not learn propose everything at once, so that compiling runs ahead of the
  // worker through the whole space; learning ones propose a batch at a time, the first one warm
  // started from what was recorded at other shapes.
  const bool learns = is_guided_strategy(settings_.strategy);
  if (learns && settings_.warm_start) {
    search.summary.warm_start =
        recorded_warm_start(store_, gpu_.name, tmpl.name, shape, search.space, settings_.tuned_for());
  }
  PlannedSearch planned =
      plan_search(tmpl, search.space, settings_, search.summary.warm_start.points);
  search.strategy = std::move(planned.strategy);
  search.limit = planned.limit;
  if (settings_.budget) {
    if (auto seconds = settings_.budget->time_limit()) search.deadline = Clock::now() + *seconds;
  }

  const std::size_t batch =
      learns ? (settings_.batch ? settings_.batch : std::max(8u, std::thread::hardware_concurrency()))
             : search.limit;
  while (std::size_t(search.summary.settled) < search.limit && !search.out_of_time()) {
    const std::vector<std::size_t> proposed =
        search.strategy->propose(std::min(batch, search.limit - std::size_t(search.summary.settled)));
    if (proposed.empty()) break;
    evaluate_batch(search, proposed);
  }
}

}  // namespace tiletune

// The tuning pipeline for the devices of one model: for every template and shape, a search
// strategy proposes configurations, and each goes through
//   prune (geometry) -> compile (NVRTC, in parallel, cached on disk) -> prune (ptxas report)
//   -> fuzz (in a device's fuzz pool, several configurations at once)
//   -> verify at the full shape and time (in that device's worker, one at a time) -> record,
// every outcome written to the database as soon as it is known. Compiling runs ahead of the rest
// through the whole batch; the compiled configurations go by groups to whichever device is free
// (device_pool.h), where fuzzing and timing take turns, so that no fuzz runs on a GPU while it
// times a configuration. An interrupted tune resumes where it stopped: recorded
// outcomes are replayed to the strategy instead of being measured again. When the search is done,
// the best few are re-measured together before the winner stands (with several devices, on one of
// them while the others search the next shape). Once every template of a tune has been searched
// at a shape, the best few of each template of one precision are re-measured together
// (confirm_across): the winners of different templates were timed minutes apart, and a GPU's
// clocks drift more than the gaps between them.
//
// A configuration is compiled once (the disk cache keeps it across runs) and fuzzed once per GPU,
// however many shapes it is tuned for: neither depends on the shape.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "fuzz/property_runner.h"
#include "tuner/core/kernel_template.h"
#include "tuner/backend/gpu/compiled_kernels.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/kernel_timer.h"
#include "tuner/pipeline/device_pool.h"
#include "tuner/pipeline/pruning.h"
#include "tuner/pipeline/recorded_warm_start.h"
#include "tuner/search/search_budget.h"
#include "tuner/search/search_strategy.h"
#include "tuner/search/tune_shard.h"

namespace tiletune {

inline FuzzSettings default_fuzz_settings() {
  FuzzSettings settings;
  settings.cases = 30;  // per configuration while tuning; `tiletune fuzz` runs 100 by default
  return settings;
}

// Each configuration is timed briefly while tuning: enough runs for a median that ranks it, at a
// few milliseconds per configuration and shape. The noise that remains (1-2%) is settled by
// timing the best few again, together and at length (default_confirm_timing).
inline TimingSettings default_tuning_timing() {
  TimingSettings timing;
  timing.warmup_runs = 2;
  timing.min_runs = 5;
  timing.max_runs = 50;
  timing.target_seconds = 0.02;
  return timing;
}

// One round of a best-few configuration's re-measurement (there are confirm_rounds of them).
inline TimingSettings default_confirm_timing() {
  TimingSettings timing;
  timing.warmup_runs = 2;
  timing.min_runs = 10;
  timing.max_runs = 100;
  timing.target_seconds = 0.05;
  return timing;
}

struct TuningSettings {
  FuzzSettings fuzz = default_fuzz_settings();
  TimingSettings timing = default_tuning_timing();
  std::uint64_t data_seed = 1;
  bool remeasure = false;  // re-evaluate configurations that already have a result
  std::string strategy = "exhaustive";
  std::uint64_t strategy_seed = 1;
  std::optional<SearchBudget> budget;  // per template and shape; none: the whole space
  PruningPolicy pruning;
  // The best `confirm_top` of a template and shape are re-measured together in `confirm_rounds`
  // interleaved rounds after a search that measured anything new (0: not at all).
  int confirm_top = 5;
  int confirm_rounds = 5;
  TimingSettings confirm_timing = default_confirm_timing();
  unsigned batch = 0;  // configurations a guided strategy proposes at once; 0: max(8, cores)
  // A guided strategy's first batch starts with the winners of the nearest shapes recorded for
  // the template on this GPU (recorded_warm_start.h); false: a spread-out sample only.
  bool warm_start = true;
  // This process's share of the tune (tune_shard.h): an exhaustive or random search settles only
  // the configurations it owns; the (template, shape) pairs of a guided one are chosen by the caller.
  TuneShard shard;
  // The transposes tuned (packed operands): every configuration is fuzzed, verified and timed in
  // the build that serves them, and recorded with them. Other transposes than nn fuzz each
  // configuration once per run: the fuzz passes the database keeps are of the plain build.
  Transposes op;
  // The strided batch tuned (entries packed one after another), 1: one product. Like op: each
  // configuration fuzzed, verified and timed in the build that serves it, and recorded for it.
  std::int64_t strided_batch = 1;
  TunedFor tuned_for() const { return {op, strided_batch}; }
};

// A template x shape search before it starts: its strategy over `space`, and how many
// configurations it settles at most (the space, cut to the budget's evaluation limit and, for a
// shard that shares out configurations, to the shard's share). The one place that sizes a search:
// TuningRun runs it, and the command line sizes its progress and a shard's share with it.
struct PlannedSearch {
  std::unique_ptr<SearchStrategy> strategy;
  std::size_t limit = 0;
};
PlannedSearch plan_search(const KernelTemplate& tmpl, const std::vector<Configuration>& space,
                          const TuningSettings& settings,
                          const std::vector<std::size_t>& starting_points = {});

// One step of a tune as it happens, for the progress display.
struct TuningEvent {
  const KernelTemplate* tmpl = nullptr;
  GemmShape shape;
  const Configuration* config = nullptr;  // null for events about the whole search
  int done = 0;   // configurations settled in this template x shape search
  int total = 0;  // how many it will settle at most (the budget, or the space)
  int device = -1;  // the ordinal of the device the step happened on; -1: none (the tuner's own)
  // "compile", "fuzz", "verify", "time", "done", "recorded earlier", "confirm"; "tuned" once the
  // search and the re-measurement of its best are recorded
  std::string stage;
  const ResultRecord* result = nullptr;  // set when stage is "done"
};

// What one template x shape search did, and where its time went.
struct TuningSummary {
  int space = 0;            // configurations of the template valid for the shape
  int settled = 0;          // proposed by the strategy and given an outcome
  int recorded_earlier = 0; // of those, outcomes already in the database
  int evaluated = 0;        // sent to the worker
  int pruned = 0;           // device_limit or pruned without running
  std::map<std::string, double> stage_seconds;  // "compile", "fuzz", "verify", "time", ...
  std::optional<ResultRecord> best;  // the fastest ok configuration this search settled
  std::string confirm_note;          // how the re-measurement went ("" when none ran)
  bool measured_new = false;         // it timed something (not all recorded earlier)
  WarmStart warm_start;              // what a guided search started from (empty: a cold start)
};

class TuningRun {
 public:
  // The devices are of one model, which is recorded; `compiled` compiles (in parallel, through the
  // disk cache) for it. A device without a fuzz pool fuzzes in its worker, one at a time.
  TuningRun(DevicePool& devices, ResultStore& store, CompiledKernels& compiled, TuningSettings settings);

  TuningSummary tune(const KernelTemplate& tmpl, const GemmShape& shape,
                     const std::function<void(const TuningEvent&)>& on_event);
  // The shapes one after another. With several devices, the best few of a shape are re-measured
  // on one of them while the others search the next shape (whose guided warm start may then read
  // the first times of the shape before). Each shape's end is an event, "tuned".
  std::vector<TuningSummary> tune(const KernelTemplate& tmpl, const std::vector<GemmShape>& shapes,
                                  const std::function<void(const TuningEvent&)>& on_event);

  // The tune will re-measure the best of the templates of `precision` at `shape` together
  // (confirm_across): their searches there skip their own re-measurement, which that one repeats
  // with more configurations beside them.
  void confirm_across_later(Precision precision, const GemmShape& shape);

  // After every template of one precision has been searched at `shape` (by tune()): the best
  // confirm_top of each, re-measured together in confirm_rounds interleaved rounds on one device,
  // and recorded, so that the fastest of the precision at the shape is chosen among times taken
  // together. Nothing to do (""), unless two templates or more have an ok result (or one, whose
  // search left its re-measurement to this: confirm_across_later) and any search measured
  // something new (`measured_new`) or an earlier re-measurement did not finish.
  // Returns how it went, for the summary.
  std::string confirm_across(const std::vector<const KernelTemplate*>& templates, const GemmShape& shape,
                             bool measured_new);

  const GpuRecord& gpu_record() const { return gpu_; }
  const DeviceProperties& device() const { return device_; }

 private:
  struct Search;  // one template x shape search in progress
  void settle(Search& search, std::size_t index, const ResultRecord& result, bool recorded_earlier,
              int device = -1);
  void evaluate_batch(Search& search, const std::vector<std::size_t>& batch);
  // On a lane's thread: fuzzes on its pool those of `indices` whose verdict is not known yet, then
  // verifies and times the others in its worker, delivering each outcome to be settled.
  void evaluate_on(DeviceLane& lane, Search& search, const std::vector<std::size_t>& indices,
                   std::vector<EvaluationRequest> requests,
                   const std::map<std::size_t, PtxasReport>& reports);
  // Searches the space for the search's shape, up to its budget.
  void run_search(Search& search);
  // Re-measures the best few of the search together, on one device, then records them
  // (record_confirmation): at once with one device, in the background with several. False when
  // there is nothing to re-measure.
  bool confirm(Search& search);
  void record_confirmation(Search& search, const std::vector<ResultRecord>& top,
                           const RemeasureRequest& request,
                           const std::optional<std::vector<Timing>>& timings, const std::string& why_not);
  EvaluationRequest request_for(const Search& search, const Configuration& config) const;
  // A re-measurement at `shape` with this run's confirmation settings, its configurations to add.
  RemeasureRequest remeasure_request(const GemmShape& shape) const;
  // Whether `config` of `tmpl` still needs its fuzz: it has not passed one in this run or earlier.
  bool needs_fuzz(const KernelTemplate& tmpl, const std::string& config) const;
  // Remembers a fuzz's verdict for the other shapes; a pass made now is recorded for later runs.
  void note_fuzz_verdict(const Search& search, const EvaluationRequest& request,
                         const EvaluationOutcome& outcome);
  ResultRecord record(const ResultRecord& result);
  // A configuration that passed its fuzz on this GPU (which does not depend on the shape) with at
  // least as many cases as this run asks for is not fuzzed again, in this run or another.
  void remember_fuzzed(const KernelTemplate& tmpl);

  DevicePool& devices_;
  ResultStore& store_;
  CompiledKernels& compiled_;
  TuningSettings settings_;
  DeviceProperties device_;
  GpuRecord gpu_;
  std::int64_t gpu_id_ = 0;
  std::string run_id_;  // this process's search traces (16 random hex digits)
  // A configuration's fuzz verdict from its first evaluation in this run: passed, or the failed
  // result (its status and detail stand for every shape).
  std::set<std::string> fuzz_passed_;
  std::map<std::string, ResultRecord> fuzz_failed_;
  std::set<std::string> remembered_;  // template versions whose earlier fuzz verdicts are read
  // "PRECISION MxNxK" of confirm_across_later: shapes whose searches leave their re-measurement
  // to confirm_across.
  std::set<std::string> confirmed_across_;
};

}  // namespace tiletune

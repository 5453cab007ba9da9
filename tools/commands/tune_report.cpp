#include "tools/commands/tune_report.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tuner/pipeline/recorded_warm_start.h"

namespace tiletune::cli {
namespace {

// "device 0 by stage: fuzz 3.1 s, load 2.0 s, reference 0.4 s (2 computed), time 7.0 s; its 8 fuzz
// workers: load 5.2 s, fuzz 20.3 s": where one device's time went, its fuzz workers' summed.
std::string describe_stages(const DeviceLane& lane) {
  std::string line = fmt::format("device {} by stage:", lane.device.ordinal);
  std::string separator = " ";
  for (const auto& [stage, seconds] : lane.stage_seconds) {
    line += fmt::format("{}{} {:.1f} s", separator, stage, seconds);
    if (stage == "reference") line += fmt::format(" ({} computed)", lane.stage_counts.at(stage));
    separator = ", ";
  }
  if (lane.stage_seconds.empty()) line += " none";
  if (!lane.fuzz_pool) return line;
  line += fmt::format("; its {} fuzz workers:", lane.fuzz_pool->size());
  separator = " ";
  for (const auto& [stage, seconds] : lane.fuzz_pool->stage_seconds()) {
    line += fmt::format("{}{} {:.1f} s", separator, stage, seconds);
    separator = ", ";
  }
  return line;
}

// The winner of each template and shape this tune searched, with the best recorded there.
// Returns how many template and shape pairs have no correct configuration (a finding).
int print_winners(const TuneReport& r) {
  fmt::print("\n{:<18} {:<12} {:>7} {:<44} {:>10} {:>8}  {}\n", "shape", "template", "settled",
             "best configuration (this search)", "median ms", "TFLOP/s", "best recorded");
  std::size_t i = 0;
  int without_winner = 0;
  for (std::size_t m = 0; m < r.runs.size(); ++m) {
    const TuningRun* const run = r.runs[m];
    if (r.runs.size() > 1) fmt::print("{}:\n", run->gpu_record().name);
    for (const auto& [tmpl, shapes] : r.model_plans[m]) {
      for (const GemmShape& shape : shapes) {
        const TuningSummary& summary = r.outcome.summaries[i++];
        const auto recorded = r.store.best(run->gpu_record().name, shape, tmpl.name, tmpl.precision);
        const std::string overall = recorded ? fmt::format("{:.2f} TFLOP/s", recorded->tflops) : "none";
        const std::string settled = fmt::format("{}/{}", summary.settled, summary.space);
        if (summary.best) {
          fmt::print("{:<18} {:<12} {:>7} {:<44} {:>10.4f} {:>8.2f}  {}\n", shape.to_string(), tmpl.name,
                     settled, summary.best->config, summary.best->median_ms, summary.best->tflops, overall);
        } else {
          // Nothing correct among what it settled, or no configuration for the shape at all; a
          // budget that ran out before anything settled proves nothing either way, nor does a
          // shard's share of the configurations (the other shards' may hold the winner). A template
          // that offers nothing at the shape (its requirements or tuning limits leave it out) is no
          // finding where the shape has a winner of its precision: the tune's other templates
          // answer there.
          const bool answered_by_others =
              summary.space == 0 && r.store.best(run->gpu_record().name, shape, std::nullopt, tmpl.precision);
          if (((summary.settled > 0 && !r.shares_configurations) || summary.space == 0) && !answered_by_others) {
            ++without_winner;
          }
          fmt::print("{:<18} {:<12} {:>7} {:<44} {:>10} {:>8}  {}\n", shape.to_string(), tmpl.name,
                     settled,
                     answered_by_others ? "(none for the shape; other templates answer)"
                     : r.shares_configurations && summary.space > 0 ? "(no correct one in this shard)"
                                                                  : "(no correct configuration)",
                     "", "", overall);
        }
        if (!summary.warm_start.points.empty()) {
          fmt::print("{:>40}warm start: {}\n", "", describe(summary.warm_start));
        }
        if (!summary.confirm_note.empty()) fmt::print("{:>40}{}\n", "", summary.confirm_note);
      }
    }
  }
  return without_winner;
}

// The fastest of each precision and shape after the re-measurement across templates.
void print_across_templates(const TuneReport& r) {
  if (!r.outcome.across_notes.empty()) fmt::print("\nacross templates (the fastest of each precision and shape):\n");
  for (const auto& [m, across] : r.outcome.across_notes) {
    const std::string& gpu_name = r.runs[m]->gpu_record().name;
    const auto best = r.store.best(gpu_name, across.shape, std::nullopt, across.precision);
    fmt::print("{:<18} {:<7} {}\n", across.shape.to_string(), to_string(across.precision),
               best ? fmt::format("{} {} {:.4f} ms {:.2f} TFLOP/s", best->template_name, best->config,
                                  best->median_ms, best->tflops)
                    : std::string("none"));
    fmt::print("{:>27}{}{}\n", "", r.runs.size() > 1 ? gpu_name + ": " : "", across.note);
  }
}

// With --devices: what each device settled and how long it was busy.
void print_device_table(const TuneReport& r) {
  if (r.per_device) {
    fmt::print("\n{:<8} {:<32} {:>8} {:>8}\n", "device", "GPU", "settled", "busy s");
    for (std::size_t m = 0; m < r.runs.size(); ++m) {
      const DevicePool& pool = r.session.devices(m);
      for (std::size_t d = 0; d < pool.size(); ++d) {
        const DeviceLane& lane = pool.lane(d);
        fmt::print("{:<8} {:<32} {:>8} {:>8.1f}\n", lane.device.ordinal, lane.device.name, lane.settled,
                   lane.busy_seconds);
      }
    }
  }
}

// What was settled, how fast, where the time went (per device with --devices), and the misses.
void print_totals(const TuneReport& r) {
  std::string outcome;
  for (const auto& [status, count] : r.outcome.counts) outcome += fmt::format("{} {}, ", count, status);
  if (!outcome.empty()) outcome.resize(outcome.size() - 2);
  fmt::print("\nsettled: {}\n", outcome.empty() ? "none" : outcome);
  std::string split;
  for (const auto& [stage, seconds] : r.outcome.stage_seconds) split += fmt::format("{} {:.1f} s, ", stage, seconds);
  if (!split.empty()) split.resize(split.size() - 2);
  const CompileStatistics compiles = r.session.compile_statistics();
  fmt::print("wall {:.1f} s, {:.1f} configurations/s; compiled {} (NVRTC busy {:.1f} s), {} from the "
             "cache; workers started {} ({} fuzz workers)\n",
             r.outcome.wall_seconds, r.outcome.settled / std::max(r.outcome.wall_seconds, 1e-9), compiles.compiled, compiles.compile_seconds,
             compiles.from_cache, r.session.workers_started(), r.session.fuzz_workers());
  fmt::print("time by stage: {}\n", split.empty() ? "none" : split);
  if (r.per_device) {
    for (std::size_t m = 0; m < r.runs.size(); ++m) {
      const DevicePool& pool = r.session.devices(m);
      for (std::size_t d = 0; d < pool.size(); ++d) fmt::print("{}\n", describe_stages(pool.lane(d)));
    }
  }
  if (r.missed) {
    fmt::print("missed shapes: {} tuned (their misses forgotten), {} still without a correct "
               "configuration\n", r.outcome.forgotten, r.outcome.still_missed);
  }
}

}  // namespace

int report_tune(const TuneReport& r) {
  const int without_winner = print_winners(r);
  print_across_templates(r);
  print_device_table(r);
  print_totals(r);
  if (without_winner > 0) {
    fmt::print(stderr, "tiletune: {} of {} template and shape pairs have no correct configuration\n",
               without_winner, r.outcome.summaries.size());
    return kFindings;
  }
  return kSuccess;
}

}  // namespace tiletune::cli

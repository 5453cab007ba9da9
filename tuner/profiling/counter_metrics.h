// The hardware counters tiletune records, by its own short names: what `tiletune profile` stores
// (the counters table), the labs check and the report shows. One table, so that they all agree.
//
// A counter is one Nsight Compute metric, scaled; or, for the shared-memory wavefronts, a sum over the kernel's SASS instructions of the Source Counters section's
// per-instruction values (L1 Wavefronts Shared, ... Ideal, ... Excessive), by kind of instruction:
// loads, stores, and asynchronous copies (LDGSTS), whose shared-memory side is a store too. The
// ideal is per instruction, from the addresses it touched, so a broadcast (lanes reading one
// address) is ideal; no aggregate metric gives that (bytes / 128 counts a broadcast's bytes once
// per lane, which made a conflict-free float4 broadcast look 3x excessive on an H100). The
// excessive wavefronts are 0 without address conflicts and count them exactly, unlike the
// hardware bank-conflict counter (l1tex__data_bank_conflicts_*), which also counts arbitration
// lost to other clients (about 500 to 2,000 on conflict-free kernels on an H200).
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace tiletune {

struct CounterMetric {
  const char* name;         // ours: "shared_ld_excessive_wavefronts"
  const char* ncu_metric;   // what ncu reads ("smsp__sass_....sum"), or a per-instruction sum
                            // ("source_counters:shared_ld_wavefronts", nsight_compute.h)
  const char* unit;         // "wavefronts", "bytes", "%", ...
  const char* meaning;      // one line for the reader
  double scale = 1;         // the value is ncu_metric / scale
};

// Every counter, in the order tables show them.
std::span<const CounterMetric> counter_metrics();
// The counter of that short name; nullptr when there is none.
const CounterMetric* find_counter_metric(const std::string& name);

// The prefix of per-instruction sums among ncu metric names: NsightCompute::profile runs the
// Source Counters section for them and sums its per-instruction table.
inline constexpr const char* kSourceCounterPrefix = "source_counters:";
bool is_source_counter(const std::string& ncu_metric);

// The ncu metrics the given counters need (each once, in table order).
std::vector<std::string> ncu_metrics_of(std::span<const CounterMetric> counters);
// Our counters' values from one launch's ncu metrics: a counter whose metrics are not all there is
// left out.
std::map<std::string, double> counter_values(const std::map<std::string, double>& ncu_values);
// The counters (short names, table order) that need one of the ncu metrics named.
std::vector<std::string> counters_needing(const std::set<std::string>& ncu_metrics);

}  // namespace tiletune

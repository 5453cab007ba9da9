// The hardware counters tiletune records, by its own short names: what `tiletune profile` stores
// (the counters table), the labs check and the report shows. One table, so that they all agree.
//
// A counter is one Nsight Compute metric, scaled, or the difference of two. The excessive
// shared-memory wavefronts of the Source Counters section are wavefronts minus ideal wavefronts
// (derived__memory_l1_wavefronts_shared_excessive), whose ideal part is a source-level metric the
// raw page cannot give; the ideal is the bytes the instructions need over the 128 bytes one
// wavefront carries (sm__sass_data_bytes_mem_shared_op_ld / 128). The wavefronts are the SASS
// instructions' (smsp__sass_*): l1tex__data_pipe_lsu_wavefronts_* also counts the hardware's
// replays, which on an H100 equalled its bank-conflict counter (7 to 204 on conflict-free code).
// Unlike the hardware bank-conflict counter (l1tex__data_bank_conflicts_*), which also counts
// arbitration lost to other clients (about 500 to 2,000 on conflict-free kernels on an H200),
// the excessive wavefronts are 0 without address conflicts and count them exactly.
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace tiletune {

struct CounterMetric {
  const char* name;         // ours: "shared_ld_excessive_wavefronts"
  const char* ncu_metric;   // what ncu reads ("smsp__sass_....sum")
  const char* minus = "";   // when not empty: the value is ncu_metric minus this metric
  const char* unit;         // "wavefronts", "bytes", "%", ...
  const char* meaning;      // one line for the reader
  double scale = 1;         // the value is ncu_metric / scale ...
  double minus_scale = 1;   // ... minus `minus` / minus_scale
};

// Every counter, in the order tables show them.
std::span<const CounterMetric> counter_metrics();
// The counter of that short name; nullptr when there is none.
const CounterMetric* find_counter_metric(const std::string& name);

// The ncu metrics the given counters need (each once, in table order).
std::vector<std::string> ncu_metrics_of(std::span<const CounterMetric> counters);
// Our counters' values from one launch's ncu metrics: a counter whose metrics are not all there is
// left out.
std::map<std::string, double> counter_values(const std::map<std::string, double>& ncu_values);
// The counters (short names, table order) that need one of the ncu metrics named.
std::vector<std::string> counters_needing(const std::set<std::string>& ncu_metrics);

}  // namespace tiletune

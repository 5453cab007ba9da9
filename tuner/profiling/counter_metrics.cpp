#include "tuner/profiling/counter_metrics.h"

#include <algorithm>
#include <array>

namespace tiletune {
namespace {

constexpr std::array<CounterMetric, 24> kCounters{{
    {"shared_ld_wavefronts", "source_counters:shared_ld_wavefronts", "wavefronts",
     "shared-memory load wavefronts (LDS, LDSM, LD: one per pass a warp's load needs)"},
    {"shared_ld_ideal_wavefronts", "source_counters:shared_ld_ideal_wavefronts", "wavefronts",
     "the load wavefronts the same addresses need without bank conflicts"},
    {"shared_ld_excessive_wavefronts", "source_counters:shared_ld_excessive_wavefronts",
     "wavefronts", "load wavefronts beyond the ideal: bank conflicts, counted exactly (0 without)"},
    {"shared_st_wavefronts", "source_counters:shared_st_wavefronts", "wavefronts",
     "shared-memory store wavefronts (STS, STSM, ST)"},
    {"shared_st_ideal_wavefronts", "source_counters:shared_st_ideal_wavefronts", "wavefronts",
     "the store wavefronts the same addresses need without bank conflicts"},
    {"shared_st_excessive_wavefronts", "source_counters:shared_st_excessive_wavefronts",
     "wavefronts", "store wavefronts beyond the ideal: bank conflicts, counted exactly"},
    {"shared_copy_wavefronts", "source_counters:shared_copy_wavefronts", "wavefronts",
     "shared-memory wavefronts of asynchronous copies from global memory (LDGSTS, cp.async)"},
    {"shared_copy_ideal_wavefronts", "source_counters:shared_copy_ideal_wavefronts",
     "wavefronts", "the copies' wavefronts without bank conflicts"},
    {"shared_copy_excessive_wavefronts", "source_counters:shared_copy_excessive_wavefronts",
     "wavefronts", "the copies' wavefronts beyond the ideal: their bank conflicts"},
    {"shared_ld_bank_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
     "conflicts", "hardware bank-conflict counter of loads (also counts lost arbitration)"},
    {"shared_st_bank_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
     "conflicts", "hardware bank-conflict counter of stores (also counts lost arbitration)"},
    {"global_ld_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "requests",
     "global load requests (one per warp-wide load instruction)"},
    {"global_ld_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sectors",
     "32-byte sectors global loads touched"},
    {"global_st_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "requests",
     "global store requests"},
    {"global_st_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sectors",
     "32-byte sectors global stores touched"},
    {"local_ld_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "sectors",
     "local-memory load sectors: register spills read back (0 without spills)"},
    {"local_st_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "sectors",
     "local-memory store sectors: register spills written"},
    {"dram_read_bytes", "dram__bytes_read.sum", "bytes", "bytes read from device memory"},
    {"dram_write_bytes", "dram__bytes_write.sum", "bytes", "bytes written to device memory"},
    {"achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", "%",
     "achieved occupancy: active warps in % of the SM's maximum"},
    {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%",
     "SM throughput in % of peak"},
    {"memory_throughput_pct", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
     "%", "memory throughput in % of peak (the busiest of DRAM, L2, L1)"},
    {"registers", "launch__registers_per_thread", "registers", "registers per thread"},
    {"duration_ns", "gpu__time_duration.sum", "ns",
     "kernel time under the profiler (caches flushed before each pass)"},
}};

}  // namespace

std::span<const CounterMetric> counter_metrics() { return kCounters; }

const CounterMetric* find_counter_metric(const std::string& name) {
  for (const CounterMetric& counter : kCounters) {
    if (name == counter.name) return &counter;
  }
  return nullptr;
}

std::vector<std::string> ncu_metrics_of(std::span<const CounterMetric> counters) {
  std::vector<std::string> metrics;
  auto add = [&](const std::string& metric) {
    if (!metric.empty() && std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
      metrics.push_back(metric);
    }
  };
  for (const CounterMetric& counter : counters) add(counter.ncu_metric);
  return metrics;
}

std::map<std::string, double> counter_values(const std::map<std::string, double>& ncu_values) {
  std::map<std::string, double> values;
  for (const CounterMetric& counter : kCounters) {
    const auto value = ncu_values.find(counter.ncu_metric);
    if (value == ncu_values.end()) continue;
    values[counter.name] = value->second / counter.scale;
  }
  return values;
}

bool is_source_counter(const std::string& ncu_metric) {
  return ncu_metric.rfind(kSourceCounterPrefix, 0) == 0;
}

std::vector<std::string> counters_needing(const std::set<std::string>& ncu_metrics) {
  std::vector<std::string> names;
  for (const CounterMetric& counter : kCounters) {
    if (ncu_metrics.contains(counter.ncu_metric)) {
      names.push_back(counter.name);
    }
  }
  return names;
}

}  // namespace tiletune

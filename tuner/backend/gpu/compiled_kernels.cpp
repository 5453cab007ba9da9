#include "tuner/backend/gpu/compiled_kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

namespace tiletune {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

CompiledKernels::CompiledKernels(std::string arch, unsigned threads, std::optional<CubinCache> cache)
    : arch_(std::move(arch)),
      threads_(threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency())),
      cache_(std::move(cache)) {}

std::string CompiledKernels::memory_key(const KernelTemplate& tmpl, const Configuration& config) {
  return tmpl.source_hash + ' ' + config.to_string();
}

CompileOutcome CompiledKernels::compile(const KernelTemplate& tmpl,
                                        const Configuration& config) const {
  CompileOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    outcome.image = compile_configuration(tmpl, config, arch_);
  } catch (const CompileError& e) {
    outcome.error = e.what();
    outcome.log = e.log();
  }
  outcome.compile_seconds = seconds_since(start);
  return outcome;
}

void CompiledKernels::store(const KernelTemplate& tmpl, const CubinKey& key,
                            const CompileOutcome& outcome) {
  if (!cache_) return;
  // A compile whose log holds no ptxas report (NVRTC's own cache served it: nvrtc_options turns
  // that cache off) would keep the empty report for good: leave the entry to one that has it.
  if (outcome.image &&
      outcome.image->log.find("Compiling entry function '" + tmpl.entry + "'") == std::string::npos) {
    return;
  }
  cache_->store(key, outcome);
}

void CompiledKernels::prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs,
                              const OutcomeCallback& on_outcome, std::stop_token stop) {
  // What is neither in memory nor on disk, each once; a repeated configuration is told with the
  // first when that is known.
  std::vector<std::size_t> missing;  // positions in configs
  std::vector<std::optional<CubinKey>> missing_keys;
  std::map<std::string, std::size_t> first_position;
  std::vector<std::size_t> repeats;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    std::string key = memory_key(tmpl, configs[i]);
    if (!first_position.emplace(key, i).second) {
      repeats.push_back(i);
      continue;
    }
    if (auto known = outcomes_.find(key); known != outcomes_.end()) {
      if (on_outcome) on_outcome(i, known->second);
      continue;
    }
    std::optional<CubinKey> disk_key;
    if (cache_) {
      disk_key = CubinKey::of(tmpl, configs[i], arch_);
      if (std::optional<CompileOutcome> cached = cache_->load(*disk_key)) {
        const CompileOutcome& kept = outcomes_.emplace(std::move(key), std::move(*cached)).first->second;
        ++statistics_.from_cache;
        if (on_outcome) on_outcome(i, kept);
        continue;
      }
    }
    missing.push_back(i);
    missing_keys.push_back(std::move(disk_key));
  }

  // Each outcome goes to the disk cache as soon as it is known, so that an interrupted prepare
  // keeps what it compiled; threads take the configurations in order, so the first are first done.
  std::vector<std::optional<CompileOutcome>> compiled(missing.size());
  std::vector<std::exception_ptr> failures(missing.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < missing.size() && !stop.stop_requested(); i = next++) {
      try {
        compiled[i] = compile(tmpl, configs[missing[i]]);
        if (missing_keys[i]) store(tmpl, *missing_keys[i], *compiled[i]);
        if (on_outcome) on_outcome(missing[i], *compiled[i]);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  if (!missing.empty()) {
    const auto start = std::chrono::steady_clock::now();
    {
      std::vector<std::jthread> workers;
      const std::size_t count = std::min<std::size_t>(threads_, missing.size());
      for (std::size_t t = 0; t < count; ++t) workers.emplace_back(work);
    }
    statistics_.compile_seconds += seconds_since(start);
  }
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (!compiled[i]) continue;  // stopped before its turn
    ++statistics_.compiled;
    outcomes_.emplace(memory_key(tmpl, configs[missing[i]]), std::move(*compiled[i]));
  }
  for (const std::size_t i : repeats) {
    auto known = outcomes_.find(memory_key(tmpl, configs[i]));
    if (on_outcome && known != outcomes_.end()) on_outcome(i, known->second);
  }
}

const CompiledKernelImage& CompiledKernels::get(const KernelTemplate& tmpl,
                                                const Configuration& config) {
  const std::string key = memory_key(tmpl, config);
  auto found = outcomes_.find(key);
  if (found == outcomes_.end()) {
    std::optional<CubinKey> disk_key;
    std::optional<CompileOutcome> outcome;
    if (cache_) {
      disk_key = CubinKey::of(tmpl, config, arch_);
      outcome = cache_->load(*disk_key);
      if (outcome) ++statistics_.from_cache;
    }
    if (!outcome) {
      const auto start = std::chrono::steady_clock::now();
      outcome = compile(tmpl, config);
      statistics_.compile_seconds += seconds_since(start);
      ++statistics_.compiled;
      if (disk_key) store(tmpl, *disk_key, *outcome);
    }
    found = outcomes_.emplace(key, std::move(*outcome)).first;
  }
  const CompileOutcome& outcome = found->second;
  if (!outcome.image) throw CompileError(outcome.error, outcome.log);
  return *outcome.image;
}

}  // namespace tiletune

#include "tuner/pipeline/compiled_kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <set>
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
  try {
    outcome.image = compile_configuration(tmpl, config, arch_);
  } catch (const CompileError& e) {
    outcome.error = e.what();
    outcome.log = e.log();
  }
  return outcome;
}

void CompiledKernels::store(const KernelTemplate& tmpl, const CubinKey& key,
                            const CompileOutcome& outcome) {
  if (!cache_) return;
  // Where NVRTC served the compile from its own cache (12.9+ with a CUDA driver), ptxas did not
  // run and the log holds no report: keeping that would keep the empty report for good, so leave
  // the entry to a compile that has one.
  if (outcome.image &&
      outcome.image->log.find("Compiling entry function '" + tmpl.entry + "'") == std::string::npos) {
    return;
  }
  cache_->store(key, outcome);
}

void CompiledKernels::prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) {
  // What is neither in memory nor on disk, each once.
  std::vector<const Configuration*> missing;
  std::vector<std::optional<CubinKey>> missing_keys;
  std::set<std::string> seen;
  for (const Configuration& config : configs) {
    std::string key = memory_key(tmpl, config);
    if (outcomes_.contains(key) || !seen.insert(key).second) continue;
    std::optional<CubinKey> disk_key;
    if (cache_) {
      disk_key = CubinKey::of(tmpl, config, arch_);
      if (std::optional<CompileOutcome> cached = cache_->load(*disk_key)) {
        outcomes_.emplace(std::move(key), std::move(*cached));
        ++statistics_.from_cache;
        continue;
      }
    }
    missing.push_back(&config);
    missing_keys.push_back(std::move(disk_key));
  }
  if (missing.empty()) return;

  // Each outcome goes to the disk cache as soon as it is known, so that an interrupted prepare
  // keeps what it compiled.
  const auto start = std::chrono::steady_clock::now();
  std::vector<CompileOutcome> compiled(missing.size());
  std::vector<std::exception_ptr> failures(missing.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < missing.size(); i = next++) {
      try {
        compiled[i] = compile(tmpl, *missing[i]);
        if (missing_keys[i]) store(tmpl, *missing_keys[i], compiled[i]);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  {
    std::vector<std::jthread> workers;
    const std::size_t count = std::min<std::size_t>(threads_, missing.size());
    for (std::size_t t = 0; t < count; ++t) workers.emplace_back(work);
  }
  statistics_.compile_seconds += seconds_since(start);
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  statistics_.compiled += static_cast<int>(missing.size());
  for (std::size_t i = 0; i < missing.size(); ++i) {
    outcomes_.emplace(memory_key(tmpl, *missing[i]), std::move(compiled[i]));
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

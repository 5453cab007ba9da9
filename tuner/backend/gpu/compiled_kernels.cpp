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

CompileOutcome CompiledKernels::compile(const KernelTemplate& tmpl, const Configuration& config) {
  {
    std::lock_guard lock(mutex_);
    if (compiling_++ == 0) compiling_since_ = std::chrono::steady_clock::now();
  }
  CompileOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    outcome.image = compile_configuration(tmpl, config, arch_);
  } catch (const CompileError& e) {
    outcome.error = e.what();
    outcome.log = e.log();
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (--compiling_ == 0) statistics_.compile_seconds += seconds_since(compiling_since_);
    throw;
  }
  outcome.compile_seconds = seconds_since(start);
  std::lock_guard lock(mutex_);
  ++statistics_.compiled;
  if (--compiling_ == 0) statistics_.compile_seconds += seconds_since(compiling_since_);
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

const CompileOutcome* CompiledKernels::settle(const KernelTemplate& tmpl, const Configuration& config,
                                              bool wait) {
  const std::string key = memory_key(tmpl, config);
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (auto known = outcomes_.find(key); known != outcomes_.end()) return &known->second;
      if (!in_flight_.contains(key)) break;
      if (!wait) return nullptr;
      settled_.wait(lock);
    }
    in_flight_.insert(key);
  }
  try {
    std::optional<CubinKey> disk_key;
    std::optional<CompileOutcome> outcome;
    if (cache_) {
      disk_key = CubinKey::of(tmpl, config, arch_);
      outcome = cache_->load(*disk_key);
    }
    const bool from_disk = outcome.has_value();
    if (!outcome) {
      outcome = compile(tmpl, config);
      if (disk_key) store(tmpl, *disk_key, *outcome);  // at once: an interrupted run keeps it
    }
    std::lock_guard lock(mutex_);
    if (from_disk) ++statistics_.from_cache;
    const CompileOutcome& kept = outcomes_.emplace(key, std::move(*outcome)).first->second;
    in_flight_.erase(key);
    settled_.notify_all();
    return &kept;
  } catch (...) {
    std::lock_guard lock(mutex_);
    in_flight_.erase(key);  // a waiter takes it over
    settled_.notify_all();
    throw;
  }
}

void CompiledKernels::prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs,
                              const OutcomeCallback& on_outcome, std::stop_token stop,
                              unsigned threads) {
  // Each configuration once; a repeated one is told with the first once that is known.
  std::vector<std::size_t> unique;  // positions in configs
  std::map<std::string, std::size_t> first_position;
  std::vector<std::pair<std::size_t, std::size_t>> repeats;  // (position, its first's)
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const auto [first, added] = first_position.emplace(configs[i].to_string(), i);
    if (added) unique.push_back(i);
    else repeats.emplace_back(i, first->second);
  }
  std::vector<const CompileOutcome*> settled(configs.size(), nullptr);
  const auto tell = [&](std::size_t i, const CompileOutcome* outcome) {
    settled[i] = outcome;
    if (on_outcome) on_outcome(i, *outcome);
  };

  // Threads take the configurations in order, so the first are first done. One that another
  // prepare is compiling when it is reached is put aside: told once that prepare has settled it
  // (each thread looks after each of its own), waited for once nothing else is left, and
  // compiled here if that prepare gave it up.
  std::atomic<std::size_t> next{0};
  std::mutex aside_mutex;  // guards aside and failures
  std::vector<std::size_t> aside;
  std::vector<std::exception_ptr> failures;
  const auto settle_aside = [&](bool wait) {
    std::vector<std::size_t> mine, still;
    {
      std::lock_guard lock(aside_mutex);
      mine.swap(aside);
    }
    for (const std::size_t i : mine) {
      const CompileOutcome* outcome = stop.stop_requested() ? nullptr : settle(tmpl, configs[i], wait);
      if (outcome) tell(i, outcome);
      else still.push_back(i);
    }
    std::lock_guard lock(aside_mutex);
    aside.insert(aside.end(), still.begin(), still.end());
  };
  const auto work = [&] {
    try {
      for (std::size_t n = next++; n < unique.size() && !stop.stop_requested(); n = next++) {
        const std::size_t i = unique[n];
        if (const CompileOutcome* outcome = settle(tmpl, configs[i], false)) {
          tell(i, outcome);
        } else {
          std::lock_guard lock(aside_mutex);
          aside.push_back(i);
        }
        settle_aside(false);
      }
      settle_aside(true);
    } catch (...) {
      std::lock_guard lock(aside_mutex);
      failures.push_back(std::current_exception());
    }
  };
  {
    std::vector<std::jthread> workers;
    const std::size_t count = std::min<std::size_t>(threads ? threads : threads_, unique.size());
    for (std::size_t t = 0; t < count; ++t) workers.emplace_back(work);
  }
  if (!failures.empty()) std::rethrow_exception(failures.front());
  for (const auto& [i, first] : repeats) {
    if (settled[first]) tell(i, settled[first]);
  }
}

const CompiledKernelImage& CompiledKernels::get(const KernelTemplate& tmpl,
                                                const Configuration& config) {
  const CompileOutcome& outcome = *settle(tmpl, config, true);
  if (!outcome.image) throw CompileError(outcome.error, outcome.log);
  return *outcome.image;
}

CompileStatistics CompiledKernels::statistics() const {
  std::lock_guard lock(mutex_);
  CompileStatistics now = statistics_;
  if (compiling_ > 0) now.compile_seconds += seconds_since(compiling_since_);
  return now;
}

}  // namespace tiletune

#include "tuner/runtime/miss_log.h"

#include <cstdio>
#include <random>
#include <exception>
#include <string_view>

#include <fmt/format.h>

namespace tiletune::runtime {

MissLog::MissLog(const std::filesystem::path& path)
    : path_(path),
      store_(path),
      run_id_(fmt::format("{:016x}", (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}())) {}

void MissLog::record(const std::string& gpu, const std::string& tmpl,
                     const GemmProblem& problem) noexcept {
  try {
    std::lock_guard lock(mutex_);
    const Key key{gpu, tmpl, problem.shape.m, problem.shape.n, problem.shape.k,
                  problem.lda, problem.ldb, problem.ldc};
    // Once tried, never again: a failed write is not retried on every later call.
    if (!recorded_.insert(key).second) return;
    try {
      store_.record_miss(gpu, tmpl, problem);
    } catch (const std::exception& error) {
      warn("the missed problem " + problem.to_string(), tmpl, gpu, error);
    }
  } catch (...) {
    // Out of memory while keeping the key or formatting the warning: the miss is dropped.
  }
}

void MissLog::warn(const std::string& what, const std::string& tmpl, const std::string& gpu,
                   const std::exception& error) {
  if (warned_) return;
  warned_ = true;
  // A DatabaseError's message starts with the path, which the warning names already.
  std::string_view cause = error.what();
  const std::string prefix = path_.string() + ": ";
  if (cause.starts_with(prefix)) cause.remove_prefix(prefix.size());
  std::fprintf(stderr, "tiletune: cannot record %s of %s on %s in %s: %.*s\n", what.c_str(), tmpl.c_str(),
               gpu.c_str(), path_.c_str(), int(cause.size()), cause.data());
}

void MissLog::record_trial(const GpuRecord& gpu, const TemplateRecord& tmpl, const GemmShape& shape,
                           const std::vector<std::pair<std::string, double>>& times) noexcept {
  try {
    std::lock_guard lock(mutex_);
    try {
      for (const TemplateRecord& current : store_.templates(true)) {
        if (current.name == tmpl.name && current.source_hash != tmpl.source_hash) return;
      }
      const std::int64_t gpu_id = store_.register_gpu(gpu);
      store_.register_template(tmpl);
      int& seq = trial_steps_[{gpu.name, tmpl.source_hash, shape}];
      for (const auto& [config, ms] : times) {
        TraceRecord step;
        step.run_id = run_id_;
        step.gpu_name = gpu.name;
        step.template_name = tmpl.name;
        step.template_hash = tmpl.source_hash;
        step.shape = shape;
        step.seq = ++seq;
        step.strategy = kTrialStrategy;
        step.config = config;
        step.median_ms = ms;
        store_.record_trace(gpu_id, step);
      }
    } catch (const std::exception& error) {
      warn("the first-call trial at " + shape.to_string(), tmpl.name, gpu.name, error);
    }
  } catch (...) {
  }
}

MissLog::EarlierTrials MissLog::earlier_trials() {
  std::lock_guard lock(mutex_);
  EarlierTrials trials;
  for (const TraceRecord& step : store_.search_traces()) {
    if (step.strategy != kTrialStrategy || step.status != ResultStatus::ok || !(step.median_ms > 0)) continue;
    EarlierTrial& trial = trials[{step.gpu_name, step.template_hash, step.shape}];
    ++trial.timed;
    if (trial.config.empty() || step.median_ms < trial.median_ms) {
      trial.config = step.config;
      trial.median_ms = step.median_ms;
    }
  }
  return trials;
}

}  // namespace tiletune::runtime

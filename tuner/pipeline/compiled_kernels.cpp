#include "tuner/pipeline/compiled_kernels.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace tiletune {

CompiledKernels::CompiledKernels(std::string arch, unsigned threads)
    : arch_(std::move(arch)),
      threads_(threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency())) {}

std::string CompiledKernels::key(const KernelTemplate& tmpl, const Configuration& config) {
  return tmpl.source_hash + ' ' + config.to_string();
}

CompiledKernels::Outcome CompiledKernels::compile(const KernelTemplate& tmpl,
                                                  const Configuration& config) const {
  Outcome outcome;
  try {
    outcome.image = compile_configuration(tmpl, config, arch_);
  } catch (const CompileError& e) {
    outcome.error = e.what();
    outcome.log = e.log();
  }
  return outcome;
}

void CompiledKernels::prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) {
  std::vector<const Configuration*> missing;
  for (const Configuration& config : configs) {
    if (!outcomes_.contains(key(tmpl, config))) missing.push_back(&config);
  }
  std::vector<Outcome> compiled(missing.size());
  std::vector<std::exception_ptr> failures(missing.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < missing.size(); i = next++) {
      try {
        compiled[i] = compile(tmpl, *missing[i]);
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
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  for (std::size_t i = 0; i < missing.size(); ++i) {
    outcomes_.emplace(key(tmpl, *missing[i]), std::move(compiled[i]));
  }
}

const CompiledKernelImage& CompiledKernels::get(const KernelTemplate& tmpl,
                                                const Configuration& config) {
  auto found = outcomes_.find(key(tmpl, config));
  if (found == outcomes_.end()) found = outcomes_.emplace(key(tmpl, config), compile(tmpl, config)).first;
  const Outcome& outcome = found->second;
  if (!outcome.image) throw CompileError(outcome.error, outcome.log);
  return *outcome.image;
}

}  // namespace tiletune

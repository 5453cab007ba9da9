#include "tuner/runtime/miss_log.h"

#include <cstdio>
#include <exception>
#include <string_view>

namespace tiletune::runtime {

MissLog::MissLog(const std::filesystem::path& path) : path_(path), store_(path) {}

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
      if (warned_) return;
      warned_ = true;
      // A DatabaseError's message starts with the path, which the warning names already.
      std::string_view cause = error.what();
      const std::string prefix = path_.string() + ": ";
      if (cause.starts_with(prefix)) cause.remove_prefix(prefix.size());
      std::fprintf(stderr, "tiletune: cannot record the missed problem %s of %s on %s in %s: %.*s\n",
                   problem.to_string().c_str(), tmpl.c_str(), gpu.c_str(), path_.c_str(),
                   int(cause.size()), cause.data());
    }
  } catch (...) {
    // Out of memory while keeping the key or formatting the warning: the miss is dropped.
  }
}

}  // namespace tiletune::runtime

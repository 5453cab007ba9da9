// Where the runtime library keeps the problems it had no exact record for (Options::record_misses):
// a tiletune database's missed_problems table, which `tiletune tune --missed` tunes later.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "db/result_store.h"
#include "tuner/core/gemm_shape.h"

namespace tiletune::runtime {

class MissLog {
 public:
  // Opens the database read-write, creating or migrating it. Throws DatabaseError naming the path
  // and the cause when it cannot.
  explicit MissLog(const std::filesystem::path& path);

  // Records a problem missed on a GPU (by name) for a template (by name), once per MissLog. Safe
  // from any thread. Never throws: a miss that cannot be written costs the application nothing
  // but one warning line on stderr, the first time; later failures are silent.
  void record(const std::string& gpu, const std::string& tmpl, const GemmProblem& problem) noexcept;

 private:
  using Key = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, std::int64_t>;

  std::filesystem::path path_;
  std::mutex mutex_;  // guards everything below: one SQLite connection, one writer at a time
  ResultStore store_;
  std::set<Key> recorded_;
  bool warned_ = false;
};

}  // namespace tiletune::runtime

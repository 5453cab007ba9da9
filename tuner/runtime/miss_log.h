// Where the runtime library keeps the problems it had no exact record for (Options::record_misses):
// a tiletune database's missed_problems table, which `tiletune tune --missed` tunes later; and the
// first-call trials' times at them (Options::trial_candidates), which the next process serves from.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <mutex>
#include <map>
#include <set>
#include <utility>
#include <vector>
#include <string>
#include <tuple>

#include "db/result_store.h"
#include "tuner/core/records.h"
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

  // A first-call trial's times at a shape, (configuration, median ms) in the order timed: the
  // search_trace table's rows of strategy "trial" (one per candidate, this process's run id), for
  // `tune --missed` and the next process. Left unrecorded where the database's current version of
  // the template is another (registering this one would change which is current). Never throws,
  // as record.
  void record_trial(const GpuRecord& gpu, const TemplateRecord& tmpl, const GemmShape& shape,
                    const std::vector<std::pair<std::string, double>>& times) noexcept;

  // The fastest configuration each earlier trial timed, by GPU name, template version and shape.
  struct EarlierTrial {
    std::string config;
    double median_ms = 0;
    int timed = 0;
  };
  using EarlierTrials = std::map<std::tuple<std::string, std::string, GemmShape>, EarlierTrial>;
  EarlierTrials earlier_trials();

 private:
  using Key = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, std::int64_t>;

  // Says the first failure to record, once; later ones are silent.
  void warn(const std::string& what, const std::string& tmpl, const std::string& gpu, const std::exception& error);

  std::filesystem::path path_;
  std::mutex mutex_;  // guards everything below: one SQLite connection, one writer at a time
  ResultStore store_;
  std::set<Key> recorded_;
  bool warned_ = false;
  std::string run_id_;                                            // this process's trials
  std::map<std::tuple<std::string, std::string, GemmShape>, int> trial_steps_;  // seq so far
};

}  // namespace tiletune::runtime

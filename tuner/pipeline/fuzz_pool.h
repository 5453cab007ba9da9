// Fuzzing several configurations at once, each in a worker process of its own.
//
// A configuration's fuzz is mostly host work (cases drawn, guard bands poisoned, operands copied,
// the double-precision oracle), which one worker does one configuration at a time while the GPU
// waits. The pool runs that many workers side by side, each with its own CUDA context, so a crash,
// a hang or a lost context still costs only the configuration that caused it (worker_client.h).
// Timing stays with the tuner's own worker and never overlaps a fuzz: the tuner fuzzes a group of
// configurations here, then measures the ones that passed.
//
// Each worker is started and restarted by a thread of the pool that lives as long as the pool: a
// worker dies with the thread that started it (PR_SET_PDEATHSIG), not only with the tuner.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tuner/pipeline/worker_client.h"

namespace tiletune {

class FuzzPool {
 public:
  // `argv` starts one worker (`tiletune worker ...`); `workers` >= 1 of them run at once.
  FuzzPool(std::vector<std::string> argv, std::chrono::milliseconds watchdog, unsigned workers);
  ~FuzzPool();  // stops the threads and their workers
  FuzzPool(const FuzzPool&) = delete;
  FuzzPool& operator=(const FuzzPool&) = delete;

  // Fuzzes every request (each is sent with `measure` false) on the pool's workers; the outcomes
  // come back in the requests' order. An outcome is empty when no worker of the pool could start
  // (another CUDA context refused, say): the caller fuzzes that configuration itself. Rethrows
  // what WorkerClient::evaluate throws for the environment. `families`, when given, names each
  // request's family: requests side by side of one family go to one worker, one after the other,
  // up to its share of the round (configurations that draw the same fuzz cases, whose references
  // it keeps: reference_cache.h).
  std::vector<std::optional<EvaluationOutcome>> fuzz(const std::vector<EvaluationRequest>& requests,
                                                     const std::vector<std::string>& families = {});

  unsigned size() const { return unsigned(slots_.size()); }
  int workers_started() const;
  // Seconds its workers spent in each stage of their evaluations ("load", "fuzz", ...), summed
  // over the workers.
  std::map<std::string, double> stage_seconds() const;
  // Why the workers could not start, once they could not ("" while they can).
  std::string unavailable() const;

 private:
  struct Slot {
    std::unique_ptr<WorkerClient> client;
    std::thread thread;
  };
  void serve(Slot& slot);

  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  bool stopping_ = false;
  // The round in progress: requests handed out in order, outcomes filled as they come.
  const std::vector<EvaluationRequest>* requests_ = nullptr;
  const std::vector<std::string>* families_ = nullptr;
  std::vector<std::optional<EvaluationOutcome>> outcomes_;
  std::size_t next_ = 0, finished_ = 0;
  std::exception_ptr failure_;
  std::string unavailable_;
  std::map<std::string, double> stage_seconds_;
};

}  // namespace tiletune

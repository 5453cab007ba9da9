// Fuzzing several configurations at once, each in a worker process of its own.
//
// A configuration's fuzz is mostly host work (cases drawn, guard bands poisoned, operands copied,
// the double-precision oracle), which one worker does one configuration at a time while the GPU
// waits. The pool runs that many workers side by side, each with its own CUDA context, so a crash,
// a hang or a lost context still costs only the configuration that caused it (worker_client.h).
// Timing stays with the tuner's own worker and never overlaps a fuzz: the tuner fuzzes a group of
// configurations here, then measures the ones that passed.
//
// The workers start as the pool is made, side by side with compiling: creating a CUDA context is
// serialized by the driver (about 0.2 s each on an H100 host, so 32 workers on 4 GPUs take 7 s),
// and a round only hands requests to workers that have started. The caller's own worker (the
// lane's evaluation worker, idle while its group is fuzzed) takes requests too, so a round never
// waits for a worker to start.
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
  // `argv` starts one worker (`tiletune worker ...`); `workers` >= 1 of them run at once. They
  // start now, each on its pool thread.
  FuzzPool(std::vector<std::string> argv, std::chrono::milliseconds watchdog, unsigned workers);
  ~FuzzPool();  // stops the threads and their workers
  FuzzPool(const FuzzPool&) = delete;
  FuzzPool& operator=(const FuzzPool&) = delete;

  // Fuzzes every request (each is sent with `measure` false) on the pool's started workers and on
  // `helper`, the caller's own worker, when given (on the calling thread); the outcomes come back
  // in the requests' order. An outcome is empty when no worker could take it: the pool's could
  // not start or restart (another CUDA context refused, say) and there is no helper; the caller
  // fuzzes that configuration itself. Rethrows what WorkerClient::evaluate throws for the
  // environment. `families`, when given, names each request's family: requests side by side of one
  // family go to one worker, one after the other, up to its share of the round (configurations
  // that draw the same fuzz cases, whose references it keeps: reference_cache.h).
  std::vector<std::optional<EvaluationOutcome>> fuzz(const std::vector<EvaluationRequest>& requests,
                                                     const std::vector<std::string>& families = {},
                                                     WorkerClient* helper = nullptr);

  unsigned size() const { return unsigned(slots_.size()); }
  int workers_started() const;  // processes started, restarts included; not the helper's
  // Seconds its workers spent in each stage of their evaluations ("load", "fuzz", ...) and in
  // starting ("start"), summed over the workers; the helper's evaluations included.
  std::map<std::string, double> stage_seconds() const;
  // Why a worker could not start, once one could not ("" while they can).
  std::string unavailable() const;

 private:
  struct Slot {
    std::unique_ptr<WorkerClient> client;
    std::thread thread;
    int started = 0;  // the client's count, copied under the mutex
  };
  void serve(Slot& slot);
  // The next requests for one worker, [index, end), or false when the round has none left; with
  // the mutex held.
  bool take(std::size_t& index, std::size_t& end);
  // Fuzzes requests [index, end) on `client`; `lock` is held on entry and exit and released while
  // they run. False when the client's worker could not start: the rest of the range is handed
  // back empty and the worker leaves the pool.
  bool fuzz_range(WorkerClient& client, std::size_t index, std::size_t end,
                  std::unique_lock<std::mutex>& lock);
  // A worker cannot start (`why`): said once; with the mutex held.
  void note_unavailable(const std::string& why);
  // With the mutex held: no worker of the pool serves, or will.
  bool none_can_serve() const { return starting_ == 0 && serving_ == 0; }

  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  bool stopping_ = false;
  // The round in progress: requests handed out in order, outcomes filled as they come.
  const std::vector<EvaluationRequest>* requests_ = nullptr;
  const std::vector<std::string>* families_ = nullptr;
  std::vector<std::optional<EvaluationOutcome>> outcomes_;
  std::size_t next_ = 0, finished_ = 0;
  std::size_t round_workers_ = 1;  // the pool's workers and the round's helper
  unsigned starting_ = 0, serving_ = 0;  // workers still starting, and started and serving
  std::exception_ptr failure_;
  std::string unavailable_;
  std::map<std::string, double> stage_seconds_;
};

}  // namespace tiletune

// The devices of one model (one GPU identity in the database) that a tune evaluates on, side by
// side. Each has a lane: an evaluation worker that verifies and times, and a fuzz pool, all started
// with the lane's worker command (`tiletune worker --device N`), so that their CUDA contexts sit
// on that device alone. The fuzz pools start when the tune first has something to fuzz
// (start_fuzzing), so a tune that has nothing to fuzz (resumed, or of configurations fuzzed at
// other shapes) creates no context beyond the evaluation workers'. The tuner dispatches groups
// of configurations to whichever lane is free; a lane fuzzes its group on its own pool and
// worker, then times the ones that passed on its worker, so no fuzz runs on a GPU while that GPU
// times (two GPUs timing at once do not disturb each other).
//
// Each lane has a thread of its own that starts and restarts its worker (a worker dies with the
// thread that started it): a crash, a hang or a lost context costs only its configuration on its
// device, and restarts only that device's worker. What a lane finds is handed back (deliver) to
// the dispatching thread, which alone touches the tune's state: the database, the strategy, the
// progress display.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tuner/pipeline/fuzz_pool.h"
#include "tuner/pipeline/worker_client.h"

namespace tiletune {

// One device's workers and what they did. Its members are used on the lane's own thread only,
// except `device` (set once started) and the statistics (read once the pool is idle).
struct DeviceLane {
  DeviceProperties device;
  std::unique_ptr<WorkerClient> worker;
  // None with no fuzz workers (the worker fuzzes) and until DevicePool::start_fuzzing.
  std::unique_ptr<FuzzPool> fuzz_pool;
  int settled = 0;            // configurations that this device gave an outcome
  double busy_seconds = 0;    // time spent on work dispatched here
  // Where that time went: "fuzz" (a group fuzzed on the pool and the worker), the stages of its
  // worker's evaluations ("load", "reference", "verify", "time", ...), "confirm"; and how many times each
  // stage began (a worker computes a shape's reference only when the stage "reference" begins).
  std::map<std::string, double> stage_seconds;
  std::map<std::string, int> stage_counts;
};

// How to start one lane: its worker command (the fuzz pool's workers run the same one).
struct LaneCommand {
  std::vector<std::string> argv;
  std::chrono::milliseconds watchdog{30000};
  unsigned fuzz_workers = 0;
};

// The fuzz workers each of `devices` lanes starts by default on a host of `cores`: half the cores
// (the other half compiles and times), at most 8 in all, shared by the devices, at least 1 each.
unsigned fuzz_workers_per_device(unsigned cores, unsigned devices);

class DevicePool {
 public:
  using Work = std::function<void(DeviceLane&)>;

  // Starts every lane's worker at once and waits for each to report its device. Throws
  // GpuUnavailable with the first lane's reason when one cannot open its device.
  explicit DevicePool(const std::vector<LaneCommand>& lanes);
  ~DevicePool();  // stops the threads and their workers
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  std::size_t size() const { return lanes_.size(); }
  const DeviceLane& lane(std::size_t i) const { return lanes_[i]->lane; }
  int workers_started() const;
  unsigned fuzz_workers() const;  // started, over all lanes
  // The fuzz workers each lane's pool has once started (its command's).
  unsigned fuzz_workers_per_lane() const { return lanes_.front()->command.fuzz_workers; }

  // Has every lane start its fuzz pool, once, without waiting for it: each lane makes its pool
  // (whose workers then start in the background) before it takes more work, and counts as busy
  // until it has. Call it before dispatching the first work that fuzzes.
  void start_fuzzing();

  // Runs `work` on the first free lane's thread (on lane `only` when it is given), waiting for
  // one while running what the lanes deliver. Rethrows here what a lane's work threw.
  void dispatch(Work work, std::optional<std::size_t> only = std::nullopt);
  // Called from a lane's work: `then` runs on the dispatching thread, in the order delivered,
  // within dispatch() or drain().
  void deliver(std::function<void()> then);
  // Runs what the lanes have delivered so far, without waiting; rethrows what a lane's work threw.
  void run_delivered();
  // Runs what the lanes deliver until `done` (which reads the dispatcher's own state) holds;
  // rethrows what a lane's work threw.
  void wait_until(const std::function<bool()>& done);
  // Waits until every lane is idle, running what they deliver; rethrows what a lane's work threw.
  void drain();
  // Waits until every lane is idle and forgets what they delivered or threw: for a dispatcher
  // that is unwinding, whose state the deliveries would touch.
  void abandon() noexcept;

 private:
  struct Lane {
    DeviceLane lane;
    LaneCommand command;
    std::thread thread;
    Work work;  // the work handed to the lane, while it has some
    bool started = false;
    std::string cannot_start;
    bool fuzz_pool_made = false;
  };
  void serve(Lane& lane);
  // With the mutex held: the lane is to make its fuzz pool and has not yet.
  bool owes_fuzz_pool(const Lane& lane) const {
    return fuzzing_ && !lane.fuzz_pool_made && lane.cannot_start.empty();
  }
  // Makes the lane's fuzz pool on its thread; `lock` is held on entry and exit.
  void make_fuzz_pool(Lane& lane, std::unique_lock<std::mutex>& lock);
  // Runs the deliveries waiting; `lock` is held on entry and exit, released while they run.
  void run_deliveries(std::unique_lock<std::mutex>& lock);
  void rethrow_failure(std::unique_lock<std::mutex>& lock);
  bool idle() const;  // with the mutex held
  void stop() noexcept;

  std::vector<std::unique_ptr<Lane>> lanes_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a lane started, took work, finished it, or delivered
  std::deque<std::function<void()>> deliveries_;
  std::exception_ptr failure_;
  bool stopping_ = false;
  bool fuzzing_ = false;  // start_fuzzing was called
};

}  // namespace tiletune

// The OS threads that run a CPU kernel's blocks, one block at a time each, and keep their fiber
// stacks from launch to launch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tuner/backend/cpu/block_scheduler.h"

namespace tiletune {

class WorkerPool {
 public:
  using Task = std::function<void(BlockRunner& runner, std::uint64_t index)>;

  explicit WorkerPool(unsigned workers);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned workers() const { return unsigned(threads_.size()); }

  // Runs task(runner, i) for every i in [0, count) on the workers and waits for all of them.
  // After the first exception no further index is started; that exception is rethrown here.
  // Calls from several threads take turns.
  void run(std::uint64_t count, const Task& task);

  // The process's pool with this many workers, created on first use. 0: hardware_concurrency(),
  // at most kMaxDefaultWorkers: fuzz-sized problems gain little from more, and every worker may
  // map up to 1024 fiber stacks of two memory mappings each (vm.max_map_count is 65530).
  static std::shared_ptr<WorkerPool> shared(unsigned workers);
  static constexpr unsigned kMaxDefaultWorkers = 16;

 private:
  void work(BlockRunner& runner);

  std::mutex launch_mutex_;  // one run at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const Task* task_ = nullptr;
  std::uint64_t count_ = 0;
  std::uint64_t generation_ = 0;  // counts runs: a worker joins each once
  unsigned busy_ = 0;
  bool stopping_ = false;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
  std::vector<std::unique_ptr<BlockRunner>> runners_;
  std::vector<std::thread> threads_;
};

}  // namespace tiletune

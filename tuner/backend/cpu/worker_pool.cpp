#include "tuner/backend/cpu/worker_pool.h"

#include <algorithm>
#include <map>

namespace tiletune {

WorkerPool::WorkerPool(unsigned workers) {
  for (unsigned i = 0; i < std::max(workers, 1u); ++i) {
    runners_.push_back(std::make_unique<BlockRunner>());
  }
  for (auto& runner : runners_) threads_.emplace_back([this, &runner] { work(*runner); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::run(std::uint64_t count, const Task& task) {
  std::lock_guard launch(launch_mutex_);
  std::unique_lock lock(mutex_);
  task_ = &task;
  count_ = count;
  next_ = 0;
  failed_ = false;
  error_ = nullptr;
  busy_ = workers();
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [this] { return busy_ == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void WorkerPool::work(BlockRunner& runner) {
  std::uint64_t seen = 0;
  for (;;) {
    const Task* task;
    std::uint64_t count;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
      count = count_;
    }
    while (!failed_) {
      const std::uint64_t index = next_++;
      if (index >= count) break;
      try {
        (*task)(runner, index);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
        failed_ = true;
      }
    }
    std::lock_guard lock(mutex_);
    if (--busy_ == 0) done_.notify_one();
  }
}

std::shared_ptr<WorkerPool> WorkerPool::shared(unsigned workers) {
  if (workers == 0) {
    workers = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxDefaultWorkers);
  }
  static std::mutex mutex;
  static std::map<unsigned, std::shared_ptr<WorkerPool>> pools;
  std::lock_guard lock(mutex);
  std::shared_ptr<WorkerPool>& pool = pools[workers];
  if (!pool) pool = std::make_shared<WorkerPool>(workers);
  return pool;
}

}  // namespace tiletune

#include "tuner/pipeline/device_pool.h"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/backend/gpu/cuda_driver.h"

namespace tiletune {

using Clock = std::chrono::steady_clock;

unsigned fuzz_workers_per_device(unsigned cores, unsigned devices) {
  // The driver creates a host's CUDA contexts one at a time (about 0.2 s each on an H100 host),
  // and other processes' allocations and module loads wait meanwhile, so every context a tune
  // starts delays the first fuzz verdicts on every GPU. On 4 H100s, 8 shapes, 1, 2, 4 and 6 fuzz
  // workers per GPU tuned at 3.43x, 3.36x, 3.18x and 2.93x one GPU's rate (with 8 workers); the
  // 13-shape suite, a longer tune, within 2% whatever the count (1, 2 or 4 per GPU on 4 H100s, 4
  // or 8 on 2). The README's "One host, many GPUs" has the runs.
  constexpr unsigned kHostFuzzWorkers = 8;
  return std::max(std::min(cores / 2, kHostFuzzWorkers) / std::max(devices, 1u), 1u);
}

DevicePool::DevicePool(const std::vector<LaneCommand>& lanes) {
  if (lanes.empty()) throw std::invalid_argument("a device pool needs at least one device");
  for (const LaneCommand& command : lanes) {
    auto lane = std::make_unique<Lane>();
    lane->command = command;
    lanes_.push_back(std::move(lane));
  }
  for (const auto& lane : lanes_) lane->thread = std::thread([this, l = lane.get()] { serve(*l); });
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    for (const auto& lane : lanes_) {
      if (!lane->started) return false;
    }
    return true;
  });
  for (const auto& lane : lanes_) {
    if (lane->cannot_start.empty()) continue;
    const std::string why = lane->cannot_start;
    lock.unlock();
    stop();
    throw GpuUnavailable(why);
  }
}

DevicePool::~DevicePool() { stop(); }

void DevicePool::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  changed_.notify_all();
  for (const auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

void DevicePool::serve(Lane& lane) {
  std::string cannot_start;
  try {
    lane.lane.worker = std::make_unique<WorkerClient>(lane.command.argv, lane.command.watchdog);
    lane.lane.device = lane.lane.worker->device();  // starts the worker from this thread
  } catch (const std::exception& e) {
    cannot_start = e.what();
  }
  std::unique_lock lock(mutex_);
  lane.started = true;
  lane.cannot_start = cannot_start;
  changed_.notify_all();
  while (cannot_start.empty()) {
    changed_.wait(lock, [&] { return stopping_ || lane.work || owes_fuzz_pool(lane); });
    if (!stopping_ && owes_fuzz_pool(lane)) {
      make_fuzz_pool(lane, lock);
      continue;
    }
    if (!lane.work) break;  // stopping, and nothing left to do
    Work work = lane.work;
    lock.unlock();
    std::exception_ptr failure;
    const Clock::time_point start = Clock::now();
    try {
      work(lane.lane);
    } catch (...) {
      failure = std::current_exception();
    }
    lane.lane.busy_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    lock.lock();
    lane.work = nullptr;
    if (failure && !failure_) failure_ = failure;
    changed_.notify_all();
  }
  lock.unlock();
  // The fuzz pool's threads stop their own workers; this thread stops the one it started.
  lane.lane.fuzz_pool.reset();
  lane.lane.worker.reset();
}

void DevicePool::make_fuzz_pool(Lane& lane, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::unique_ptr<FuzzPool> pool;
  std::exception_ptr failure;
  try {
    if (lane.command.fuzz_workers > 0) {
      pool = std::make_unique<FuzzPool>(lane.command.argv, lane.command.watchdog, lane.command.fuzz_workers);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  lock.lock();
  lane.lane.fuzz_pool = std::move(pool);
  lane.fuzz_pool_made = true;
  if (failure && !failure_) failure_ = failure;
  changed_.notify_all();
}

void DevicePool::start_fuzzing() {
  {
    std::lock_guard lock(mutex_);
    if (fuzzing_) return;
    fuzzing_ = true;
  }
  changed_.notify_all();
}

int DevicePool::workers_started() const {
  std::lock_guard lock(mutex_);
  int started = 0;
  for (const auto& lane : lanes_) {
    started += lane->lane.worker->workers_started();
    if (lane->lane.fuzz_pool) started += lane->lane.fuzz_pool->workers_started();
  }
  return started;
}

unsigned DevicePool::fuzz_workers() const {
  std::lock_guard lock(mutex_);
  unsigned workers = 0;
  for (const auto& lane : lanes_) workers += lane->lane.fuzz_pool ? lane->lane.fuzz_pool->size() : 0;
  return workers;
}

void DevicePool::run_deliveries(std::unique_lock<std::mutex>& lock) {
  while (!deliveries_.empty()) {
    std::function<void()> then = std::move(deliveries_.front());
    deliveries_.pop_front();
    lock.unlock();
    then();  // what it throws leaves the lock released: the caller's unique_lock knows
    lock.lock();
  }
}

void DevicePool::rethrow_failure(std::unique_lock<std::mutex>& lock) {
  if (!failure_) return;
  std::exception_ptr failure = failure_;
  failure_ = nullptr;
  lock.unlock();
  std::rethrow_exception(failure);
}

bool DevicePool::idle() const {
  for (const auto& lane : lanes_) {
    if (lane->work || owes_fuzz_pool(*lane)) return false;
  }
  return true;
}

void DevicePool::dispatch(Work work, std::optional<std::size_t> only) {
  std::unique_lock lock(mutex_);
  for (;;) {
    run_deliveries(lock);
    rethrow_failure(lock);
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      if (lanes_[i]->work || (only && i != *only)) continue;
      lanes_[i]->work = std::move(work);
      changed_.notify_all();
      return;
    }
    changed_.wait(lock);
  }
}

void DevicePool::deliver(std::function<void()> then) {
  {
    std::lock_guard lock(mutex_);
    deliveries_.push_back(std::move(then));
  }
  changed_.notify_all();
}

void DevicePool::run_delivered() {
  std::unique_lock lock(mutex_);
  run_deliveries(lock);
  rethrow_failure(lock);
}

void DevicePool::wait_until(const std::function<bool()>& done) {
  std::unique_lock lock(mutex_);
  for (;;) {
    run_deliveries(lock);
    rethrow_failure(lock);
    if (done()) return;
    changed_.wait(lock);
  }
}

void DevicePool::drain() {
  std::unique_lock lock(mutex_);
  for (;;) {
    run_deliveries(lock);
    rethrow_failure(lock);
    if (idle() && deliveries_.empty()) return;
    changed_.wait(lock);
  }
}

void DevicePool::abandon() noexcept {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return idle(); });
  deliveries_.clear();
  failure_ = nullptr;
}

}  // namespace tiletune

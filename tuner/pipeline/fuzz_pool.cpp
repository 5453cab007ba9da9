#include "tuner/pipeline/fuzz_pool.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/backend/gpu/gpu_device.h"

namespace tiletune {

using Clock = std::chrono::steady_clock;

FuzzPool::FuzzPool(std::vector<std::string> argv, std::chrono::milliseconds watchdog, unsigned workers) {
  if (workers == 0) throw std::invalid_argument("a fuzz pool needs at least one worker");
  for (unsigned i = 0; i < workers; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->client = std::make_unique<WorkerClient>(argv, watchdog);
    slots_.push_back(std::move(slot));
  }
  starting_ = workers;
  for (const auto& slot : slots_) slot->thread = std::thread([this, s = slot.get()] { serve(*s); });
}

FuzzPool::~FuzzPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  // Each thread's client stops its worker as the slot goes; the worker was started by that thread.
  for (const auto& slot : slots_) slot->thread.join();
}

int FuzzPool::workers_started() const {
  std::lock_guard lock(mutex_);
  int started = 0;
  for (const auto& slot : slots_) started += slot->started;
  return started;
}

std::map<std::string, double> FuzzPool::stage_seconds() const {
  std::lock_guard lock(mutex_);
  return stage_seconds_;
}

std::string FuzzPool::unavailable() const {
  std::lock_guard lock(mutex_);
  return unavailable_;
}

void FuzzPool::note_unavailable(const std::string& why) {
  if (!unavailable_.empty()) return;
  unavailable_ = why;
  fmt::print(stderr, "\ntiletune: warning: a fuzz worker could not start ({}): the workers that did, "
                     "and the evaluation worker, fuzz without it\n", why);
}

std::vector<std::optional<EvaluationOutcome>> FuzzPool::fuzz(
    const std::vector<EvaluationRequest>& requests, const std::vector<std::string>& families,
    WorkerClient* helper) {
  if (!families.empty() && families.size() != requests.size()) {
    throw std::invalid_argument("a fuzz pool needs a family for every request, or none");
  }
  std::unique_lock lock(mutex_);
  requests_ = &requests;
  families_ = &families;
  round_workers_ = slots_.size() + (helper ? 1 : 0);
  outcomes_.assign(requests.size(), std::nullopt);
  next_ = finished_ = 0;
  failure_ = nullptr;
  work_ready_.notify_all();
  if (helper) {
    std::size_t index = 0, end = 0;
    while (take(index, end) && fuzz_range(*helper, index, end, lock)) {
    }
  }
  // Without a helper, what no worker of the pool can take comes back empty.
  work_done_.wait(lock, [&] { return finished_ == requests.size() || none_can_serve(); });
  requests_ = nullptr;
  if (failure_) std::rethrow_exception(failure_);
  return std::move(outcomes_);
}

bool FuzzPool::take(std::size_t& index, std::size_t& end) {
  if (!requests_ || next_ >= requests_->size()) return false;
  // The request and those after it of its family, one after another in this worker: up to a
  // worker's share of the round, so that a large family still keeps every worker busy.
  const std::size_t share = std::max<std::size_t>(2, (requests_->size() + round_workers_ - 1) / round_workers_);
  index = next_;
  end = next_ + 1;
  while (end < requests_->size() && end - index < share && !families_->empty() &&
         (*families_)[end] == (*families_)[index]) {
    ++end;
  }
  next_ = end;
  return true;
}

bool FuzzPool::fuzz_range(WorkerClient& client, std::size_t index, std::size_t end,
                          std::unique_lock<std::mutex>& lock) {
  for (; index < end; ++index) {
    EvaluationRequest request = (*requests_)[index];
    request.measure = false;
    lock.unlock();
    std::optional<EvaluationOutcome> outcome;
    std::exception_ptr failure;
    std::string cannot_start;
    std::map<std::string, double> stages;  // of this evaluation
    std::string stage = "start";
    Clock::time_point stage_start = Clock::now();
    const auto close_stage = [&] {
      stages[stage] += std::chrono::duration<double>(Clock::now() - stage_start).count();
    };
    try {
      outcome = client.evaluate(request, [&](const std::string& next) {
        close_stage();
        stage = next;
        stage_start = Clock::now();
      });
    } catch (const GpuUnavailable& e) {
      cannot_start = e.what();
    } catch (...) {
      failure = std::current_exception();
    }
    close_stage();
    lock.lock();
    for (const auto& [name, seconds] : stages) stage_seconds_[name] += seconds;
    outcomes_[index] = std::move(outcome);
    if (failure && !failure_) failure_ = failure;
    if (!cannot_start.empty()) {
      // Its worker died and a fresh one could not start: this request and the rest of its range
      // go back empty, and the worker leaves the pool.
      note_unavailable(cannot_start);
      finished_ += end - index;
      if (finished_ == requests_->size()) work_done_.notify_all();
      return false;
    }
    if (++finished_ == requests_->size()) work_done_.notify_all();
  }
  return true;
}

void FuzzPool::serve(Slot& slot) {
  const Clock::time_point start = Clock::now();
  std::string cannot_start;
  try {
    slot.client->device();  // starts the worker
  } catch (const std::exception& e) {
    cannot_start = e.what();
  }
  std::unique_lock lock(mutex_);
  stage_seconds_["start"] += std::chrono::duration<double>(Clock::now() - start).count();
  slot.started = slot.client->workers_started();
  --starting_;
  if (cannot_start.empty()) {
    ++serving_;
    for (;;) {
      work_ready_.wait(lock, [&] { return stopping_ || (requests_ && next_ < requests_->size()); });
      if (stopping_) break;
      std::size_t index = 0, end = 0;
      if (!take(index, end)) continue;
      const bool serves = fuzz_range(*slot.client, index, end, lock);
      slot.started = slot.client->workers_started();
      if (!serves) break;
    }
    --serving_;
  } else {
    note_unavailable(cannot_start);
  }
  work_done_.notify_all();  // a round without a helper may be waiting for a worker that left
  lock.unlock();
  slot.client.reset();  // stops the worker from the thread that started it
}

}  // namespace tiletune

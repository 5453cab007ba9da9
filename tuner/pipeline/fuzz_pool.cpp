#include "tuner/pipeline/fuzz_pool.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/gpu_device.h"

namespace tiletune {

using Clock = std::chrono::steady_clock;

FuzzPool::FuzzPool(std::vector<std::string> argv, std::chrono::milliseconds watchdog, unsigned workers) {
  if (workers == 0) throw std::invalid_argument("a fuzz pool needs at least one worker");
  for (unsigned i = 0; i < workers; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->client = std::make_unique<WorkerClient>(argv, watchdog);
    slots_.push_back(std::move(slot));
  }
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
  for (const auto& slot : slots_) started += slot->client->workers_started();
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

std::vector<std::optional<EvaluationOutcome>> FuzzPool::fuzz(
    const std::vector<EvaluationRequest>& requests, const std::vector<std::string>& families) {
  if (!families.empty() && families.size() != requests.size()) {
    throw std::invalid_argument("a fuzz pool needs a family for every request, or none");
  }
  std::unique_lock lock(mutex_);
  requests_ = &requests;
  families_ = &families;
  outcomes_.assign(requests.size(), std::nullopt);
  next_ = finished_ = 0;
  failure_ = nullptr;
  if (!unavailable_.empty()) {
    requests_ = nullptr;
    return std::move(outcomes_);  // all empty: the caller fuzzes
  }
  work_ready_.notify_all();
  work_done_.wait(lock, [&] { return finished_ == requests.size(); });
  requests_ = nullptr;
  if (failure_) std::rethrow_exception(failure_);
  return std::move(outcomes_);
}

void FuzzPool::serve(Slot& slot) {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || (requests_ && next_ < requests_->size()); });
    if (stopping_) break;
    // The request and those after it of its family, one after another in this worker: up to a
    // worker's share of the round, so that a large family still keeps every worker busy.
    const std::size_t share = std::max<std::size_t>(
        2, (requests_->size() + slots_.size() - 1) / slots_.size());
    std::size_t index = next_, end = next_ + 1;
    while (end < requests_->size() && end - index < share && !families_->empty() &&
           (*families_)[end] == (*families_)[index]) {
      ++end;
    }
    next_ = end;
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
        outcome = slot.client->evaluate(request, [&](const std::string& next) {
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
        // One worker that cannot start means the others will not either (the device allows one
        // context, or none): hand the rest back to the caller.
        if (unavailable_.empty()) {
          unavailable_ = cannot_start;
          fmt::print(stderr, "\ntiletune: warning: no fuzz worker could start ({}): the evaluation "
                             "worker fuzzes, one configuration at a time\n", cannot_start);
        }
        finished_ += (end - index - 1) + (requests_->size() - next_);
        next_ = requests_->size();
        end = index + 1;
      }
      if (++finished_ == requests_->size()) work_done_.notify_all();
    }
  }
  lock.unlock();
  slot.client.reset();  // stops the worker from the thread that started it
}

}  // namespace tiletune

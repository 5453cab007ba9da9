// One build per key however many threads ask at once: the first asker builds outside the lock,
// the others wait for its result (or its exception, which every asker then gets).
#pragma once

#include <future>
#include <map>
#include <mutex>

namespace tiletune::runtime {

template <class Key, class Value, class Build>
Value build_once(std::mutex& mutex, std::map<Key, std::shared_future<Value>>& built, const Key& key,
                 Build&& build) {
  std::promise<Value> promise;
  std::shared_future<Value> future;
  bool mine = false;
  {
    const std::lock_guard lock(mutex);
    auto [entry, inserted] = built.try_emplace(key);
    if (inserted) {
      entry->second = promise.get_future().share();
      mine = true;
    }
    future = entry->second;
  }
  if (mine) {
    try {
      promise.set_value(build());
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  return future.get();
}

}  // namespace tiletune::runtime

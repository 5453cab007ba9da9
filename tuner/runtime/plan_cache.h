// What each problem runs, prepared once and then found without a global lock: the map is split
// into shards by the key's hash, each behind its own reader-writer lock, so concurrent runs of
// different problems rarely meet and runs of the same problem only share a read lock.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "tuner/core/gemm_shape.h"

namespace tiletune::runtime {

// What a plan depends on: the context, the shape and leading dimensions (requirements read them),
// and the parts of the BLAS contract that decide which templates and configurations may serve the
// problem (KernelTemplate::unsupported) and which build of the configuration serves it
// (KernelTemplate::specialization: alpha != 1, beta != 0, a batch), and the batch's size, by which
// records are tuned (`tune --batch`). Not alpha's and beta's values, nor the batch's strides: a
// launch takes those from the problem it runs.
struct PlanKey {
  const void* context = nullptr;  // the CUDA context (null on the CPU backend)
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  Op op_a = Op::n, op_b = Op::n;
  bool scaled = false;   // alpha != 1
  bool keeps_c = false;  // beta != 0: C is read
  std::int64_t batch = 1;
  Epilogue epilogue = Epilogue::none;

  static PlanKey of(const void* context, const GemmProblem& p) {
    return {context, p.shape.m, p.shape.n, p.shape.k, p.lda, p.ldb, p.ldc, p.op_a, p.op_b,
            p.alpha != 1, p.beta != 0, p.batch, p.epilogue};
  }
  friend bool operator==(const PlanKey&, const PlanKey&) = default;
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& key) const noexcept {
    std::uint64_t h = std::hash<const void*>{}(key.context);
    const std::int64_t contract = std::int64_t(key.op_a) | std::int64_t(key.op_b) << 1 | std::int64_t(key.scaled) << 2 |
                                  std::int64_t(key.keeps_c) << 3 | std::int64_t(key.epilogue) << 4;
    for (std::int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc, key.batch, contract}) {
      h = (h ^ std::uint64_t(v)) * 0x100000001b3ULL;  // FNV-1a step per field
    }
    return std::size_t(h ^ (h >> 29));
  }
};

template <class Value>
class PlanCache {
 public:
  // The value prepared for the key, or null.
  std::shared_ptr<const Value> find(const PlanKey& key) const {
    const Shard& shard = shard_of(key);
    const std::shared_lock lock(shard.mutex);
    const auto found = shard.values.find(key);
    return found == shard.values.end() ? nullptr : found->second;
  }
  // Keeps the value unless another thread prepared one first; returns the one kept.
  std::shared_ptr<const Value> insert(const PlanKey& key, std::shared_ptr<const Value> value) {
    Shard& shard = shard_of(key);
    const std::unique_lock lock(shard.mutex);
    return shard.values.try_emplace(key, std::move(value)).first->second;
  }

 private:
  struct Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<PlanKey, std::shared_ptr<const Value>, PlanKeyHash> values;
  };
  Shard& shard_of(const PlanKey& key) { return shards_[PlanKeyHash{}(key) % shards_.size()]; }
  const Shard& shard_of(const PlanKey& key) const {
    return shards_[PlanKeyHash{}(key) % shards_.size()];
  }
  std::array<Shard, 32> shards_;
};

}  // namespace tiletune::runtime

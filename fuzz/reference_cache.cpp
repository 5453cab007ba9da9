#include "fuzz/reference_cache.h"

#include <fmt/format.h>

namespace tiletune {
namespace {

// What the reference depends on: A and B (their sizes, strides and values), not C's stride or
// the CPU backend's schedule.
std::string reference_key(const GemmCase& c) {
  return fmt::format("{} lda={} ldb={} {} {}", c.problem.shape.to_string(), c.problem.lda,
                     c.problem.ldb, to_string(c.inputs), c.data_seed);
}

}  // namespace

ReferenceCache::ReferenceCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

void ReferenceCache::next_configuration() {
  ++configuration_;
  for (auto entry = entries_.begin(); entry != entries_.end();) {
    if (entry->second.configuration + 2 >= configuration_) {
      ++entry;
      continue;
    }
    bytes_ -= entry->second.bytes;
    entry = entries_.erase(entry);
  }
}

std::shared_ptr<const ReferenceTable> ReferenceCache::get(const GemmCase& gemm_case,
                                                          const GemmOperands& inputs) {
  const std::string key = reference_key(gemm_case);
  if (auto found = entries_.find(key); found != entries_.end()) {
    ++hits_;
    found->second.configuration = configuration_;
    return found->second.table;
  }
  ++misses_;
  auto table = std::make_shared<const ReferenceTable>(compute_reference(inputs));
  const std::size_t bytes = table->value.size() * 2 * sizeof(double);
  if (bytes_ + bytes <= max_bytes_) {
    entries_[key] = Entry{table, configuration_, bytes};
    bytes_ += bytes;
  }
  return table;
}

}  // namespace tiletune

// The exhaustive strategy: every configuration, in the space's order. The reference the guided
// strategies are measured against, and the tuner's default.
#include <memory>

#include "tuner/search/search_history.h"
#include "tuner/search/search_strategies.h"

namespace tiletune {
namespace {

class ExhaustiveSearch final : public SearchStrategy {
 public:
  explicit ExhaustiveSearch(std::size_t space_size) : history_(space_size) {}

  std::string_view name() const override { return "exhaustive"; }

  std::vector<std::size_t> propose(std::size_t max_count) override {
    require_batch_size(max_count);
    std::vector<std::size_t> batch;
    for (; next_ < history_.space_size() && batch.size() < max_count; ++next_) {
      if (history_.proposed(next_)) continue;  // observed before it was proposed
      history_.mark_proposed(next_);
      batch.push_back(next_);
    }
    return batch;
  }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    history_.record(index, time_ms);
  }

 private:
  SearchHistory history_;
  std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_exhaustive_search(std::size_t space_size) {
  return std::make_unique<ExhaustiveSearch>(space_size);
}

}  // namespace tiletune

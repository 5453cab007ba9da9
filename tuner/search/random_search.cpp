// The random strategy: every configuration, in an order drawn from the seed. With a budget it is
// the baseline a guided strategy has to beat.
#include <memory>
#include <numeric>

#include "tuner/search/search_history.h"
#include "tuner/search/search_random.h"
#include "tuner/search/search_strategies.h"

namespace tiletune {
namespace {

class RandomSearch final : public SearchStrategy {
 public:
  RandomSearch(std::size_t space_size, std::uint64_t seed) : history_(space_size), order_(space_size) {
    std::iota(order_.begin(), order_.end(), 0);
    SearchRandom(seed).shuffle(order_);
  }

  std::string_view name() const override { return "random"; }

  std::vector<std::size_t> propose(std::size_t max_count) override {
    require_batch_size(max_count);
    std::vector<std::size_t> batch;
    for (; next_ < order_.size() && batch.size() < max_count; ++next_) {
      if (history_.proposed(order_[next_])) continue;  // observed before it was proposed
      history_.mark_proposed(order_[next_]);
      batch.push_back(order_[next_]);
    }
    return batch;
  }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    history_.record(index, time_ms);
  }

 private:
  SearchHistory history_;
  std::vector<std::size_t> order_;  // a seeded permutation of the space
  std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_random_search(std::size_t space_size, std::uint64_t seed) {
  return std::make_unique<RandomSearch>(space_size, seed);
}

}  // namespace tiletune

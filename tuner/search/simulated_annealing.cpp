// The annealing strategy: simulated annealing over neighbouring configurations, a batch at a time.
//
// The first batch is the warm start's configurations, if any, and others spread over the space
// (search_moves.h); its fastest configuration starts the chain. Each later batch evaluates the chain's unproposed neighbours (one parameter changed,
// adjacent values first), then its pair moves (two parameters changed by one value each, in
// random order), topped up with the nearest unproposed configurations when they run short. Pair
// moves cross the traps that single steps cannot: BM=64,BN=128 to BM=128,BN=64, where the
// configurations between them are slower (128x128 leaves SMs idle) or invalid (64x64 with the
// same thread tile). The batch's fastest then becomes the chain's position if it is faster, or,
// if slower by a share d, with probability exp(-d / temperature), so that early on the chain can
// leave a local optimum; the temperature falls with each batch. Failed configurations are never
// moved to. When the neighbours and pair moves have all been evaluated and none of them is
// faster, the chain has converged and restarts with a spread-out batch of unproposed
// configurations.
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "tuner/search/search_history.h"
#include "tuner/search/search_moves.h"
#include "tuner/search/search_random.h"
#include "tuner/search/search_strategies.h"

namespace tiletune {
namespace {

// A move 5% slower is taken with probability 1/e at first; the temperature halves every 3 batches.
constexpr double kStartTemperature = 0.05;
constexpr double kCooling = 0.8;

class SimulatedAnnealing final : public SearchStrategy {
 public:
  SimulatedAnnealing(ConfigurationSpace space, std::uint64_t seed, std::vector<std::size_t> starting_points)
      : space_(std::move(space)), history_(space_.size()), random_(seed),
        starting_points_(std::move(starting_points)) {}

  std::string_view name() const override { return "annealing"; }

  std::vector<std::size_t> propose(std::size_t max_count) override {
    require_batch_size(max_count);
    settle_last_batch();
    batch_.clear();
    if (current_ && converged()) current_.reset();
    if (current_) add_neighbourhood(max_count);
    // The first batch and each restart; the starting points are taken once, at the first.
    add_first_batch(space_, history_, starting_points_, max_count, random_, batch_);
    starting_points_.clear();
    return batch_;
  }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    history_.record(index, time_ms);
  }

 private:
  // The Metropolis step, taken when the next batch is asked for (the last one all observed), over
  // the batch in proposal order, so that the order of the observations does not matter.
  void settle_last_batch() {
    if (batch_.empty()) return;
    temperature_ *= kCooling;
    std::optional<std::size_t> challenger;
    for (const std::size_t index : batch_) {
      if (history_.time(index) && (!challenger || history_.cost(index) < history_.cost(*challenger))) {
        challenger = index;
      }
    }
    if (!challenger) return;
    if (!current_ || history_.cost(*challenger) <= history_.cost(*current_)) {
      current_ = challenger;
      return;
    }
    const double worse_by = history_.cost(*challenger) / history_.cost(*current_) - 1;
    if (random_.chance(std::exp(-worse_by / temperature_))) current_ = challenger;
  }

  // Every neighbour and pair move evaluated, none faster.
  bool converged() const {
    const auto settled = [&](const std::vector<std::size_t>& moves) {
      return std::all_of(moves.begin(), moves.end(), [&](std::size_t index) {
        return history_.proposed(index) && history_.cost(index) >= history_.cost(*current_);
      });
    };
    return settled(space_.neighbours(*current_)) && settled(space_.pair_moves(*current_));
  }

  // The unproposed neighbours, nearer ones first, in random order among equally near ones; then
  // the pair moves, in random order; then the nearest unproposed configurations.
  void add_neighbourhood(std::size_t max_count) {
    const ValueIndices& here = space_.point(*current_);
    std::vector<std::size_t> neighbours = space_.neighbours(*current_);
    for (std::size_t begin = 0; begin < neighbours.size();) {
      const std::size_t steps = ConfigurationSpace::distance(here, space_.point(neighbours[begin]));
      std::size_t end = begin + 1;
      while (end < neighbours.size() &&
             ConfigurationSpace::distance(here, space_.point(neighbours[end])) == steps) {
        ++end;
      }
      std::vector<std::size_t> equally_near(neighbours.begin() + begin, neighbours.begin() + end);
      random_.shuffle(equally_near);
      for (const std::size_t index : equally_near) {
        if (batch_.size() < max_count && !history_.proposed(index)) add(index);
      }
      begin = end;
    }
    std::vector<std::size_t> pair_moves = space_.pair_moves(*current_);
    random_.shuffle(pair_moves);
    for (const std::size_t index : pair_moves) {
      if (batch_.size() < max_count && !history_.proposed(index)) add(index);
    }
    while (batch_.size() < max_count && !history_.exhausted()) {
      add(pick_nearest_unproposed(space_, history_, here, random_));
    }
  }

  void add(std::size_t index) {
    history_.mark_proposed(index);
    batch_.push_back(index);
  }

  ConfigurationSpace space_;
  SearchHistory history_;
  SearchRandom random_;
  std::optional<std::size_t> current_;  // the chain's position: an observed, successful configuration
  double temperature_ = kStartTemperature;
  std::vector<std::size_t> batch_;  // the last batch proposed
  std::vector<std::size_t> starting_points_;  // for the first batch (a warm start)
};

}  // namespace

std::unique_ptr<SearchStrategy> make_simulated_annealing(ConfigurationSpace space, std::uint64_t seed,
                                                         std::vector<std::size_t> starting_points) {
  return std::make_unique<SimulatedAnnealing>(std::move(space), seed, std::move(starting_points));
}

}  // namespace tiletune

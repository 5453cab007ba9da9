// The genetic strategy: each batch is a generation of children bred from the fastest
// configurations observed so far.
//
// The parents are the kPopulation fastest configurations observed, whatever their generation
// (elitism, a (mu + lambda) scheme: a good configuration breeds until better ones displace it;
// failed ones never breed). A child takes each parameter's value index from one of two parents
// chosen by tournament (uniform crossover); then a value may move to an adjacent one (mutation).
// A child that is not a valid configuration, or was proposed before, is repaired to the nearest
// unproposed configuration. A quarter of each generation (rounded down) is instead the fastest configuration's
// unproposed pair moves (two parameters changed by one value each, in random order): crossover
// cannot make BM=128,BN=64 from parents with BM=64,BN=128, and mutation moves one value at a time
// through configurations that are slower (128x128) or invalid (64x64 with the same thread tile).
// Until a configuration has succeeded, the generation is the warm start's configurations, if
// any, and others spread over the space (search_moves.h).
#include <algorithm>
#include <memory>
#include <utility>

#include "tuner/search/search_history.h"
#include "tuner/search/search_moves.h"
#include "tuner/search/search_random.h"
#include "tuner/search/search_strategies.h"

namespace tiletune {
namespace {

// A small, elitist population: within budgets of a few batches, breeding from the best few
// configurations beats keeping a diverse one (measured with search_replay on warp_tiled).
constexpr std::size_t kPopulation = 6;
constexpr std::size_t kTournament = 3;
// Mutations per child on average: crossover and repair already move children off their parents.
constexpr double kMutationsPerChild = 0.5;
// The share of a generation given to the fastest configuration's pair moves.
constexpr double kPairMoveShare = 0.25;

class GeneticSearch final : public SearchStrategy {
 public:
  GeneticSearch(ConfigurationSpace space, std::uint64_t seed, std::vector<std::size_t> starting_points)
      : space_(std::move(space)), history_(space_.size()), random_(seed),
        starting_points_(std::move(starting_points)) {}

  std::string_view name() const override { return "genetic"; }

  std::vector<std::size_t> propose(std::size_t max_count) override {
    require_batch_size(max_count);
    const std::vector<std::size_t> parents = population();
    std::vector<std::size_t> generation;
    if (parents.empty()) {
      add_first_batch(space_, history_, starting_points_, max_count, random_, generation);
      starting_points_.clear();
      return generation;
    }
    add_pair_moves(parents.front(), max_count, generation);
    while (generation.size() < max_count && !history_.exhausted()) {
      const std::size_t child = breed(parents);
      history_.mark_proposed(child);
      generation.push_back(child);
    }
    return generation;
  }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    history_.record(index, time_ms);
  }

 private:
  // The fastest configurations observed, fastest first (equal times in space order).
  std::vector<std::size_t> population() const {
    std::vector<std::size_t> succeeded;
    for (std::size_t index = 0; index < history_.space_size(); ++index) {
      if (history_.time(index)) succeeded.push_back(index);
    }
    const std::size_t kept = std::min(kPopulation, succeeded.size());
    std::partial_sort(succeeded.begin(), succeeded.begin() + kept, succeeded.end(),
                      [&](std::size_t a, std::size_t b) {
                        return std::pair(history_.cost(a), a) < std::pair(history_.cost(b), b);
                      });
    succeeded.resize(kept);
    return succeeded;
  }

  // Up to kPairMoveShare of max_count (rounded down, so that a generation of one is bred) of the
  // pair moves of `fittest`.
  void add_pair_moves(std::size_t fittest, std::size_t max_count, std::vector<std::size_t>& generation) {
    const std::size_t count = std::size_t(double(max_count) * kPairMoveShare);
    std::vector<std::size_t> pair_moves = space_.pair_moves(fittest);
    random_.shuffle(pair_moves);
    for (const std::size_t index : pair_moves) {
      if (generation.size() == count) return;
      if (history_.proposed(index)) continue;
      history_.mark_proposed(index);
      generation.push_back(index);
    }
  }

  // The fastest of kTournament parents drawn at random: the population is sorted, so the lowest
  // position drawn wins.
  std::size_t tournament(const std::vector<std::size_t>& parents) {
    std::size_t winner = random_.below(parents.size());
    for (std::size_t round = 1; round < kTournament; ++round) {
      winner = std::min(winner, random_.below(parents.size()));
    }
    return parents[winner];
  }

  std::size_t breed(const std::vector<std::size_t>& parents) {
    const ValueIndices& mother = space_.point(tournament(parents));
    const ValueIndices& father = space_.point(tournament(parents));
    ValueIndices child(mother.size());
    const double mutation = kMutationsPerChild / double(std::max<std::size_t>(1, child.size()));
    for (std::size_t parameter = 0; parameter < child.size(); ++parameter) {
      child[parameter] = random_.chance(0.5) ? mother[parameter] : father[parameter];
      if (random_.chance(mutation)) child[parameter] = adjacent_value(parameter, child[parameter]);
    }
    return pick_nearest_unproposed(space_, history_, child, random_);
  }

  // One value up or down (the only way there is at either end); a parameter of one value stays.
  std::size_t adjacent_value(std::size_t parameter, std::size_t value) {
    const std::size_t count = space_.value_count(parameter);
    if (count < 2) return value;
    if (value == 0) return 1;
    if (value + 1 == count) return value - 1;
    return random_.chance(0.5) ? value - 1 : value + 1;
  }

  ConfigurationSpace space_;
  SearchHistory history_;
  SearchRandom random_;
  std::vector<std::size_t> starting_points_;  // for the first generation (a warm start)
};

}  // namespace

std::unique_ptr<SearchStrategy> make_genetic_search(ConfigurationSpace space, std::uint64_t seed,
                                                    std::vector<std::size_t> starting_points) {
  return std::make_unique<GeneticSearch>(std::move(space), seed, std::move(starting_points));
}

}  // namespace tiletune

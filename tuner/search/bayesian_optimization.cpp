// The bayes strategy: Bayesian optimisation with a Gaussian-process surrogate (gaussian_process.h),
// its picks kept near the fastest configurations found so far (a trust region).
//
// The first batch is the warm start's configurations, if any, and others spread over the space
// (search_moves.h). Each later batch fits the model to the logarithm of every time observed (a
// failed configuration counts as the slowest observed one, so that the model steers away from
// where things fail), then fills the batch one configuration at a time: of the unproposed
// neighbours and pair moves of the kTrustRegionParents fastest configurations, the one of
// greatest expected improvement over the fastest time, which is then assumed to come out as the
// model predicts ("kriging believer") so that the next pick goes elsewhere unless the model is
// sure it is better there too. Once that region is used up, the rest of the batch is picked from
// the whole space the same way.
//
// Expected improvement weighs a prediction against its uncertainty, so the picks are not only
// the configurations predicted fastest. Keeping them near the two fastest (not one, as annealing
// does) lets a batch climb out of two basins at a time: on warp_tiled's spaces measured on an
// H100, a fifth of the space brings it within 3% at 4096^3 for 88 seeds of 100 against
// annealing's 65 (tests/tuner/search/recorded_search_quality_test.cpp). A model over the whole space
// alone did no better than annealing there: it spends its picks where it is unsure, far from
// anything fast; a region around the fastest three did slightly better on the measured spaces
// but worse than random search on one modelled space (search_quality_test.cpp).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <numbers>
#include <optional>
#include <set>
#include <utility>

#include "tuner/search/gaussian_process.h"
#include "tuner/search/search_history.h"
#include "tuner/search/search_moves.h"
#include "tuner/search/search_random.h"
#include "tuner/search/search_strategies.h"

namespace tiletune {
namespace {

// The model is fitted to at most this many observations, the fastest (failures dropped first):
// fitting is cubic in their number, and the model matters most where the times are short.
constexpr std::size_t kMaxObservationsFitted = 160;
// Successes needed before the model is trusted over a spread-out pick.
constexpr std::size_t kMinSuccesses = 3;
// The trust region: the neighbours and pair moves of this many of the fastest configurations.
constexpr std::size_t kTrustRegionParents = 2;
// The model's hyperparameters are fitted again once the observations have grown by this share
// since they last were; in between, the last ones are kept (fitting them is most of the cost).
constexpr double kRefitGrowth = 0.25;

// The expected improvement of a normal (mean, stddev) on `best`: how far below it the outcome is
// expected to land, counting only the outcomes below it.
double expected_improvement(const GpPrediction& prediction, double best) {
  const double gain = best - prediction.mean;
  if (prediction.stddev <= 0) return std::max(0.0, gain);
  const double z = gain / prediction.stddev;
  const double density = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
  const double below = 0.5 * std::erfc(-z / std::numbers::sqrt2);
  return gain * below + prediction.stddev * density;
}

class BayesianOptimization final : public SearchStrategy {
 public:
  BayesianOptimization(ConfigurationSpace space, std::uint64_t seed, std::vector<std::size_t> starting_points)
      : space_(std::move(space)), history_(space_.size()), random_(seed),
        starting_points_(std::move(starting_points)) {
    for (std::size_t index = 0; index < space_.size(); ++index) inputs_.push_back(input(index));
  }

  std::string_view name() const override { return "bayes"; }

  std::vector<std::size_t> propose(std::size_t max_count) override {
    require_batch_size(max_count);
    std::vector<std::size_t> batch;
    const std::vector<std::size_t> fastest = fastest_observed();
    if (fastest.size() >= kMinSuccesses) add_by_expected_improvement(fastest, max_count, batch);
    // The first batch (and any batch while too little has succeeded for a model).
    add_first_batch(space_, history_, starting_points_, max_count, random_, batch);
    starting_points_.clear();
    return batch;
  }

  void observe(std::size_t index, std::optional<double> time_ms) override {
    history_.record(index, time_ms);
  }

 private:
  // The configuration's value indices, each scaled to [0, 1] by its parameter's number of values.
  Eigen::VectorXd input(std::size_t index) const {
    const ValueIndices& point = space_.point(index);
    Eigen::VectorXd x(Eigen::Index(point.size()));
    for (std::size_t p = 0; p < point.size(); ++p) {
      const std::size_t count = space_.value_count(p);
      x(Eigen::Index(p)) = count > 1 ? double(point[p]) / double(count - 1) : 0.0;
    }
    return x;
  }

  // The successful configurations, fastest first (equal times in space order).
  std::vector<std::size_t> fastest_observed() const {
    std::vector<std::size_t> succeeded;
    for (std::size_t index = 0; index < space_.size(); ++index) {
      if (history_.time(index)) succeeded.push_back(index);
    }
    std::stable_sort(succeeded.begin(), succeeded.end(),
                     [&](std::size_t a, std::size_t b) { return history_.cost(a) < history_.cost(b); });
    return succeeded;
  }

  // The model of log time, fitted in space order (so that the order in which outcomes were told
  // does not matter) to every configuration proposed so far, all of which have been observed.
  GaussianProcess fit() {
    std::vector<std::size_t> observed;
    double slowest = 0;
    for (std::size_t index = 0; index < space_.size(); ++index) {
      if (!history_.proposed(index)) continue;
      observed.push_back(index);
      if (history_.time(index)) slowest = std::max(slowest, *history_.time(index));
    }
    if (observed.size() > kMaxObservationsFitted) {
      std::stable_sort(observed.begin(), observed.end(),
                       [&](std::size_t a, std::size_t b) { return history_.cost(a) < history_.cost(b); });
      observed.resize(kMaxObservationsFitted);
      std::sort(observed.begin(), observed.end());
    }
    Eigen::MatrixXd x(Eigen::Index(observed.size()), Eigen::Index(space_.parameter_count()));
    Eigen::VectorXd y(Eigen::Index(observed.size()));
    for (std::size_t row = 0; row < observed.size(); ++row) {
      x.row(Eigen::Index(row)) = inputs_[observed[row]];
      y(Eigen::Index(row)) = std::log(history_.time(observed[row]).value_or(slowest));
    }
    if (hyperparameters_ && double(observed.size()) < (1 + kRefitGrowth) * double(fitted_size_)) {
      return GaussianProcess(std::move(x), std::move(y), *hyperparameters_);
    }
    GaussianProcess model(std::move(x), std::move(y));
    hyperparameters_ = model.hyperparameters();
    fitted_size_ = observed.size();
    return model;
  }

  // The unproposed neighbours and pair moves of the fastest few, in space order.
  std::vector<std::size_t> trust_region(const std::vector<std::size_t>& fastest) const {
    std::set<std::size_t> region;
    for (std::size_t rank = 0; rank < fastest.size() && rank < kTrustRegionParents; ++rank) {
      for (const std::size_t index : space_.neighbours(fastest[rank])) {
        if (!history_.proposed(index)) region.insert(index);
      }
      for (const std::size_t index : space_.pair_moves(fastest[rank])) {
        if (!history_.proposed(index)) region.insert(index);
      }
    }
    return {region.begin(), region.end()};
  }

  void add_by_expected_improvement(const std::vector<std::size_t>& fastest, std::size_t max_count,
                                   std::vector<std::size_t>& batch) {
    GaussianProcess model = fit();
    const double best = std::log(*history_.time(fastest.front()));
    // Takes the candidates of greatest expected improvement, one at a time, into the batch.
    const auto take_from = [&](std::vector<std::size_t> candidates) {
      while (batch.size() < max_count && !candidates.empty()) {
        std::size_t chosen = 0;
        double chosen_gain = -1;
        GpPrediction chosen_prediction;
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          const GpPrediction prediction = model.predict(inputs_[candidates[c]]);
          const double gain = expected_improvement(prediction, best);
          if (gain > chosen_gain) {
            chosen = c;
            chosen_gain = gain;
            chosen_prediction = prediction;
          }
        }
        const std::size_t index = candidates[chosen];
        history_.mark_proposed(index);
        batch.push_back(index);
        model.add(inputs_[index], chosen_prediction.mean);
        candidates.erase(candidates.begin() + std::ptrdiff_t(chosen));
      }
    };
    take_from(trust_region(fastest));
    if (batch.size() == max_count) return;
    std::vector<std::size_t> everywhere;
    for (std::size_t index = 0; index < space_.size(); ++index) {
      if (!history_.proposed(index)) everywhere.push_back(index);
    }
    take_from(std::move(everywhere));
  }

  ConfigurationSpace space_;
  SearchHistory history_;
  SearchRandom random_;
  std::vector<std::size_t> starting_points_;  // for the first batch (a warm start)
  std::vector<Eigen::VectorXd> inputs_;       // per configuration of the space
  std::optional<GpHyperparameters> hyperparameters_;  // of the last fit, to fitted_size_ observations
  std::size_t fitted_size_ = 0;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_bayesian_optimization(ConfigurationSpace space, std::uint64_t seed,
                                                           std::vector<std::size_t> starting_points) {
  return std::make_unique<BayesianOptimization>(std::move(space), seed, std::move(starting_points));
}

}  // namespace tiletune

// The contract of every search strategy (tuner/search/search_strategy.h): no index proposed twice,
// the whole space in the end, batches within max_count, the same path for the same seed and
// outcomes whatever the order they are told in, failures taken in stride.
#include "tuner/search/search_strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>

#include "tests/support/source_tree.h"
#include "tuner/core/configurations.h"
#include "tuner/search/configuration_space.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using testing_support::kTemplates;

// An outcome for every index that depends on nothing but the index: a bumpy time, and a failure
// for one in seven (or all of them).
std::optional<double> outcome(std::size_t index, bool all_fail = false) {
  if (all_fail || index % 7 == 3) return std::nullopt;
  return 1.0 + double((index * 37) % 101) / 50;
}

struct SearchRun {
  std::vector<std::vector<std::size_t>> batches;
  std::vector<std::size_t> proposed() const {
    std::vector<std::size_t> all;
    for (const auto& batch : batches) all.insert(all.end(), batch.begin(), batch.end());
    return all;
  }
};

// Asks for batches of the sizes given in turn until the strategy has nothing left (or `limit`
// batches), telling each batch's outcomes in proposal order or reversed.
SearchRun run_to_the_end(SearchStrategy& search, const std::vector<std::size_t>& batch_sizes,
                   std::size_t limit = SIZE_MAX, bool tell_reversed = false, bool all_fail = false) {
  SearchRun run;
  for (std::size_t turn = 0; turn < limit; ++turn) {
    const std::size_t max_count = batch_sizes[turn % batch_sizes.size()];
    std::vector<std::size_t> batch = search.propose(max_count);
    EXPECT_LE(batch.size(), max_count);
    if (batch.empty()) break;
    run.batches.push_back(batch);
    if (tell_reversed) std::reverse(batch.begin(), batch.end());
    for (const std::size_t index : batch) search.observe(index, outcome(index, all_fail));
  }
  return run;
}

struct Space {
  KernelTemplate tmpl;
  std::vector<Configuration> configs;
};

Space space_of(const std::string& file, const GemmShape* shape = nullptr) {
  Space space{load_template(kTemplates / file), {}};
  space.configs = enumerate_configurations(space.tmpl, shape);
  return space;
}

// Every index proposed exactly once, and batches short only at the very end.
void expect_each_index_once(const SearchRun& run, std::size_t space_size,
                            const std::vector<std::size_t>& batch_sizes) {
  std::vector<std::size_t> proposed = run.proposed();
  std::sort(proposed.begin(), proposed.end());
  std::vector<std::size_t> every(space_size);
  std::iota(every.begin(), every.end(), 0);
  EXPECT_EQ(proposed, every);
  for (std::size_t turn = 0; turn + 1 < run.batches.size(); ++turn) {
    EXPECT_EQ(run.batches[turn].size(), batch_sizes[turn % batch_sizes.size()])
        << "batch " << turn << " is short before the space ran out";
  }
}

class EveryStrategy : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryStrategy, ProposesTheWholeSpaceOnceEach) {
  const GemmShape square{4096, 4096, 4096};
  for (const auto& [file, shape] : std::vector<std::pair<std::string, const GemmShape*>>{
           {"tiled.cu", nullptr}, {"naive.cu", nullptr}, {"warp_tiled.cu", &square}, {"warp_tiled.cu", nullptr}}) {
    const Space space = space_of(file, shape);
    for (const std::vector<std::size_t>& batch_sizes :
         std::vector<std::vector<std::size_t>>{{1}, {16}, {7, 3, 12}}) {
      SCOPED_TRACE(file + (shape ? " at " + shape->to_string() : "") + ", first batch of " +
                   std::to_string(batch_sizes[0]));
      const auto search = make_search_strategy(GetParam(), space.tmpl, space.configs, 11);
      EXPECT_EQ(search->name(), GetParam());
      const SearchRun run = run_to_the_end(*search, batch_sizes);
      expect_each_index_once(run, space.configs.size(), batch_sizes);
      EXPECT_THAT(search->propose(4), IsEmpty()) << "asked again once the space is exhausted";
    }
  }
}

TEST_P(EveryStrategy, GoesOnWhenEveryConfigurationFails) {
  const Space space = space_of("warp_tiled.cu");
  const auto search = make_search_strategy(GetParam(), space.tmpl, space.configs, 5);
  const SearchRun run = run_to_the_end(*search, {16}, SIZE_MAX, false, /*all_fail=*/true);
  expect_each_index_once(run, space.configs.size(), {16});
}

TEST_P(EveryStrategy, SameSeedAndOutcomesGiveTheSamePathWhateverTheOrderTheyAreTold) {
  const Space space = space_of("warp_tiled.cu");
  const auto first = make_search_strategy(GetParam(), space.tmpl, space.configs, 42);
  const auto again = make_search_strategy(GetParam(), space.tmpl, space.configs, 42);
  const SearchRun run = run_to_the_end(*first, {12}, 10);
  const SearchRun rerun = run_to_the_end(*again, {12}, 10, /*tell_reversed=*/true);
  EXPECT_EQ(run.batches, rerun.batches);

  const auto other_seed = make_search_strategy(GetParam(), space.tmpl, space.configs, 43);
  const SearchRun other = run_to_the_end(*other_seed, {12}, 10);
  if (GetParam() == "exhaustive") {
    EXPECT_EQ(other.batches, run.batches) << "the space's order has no seed";
  } else {
    EXPECT_NE(other.batches, run.batches);
  }
}

TEST_P(EveryStrategy, NeverProposesAnIndexToldBeforeItWasProposed) {
  // As when a tune resumes and tells what the database already holds.
  const Space space = space_of("naive.cu");
  const auto search = make_search_strategy(GetParam(), space.tmpl, space.configs, 3);
  for (const std::size_t index : {0u, 5u, 20u}) search->observe(index, outcome(index));
  const SearchRun run = run_to_the_end(*search, {4});
  std::vector<std::size_t> proposed = run.proposed();
  std::sort(proposed.begin(), proposed.end());
  std::vector<std::size_t> expected;
  for (std::size_t i = 0; i < space.configs.size(); ++i) {
    if (i != 0 && i != 5 && i != 20) expected.push_back(i);
  }
  EXPECT_EQ(proposed, expected);
}

TEST_P(EveryStrategy, AskingForNothingIsAnError) {
  const Space space = space_of("tiled.cu");
  const auto search = make_search_strategy(GetParam(), space.tmpl, space.configs, 1);
  EXPECT_THROW(search->propose(0), std::invalid_argument);
}

TEST_P(EveryStrategy, AnEmptySpaceHasNothingToPropose) {
  const Space space = space_of("tiled.cu");
  const auto search = make_search_strategy(GetParam(), space.tmpl, {}, 1);
  EXPECT_THAT(search->propose(8), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(SearchStrategy, EveryStrategy,
                         ::testing::ValuesIn(search_strategy_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(SearchStrategy, NamesAreTheFiveStrategies) {
  EXPECT_THAT(search_strategy_names(), ElementsAre("exhaustive", "random", "annealing", "genetic", "bayes"));
}

TEST(SearchStrategy, UnknownNameIsRejectedWithTheChoices) {
  const Space space = space_of("tiled.cu");
  try {
    make_search_strategy("bayesian", space.tmpl, space.configs, 1);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "unknown search strategy 'bayesian' (choose exhaustive, random, annealing, genetic, bayes)");
  }
}

TEST(SearchStrategy, ExhaustiveFollowsTheSpaceOrder) {
  const Space space = space_of("tiled.cu");
  const auto search = make_search_strategy("exhaustive", space.tmpl, space.configs, 1);
  const SearchRun run = run_to_the_end(*search, {4});
  EXPECT_THAT(run.batches, ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7), ElementsAre(8)));
}

TEST(SearchStrategy, GuidedStrategiesStartWithTheWarmStartThenSpreadOut) {
  const Space space = space_of("warp_tiled.cu");
  const std::vector<std::size_t> warm_start{40, 7, 123, 7};
  for (const char* name : {"annealing", "genetic", "bayes"}) {
    SCOPED_TRACE(name);
    const auto search = make_search_strategy(name, space.tmpl, space.configs, 9, warm_start);
    const SearchRun run = run_to_the_end(*search, {6}, 3);
    EXPECT_THAT(run.batches[0], ::testing::ElementsAre(40, 7, 123, ::testing::_, ::testing::_, ::testing::_))
        << "the warm start first, in its order, once each";
    // The rest of the first batch is spread out: nothing at one step from a warm-start point.
    ConfigurationSpace points(space.tmpl, space.configs);
    for (std::size_t i = 3; i < 6; ++i) {
      for (const std::size_t start : {40u, 7u, 123u}) {
        EXPECT_GT(ConfigurationSpace::distance(points.point(run.batches[0][i]), points.point(start)), 1u);
      }
    }
    std::vector<std::size_t> proposed = run.proposed();
    EXPECT_EQ(std::count(proposed.begin(), proposed.end(), 7u), 1) << "a warm-start point is proposed once";
  }
}

TEST(SearchStrategy, AWarmStartLargerThanTheBatchFillsSeveral) {
  const Space space = space_of("warp_tiled.cu");
  const auto search = make_search_strategy("annealing", space.tmpl, space.configs, 9, {1, 2, 3, 4, 5});
  EXPECT_THAT(search->propose(2), ElementsAre(1, 2));
}

TEST(SearchStrategy, ExhaustiveAndRandomIgnoreAWarmStart) {
  const Space space = space_of("tiled.cu");
  for (const char* name : {"exhaustive", "random"}) {
    const SearchRun cold = run_to_the_end(*make_search_strategy(name, space.tmpl, space.configs, 4), {5});
    const SearchRun warm = run_to_the_end(*make_search_strategy(name, space.tmpl, space.configs, 4, {3, 1}), {5});
    EXPECT_EQ(cold.batches, warm.batches) << name;
  }
}

TEST(SearchStrategy, AWarmStartOutsideTheSpaceIsRejected) {
  const Space space = space_of("tiled.cu");
  try {
    make_search_strategy("genetic", space.tmpl, space.configs, 1, {space.configs.size()});
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("outside a space of"));
  }
}

TEST(SearchStrategy, GuidedStrategiesRejectAConfigurationOfAnotherTemplate) {
  const Space tiled = space_of("tiled.cu");
  const Space naive = space_of("naive.cu");
  for (const char* name : {"annealing", "genetic", "bayes"}) {
    EXPECT_THROW(make_search_strategy(name, tiled.tmpl, naive.configs, 1), std::invalid_argument) << name;
  }
}

}  // namespace
}  // namespace tiletune

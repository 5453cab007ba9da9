// TuneShard (tuner/search/tune_shard.h): "I/N" read or refused in one line; the configurations of
// a template shared out disjointly and completely, by a hash the same on every machine; pairs dealt
// round-robin whatever their order; an exhaustive or random search cut into shards that together
// propose exactly the one process's first B configurations, in its order.
#include "tuner/search/tune_shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/source_tree.h"
#include "tuner/core/configurations.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using ::testing::StartsWith;

using testing_support::kTemplates;

std::vector<TuneShard> all_shards(unsigned count) {
  std::vector<TuneShard> shards;
  for (unsigned i = 0; i < count; ++i) shards.push_back(TuneShard::parse(fmt::format("{}/{}", i, count)));
  return shards;
}

TEST(TuneShard, ReadsIOfN) {
  EXPECT_TRUE(TuneShard().whole());
  const TuneShard one = TuneShard::parse("0/1");
  EXPECT_TRUE(one.whole());
  const TuneShard shard = TuneShard::parse("2/4");
  EXPECT_EQ(shard.index(), 2u);
  EXPECT_EQ(shard.count(), 4u);
  EXPECT_FALSE(shard.whole());
  EXPECT_EQ(shard.to_string(), "2/4");
}

TEST(TuneShard, RefusesAnythingButIBelowN) {
  for (const char* text : {"4/4", "5/4", "0/0", "", "3", "x/4", "1/", "/2", "-1/2", "1/2/3", "1 /2",
                           "+1/2", "1/99999999999"}) {
    try {
      TuneShard::parse(text);
      ADD_FAILURE() << "'" << text << "' was read";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), StartsWith(fmt::format("--shard '{}': ", text)));
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Every configuration of warp_tiled's space has exactly one owner among N shards, each shard some.
TEST(TuneShard, ConfigurationsArePartitionedDisjointlyAndCompletely) {
  const KernelTemplate tmpl = load_template(kTemplates / "warp_tiled.cu");
  const std::vector<Configuration> space = enumerate_configurations(tmpl, nullptr);
  ASSERT_GT(space.size(), 100u);
  for (const unsigned count : {1u, 2u, 3u, 7u}) {
    std::vector<int> per_shard(count);
    for (const Configuration& config : space) {
      int owners = 0;
      for (const TuneShard& shard : all_shards(count)) {
        if (shard.owns_configuration(tmpl.source_hash, config.to_string())) {
          ++owners;
          ++per_shard[shard.index()];
        }
      }
      EXPECT_EQ(owners, 1) << config.to_string() << " among " << count;
    }
    for (unsigned i = 0; i < count; ++i) {
      EXPECT_GT(per_shard[i], int(space.size() / count / 2)) << "shard " << i << "/" << count;
    }
  }
}

// The owner is a function of the template's source hash and the configuration's text alone, the
// same on every machine and build (FNV-1a, then SplitMix64's finalizer; computed independently).
TEST(TuneShard, TheOwnerOfAConfigurationIsFixedAcrossMachines) {
  EXPECT_TRUE(TuneShard::parse("72/1000").owns_configuration("0123456789abcdef", "BM=64,BN=64,BK=16"));
  EXPECT_TRUE(TuneShard::parse("912/1000").owns_configuration("h1", "TILE=16"));
  EXPECT_TRUE(TuneShard::parse("303/1000").owns_configuration("h1", "TILE=32"));
  EXPECT_FALSE(TuneShard::parse("912/1000").owns_configuration("h2", "TILE=16"));
}

// Guided searches: the pairs are dealt round-robin in a fixed order, so that the shards differ by
// one pair at most, and the same pairs are owned whatever order they are given in; a pair given
// twice has one owner.
TEST(TuneShard, PairsAreDealtTheSameWhateverTheirOrder) {
  std::vector<TuneShard::Pair> pairs;
  for (const char* name : {"tiled", "naive", "warp_tiled"}) {
    for (const GemmShape shape : {GemmShape{64, 64, 64}, GemmShape{128, 32, 16}, GemmShape{40, 36, 20}}) {
      pairs.push_back({name, std::string(name) + "-hash", shape});
    }
  }
  const auto owners = [](const std::vector<TuneShard::Pair>& given, unsigned count) {
    std::map<std::string, std::set<unsigned>> owner;
    for (const TuneShard& shard : all_shards(count)) {
      const std::vector<bool> owned = shard.owned_pairs(given);
      for (std::size_t i = 0; i < given.size(); ++i) {
        if (owned[i]) owner[given[i].template_name + " " + given[i].shape.to_string()].insert(shard.index());
      }
    }
    return owner;
  };
  std::vector<TuneShard::Pair> shuffled = pairs;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  std::vector<TuneShard::Pair> twice = pairs;
  twice.insert(twice.end(), pairs.begin(), pairs.end());
  for (const unsigned count : {1u, 2u, 4u, 12u}) {
    const auto dealt = owners(pairs, count);
    ASSERT_EQ(dealt.size(), pairs.size());
    std::vector<int> per_shard(count);
    for (const auto& [pair, shards] : dealt) {
      ASSERT_EQ(shards.size(), 1u) << pair;
      ++per_shard[*shards.begin()];
    }
    const auto [fewest, most] = std::minmax_element(per_shard.begin(), per_shard.end());
    EXPECT_LE(*most - *fewest, 1) << count << " shards";
    EXPECT_EQ(owners(shuffled, count), dealt) << count << " shards";
    EXPECT_EQ(owners(twice, count), dealt) << count << " shards";
  }
}

// What the shards of an exhaustive or random search propose, together, is the one process's first
// B proposals: each shard's in the whole search's order, no configuration twice.
TEST(TuneShard, CutSearchesTogetherProposeTheWholeSearchsFirstConfigurations) {
  const KernelTemplate tmpl = load_template(kTemplates / "warp_tiled.cu");
  const GemmShape shape{256, 256, 64};
  const std::vector<Configuration> space = enumerate_configurations(tmpl, &shape);
  for (const char* strategy : {"exhaustive", "random"}) {
    for (const std::size_t budget : {space.size(), std::size_t(40)}) {
      SCOPED_TRACE(fmt::format("{}, budget {}", strategy, budget));
      const std::vector<std::size_t> whole = make_search_strategy(strategy, tmpl, space, 3)->propose(budget);
      std::vector<std::size_t> together;
      for (const TuneShard& shard : all_shards(3)) {
        std::size_t limit = budget;
        auto cut = shard.cut(make_search_strategy(strategy, tmpl, space, 3), limit, tmpl.source_hash, space);
        std::vector<std::size_t> proposed;
        for (std::vector<std::size_t> batch; !(batch = cut->propose(5)).empty();) {
          for (const std::size_t index : batch) {
            proposed.push_back(index);
            cut->observe(index, 1.0);
          }
        }
        EXPECT_EQ(proposed.size(), limit);
        std::vector<std::size_t> in_whole_order;
        for (const std::size_t index : whole) {
          if (std::find(proposed.begin(), proposed.end(), index) != proposed.end()) in_whole_order.push_back(index);
        }
        EXPECT_EQ(proposed, in_whole_order);
        together.insert(together.end(), proposed.begin(), proposed.end());
      }
      std::sort(together.begin(), together.end());
      std::vector<std::size_t> expected = whole;
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(together, expected);
    }
  }
}

}  // namespace
}  // namespace tiletune

// How good the guided strategies are on real measured spaces: warp_tiled tuned exhaustively at 9
// shapes on an H100 (fixtures/warp_tiled_h100.tsv, exported by tools/scripts/export_recorded_spaces.sh),
// each strategy replayed against the recorded times as `tiletune strategies` replays them
// (batches of 16, 40 seeds, a fifth of the space).
//  - Warm started from the other shapes (the 3 nearest, as a tune would be if they had been
//    recorded first), annealing, genetic and bayes come within 3% of the optimum at every shape.
//  - Warm started only from 4096^3 and 2048^3 (the order of the issue's benchmark), they find
//    1000^3's optimum, which a cold start misses: it stands alone, every configuration within two
//    steps of it being 5% slower, and the cold searches settle on the second best (3.8% slower).
//  - From a cold start they never do worse than random search (median), and come within 3% at
//    7 or more of the 9 shapes; 1000^3 is always among the misses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "tuner/core/configurations.h"
#include "tuner/search/search_replay.h"
#include "tuner/search/warm_start.h"

namespace tiletune {
namespace {

const std::filesystem::path kFixture =
    std::filesystem::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "search" / "warp_tiled_h100.tsv";
constexpr int kSeeds = 40;
constexpr std::size_t kBatch = 16;
constexpr double kBudgetShare = 0.2;
const char* const kGuided[] = {"annealing", "genetic", "bayes"};

struct RecordedSpace {
  GemmShape shape;
  std::vector<Configuration> space;
  std::vector<std::optional<double>> times;  // per configuration; nullopt unless ok
  double optimum = 0;
  RecordedRanking ranking;  // ok configurations, fastest first
};

// The fixture: the template from its declaration lines, and each shape's recorded times.
class RecordedSpaces : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::ifstream file(kFixture);
    ASSERT_TRUE(file) << "cannot read " << kFixture;
    std::string declarations, line;
    std::map<std::string, std::map<std::string, std::optional<double>>> rows;
    while (std::getline(file, line)) {
      if (line.starts_with("# //")) declarations += line.substr(2) + "\n";
      if (line.empty() || line.starts_with("#") || line.starts_with("shape\t")) continue;
      std::istringstream fields(line);
      std::string shape, config, status, median;
      std::getline(fields, shape, '\t');
      std::getline(fields, config, '\t');
      std::getline(fields, status, '\t');
      std::getline(fields, median, '\t');
      rows[shape][config] = status == "ok" ? std::optional(std::stod(median)) : std::nullopt;
    }
    tmpl_ = new KernelTemplate(parse_template(declarations, kFixture.string()));
    for (const auto& [text, recorded] : rows) {
      RecordedSpace r;
      r.shape = GemmShape::parse(text);
      r.space = enumerate_configurations(*tmpl_, &r.shape);
      ASSERT_EQ(r.space.size(), recorded.size()) << text << ": the fixture must cover the whole space";
      std::vector<std::pair<double, std::string>> ok;
      for (const Configuration& config : r.space) {
        const auto found = recorded.find(config.to_string());
        ASSERT_NE(found, recorded.end()) << text << ": " << config.to_string() << " not recorded";
        r.times.push_back(found->second);
        if (found->second) ok.emplace_back(*found->second, found->first);
      }
      std::sort(ok.begin(), ok.end());
      r.optimum = ok.front().first;
      r.ranking.shape = r.shape;
      for (const auto& [time, config] : ok) r.ranking.fastest.push_back(config);
      spaces_->push_back(std::move(r));
    }
  }

  // The warm start a tune of `target` takes when the shapes `recorded` were tuned before it.
  static std::vector<std::size_t> warm_start_for(const RecordedSpace& target, const std::vector<GemmShape>& recorded) {
    std::vector<RecordedRanking> rankings;
    for (const GemmShape& nearby : nearest_shapes(target.shape, recorded)) rankings.push_back(find(nearby).ranking);
    return warm_start_points(target.space, rankings);
  }

  static std::vector<GemmShape> every_shape() {
    std::vector<GemmShape> shapes;
    for (const RecordedSpace& r : *spaces_) shapes.push_back(r.shape);
    return shapes;
  }

  static const RecordedSpace& find(const GemmShape& shape) {
    const auto found = std::find_if(spaces_->begin(), spaces_->end(), [&](const RecordedSpace& r) { return r.shape == shape; });
    EXPECT_NE(found, spaces_->end()) << shape.to_string() << " is not in the fixture";
    return *found;
  }

  struct Quality {
    double median = 0;  // of best found / optimum over the seeds
    int within_3_percent = 0;
  };

  static Quality replay(const std::string& strategy, const RecordedSpace& r,
                        const std::vector<std::size_t>& warm_start = {}) {
    const auto budget = std::size_t(std::ceil(kBudgetShare * double(r.space.size())));
    std::vector<double> ratios;
    for (int seed = 1; seed <= kSeeds; ++seed) {
      const ReplayOutcome outcome =
          replay_search(strategy, *tmpl_, r.space, r.times, std::uint64_t(seed), budget, kBatch, warm_start);
      ratios.push_back(outcome.best_time_ms.value_or(INFINITY) / r.optimum);
    }
    std::sort(ratios.begin(), ratios.end());
    return {ratios[ratios.size() / 2],
            int(std::count_if(ratios.begin(), ratios.end(), [](double ratio) { return ratio <= 1.03; }))};
  }

  static inline KernelTemplate* tmpl_ = nullptr;
  static inline std::vector<RecordedSpace>* spaces_ = new std::vector<RecordedSpace>;
};

TEST_F(RecordedSpaces, TheFixtureHoldsNineShapesOfWarpTiled) {
  EXPECT_EQ(tmpl_->name, "warp_tiled");
  EXPECT_EQ(spaces_->size(), 9u);
  EXPECT_NO_FATAL_FAILURE(find(GemmShape{1000, 1000, 1000}));
}

TEST_F(RecordedSpaces, WarmStartedGuidedSearchesComeWithin3PercentAtEveryShape) {
  for (const RecordedSpace& r : *spaces_) {
    const std::vector<std::size_t> warm_start = warm_start_for(r, every_shape());
    ASSERT_FALSE(warm_start.empty()) << r.shape.to_string();
    for (const char* strategy : kGuided) {
      const Quality quality = replay(strategy, r, warm_start);
      EXPECT_LE(quality.median, 1.03) << strategy << " at " << r.shape.to_string();
      EXPECT_GE(quality.within_3_percent, kSeeds * 9 / 10) << strategy << " at " << r.shape.to_string();
    }
  }
}

TEST_F(RecordedSpaces, AWarmStartFromLargerSquaresFindsTheLoneOptimumOf1000Cubed) {
  const RecordedSpace& r = find(GemmShape{1000, 1000, 1000});
  const std::vector<std::size_t> warm_start = warm_start_for(r, {{4096, 4096, 4096}, {2048, 2048, 2048}});
  for (const char* strategy : kGuided) {
    EXPECT_GT(replay(strategy, r).median, 1.03) << strategy << ", cold: the second best local optimum";
    const Quality warm = replay(strategy, r, warm_start);
    EXPECT_EQ(warm.median, 1.0) << strategy;
    EXPECT_GE(warm.within_3_percent, kSeeds * 9 / 10) << strategy;
  }
}

TEST_F(RecordedSpaces, ColdStartedGuidedSearchesBeatRandomAndMostlyComeWithin3Percent) {
  for (const char* strategy : kGuided) {
    int shapes_within = 0;
    for (const RecordedSpace& r : *spaces_) {
      const Quality random = replay("random", r);
      const Quality quality = replay(strategy, r);
      fmt::print("{:<16} {:<10} median {:.4f}, within 3% {}/{} (random {:.4f})\n", r.shape.to_string(),
                 strategy, quality.median, quality.within_3_percent, kSeeds, random.median);
      EXPECT_LE(quality.median, random.median) << strategy << " at " << r.shape.to_string();
      shapes_within += quality.median <= 1.03 ? 1 : 0;
    }
    EXPECT_GE(shapes_within, 7) << strategy;
  }
}

}  // namespace
}  // namespace tiletune

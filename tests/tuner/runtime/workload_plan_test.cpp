// Which workload shapes to tune (tuner/runtime/workload_plan.h): the workload file read as a user
// writes it, and refused in one line where it is wrong; the plan on records built by hand (the
// greedy choice worked out, a budget's plan the start of a longer one, the recorded shapes never
// planned, 2MNK where nothing predicts); and on the H200 selection fixture, where tuning the shapes
// planned must leave the library's choice over the whole workload nearer the best than tuning none.
#include "tuner/runtime/workload_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <unistd.h>

#include "tests/support/tuned_fixture.h"
#include "tuner/runtime/selection.h"

namespace tiletune::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class WorkloadFile : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& text) {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("tiletune_workload_" + std::to_string(getpid()) + ".txt");
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  std::vector<std::filesystem::path> paths_;
};

TEST_F(WorkloadFile, ReadsShapesCallsAndCommentsAndAddsTheCallsOfAShapeGivenTwice) {
  const auto workload = read_workload(write("# a transformer layer\n4096x768x768 12   # attention\n\n"
                                            "  4096x3072x768\n4096x768x768 0.5\n"));
  ASSERT_EQ(workload.size(), 2u);
  EXPECT_EQ(workload[0].shape, (GemmShape{4096, 768, 768}));
  EXPECT_DOUBLE_EQ(workload[0].calls, 12.5);
  EXPECT_EQ(workload[1].shape, (GemmShape{4096, 3072, 768}));
  EXPECT_DOUBLE_EQ(workload[1].calls, 1);
}

TEST_F(WorkloadFile, ABadLineIsRefusedWithItsNumberAndCause) {
  const auto refused = [&](const std::string& text, const std::string& cause) {
    const std::filesystem::path path = write(text);
    try {
      read_workload(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const WorkloadError& e) {
      EXPECT_THAT(e.what(), HasSubstr(cause)) << text;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    }
  };
  refused("64x64x64\n64x64\n", ":2: invalid shape '64x64'");
  refused("64x64x64 -3\n", ":1: calls '-3' is not a positive number");
  refused("64x64x64 2 3\n", ":1: '3' after the calls");
  refused("64x64x64 nan\n", ":1: calls 'nan' is not a positive number");
  refused("# nothing\n\n", "names no shape");
  EXPECT_THROW(read_workload("/nonexistent/workload.txt"), WorkloadError);
}

// One template whose records make the plan's weights 2MNK (no configuration is recorded at enough
// shapes for a model, and none is lent).
RecordSet records_at(const std::vector<GemmShape>& shapes) {
  RecordSet records;
  RecordedTemplate t;
  t.name = "t";
  records.templates.push_back(t);
  records.gpus.push_back({"GPU", 9, 0, 132, 0});
  for (const GemmShape& s : shapes) {
    RecordedChoice c;
    c.config = "X=1";
    c.shape = s;
    c.median_ms = 1;
    records.choices.push_back(c);
  }
  return records;
}

WorkloadRequest request_of(std::vector<WorkloadShape> workload, std::size_t budget) {
  WorkloadRequest request;
  request.workload = std::move(workload);
  request.templates = {"t"};
  request.gpu_name = "GPU";
  request.budget = budget;
  return request;
}

TEST(WorkloadPlan, TakesTheShapeThatBringsMostOfTheWeightNearestFirstAndNeverARecordedOne) {
  // 1024^3 is recorded. Weighed by 2MNK: 4096^3 first (its own weight and 4096x4096x2048's come
  // near), then 4096x4096x2048 (2x its K away is still 6.9e10 flops x distance 1), then the light
  // far ones, the heavier first.
  const RecordSet records = records_at({{1024, 1024, 1024}});
  PerformanceModels models(records);
  const std::vector<WorkloadShape> workload{{{1024, 1024, 1024}, 50}, {{4096, 4096, 4096}, 1},
                                            {{4096, 4096, 2048}, 1},  {{64, 64, 64}, 1},
                                            {{128, 8192, 128}, 1}};
  const WorkloadPlan plan = plan_workload(records, models, request_of(workload, 4));
  EXPECT_FALSE(plan.weighed_by_model);
  EXPECT_THAT(plan.already_tuned, ElementsAre(GemmShape{1024, 1024, 1024}));
  ASSERT_EQ(plan.to_tune.size(), 4u);
  EXPECT_EQ(plan.to_tune[0].shape, (GemmShape{4096, 4096, 4096}));
  EXPECT_EQ(plan.to_tune[1].shape, (GemmShape{4096, 4096, 2048}));
  EXPECT_EQ(plan.to_tune[2].shape, (GemmShape{128, 8192, 128}));
  EXPECT_EQ(plan.to_tune[3].shape, (GemmShape{64, 64, 64}));
  EXPECT_LT(plan.mean_distance_after, plan.mean_distance_before);
  EXPECT_DOUBLE_EQ(plan.mean_distance_after, 0) << "every shape is tuned";
  EXPECT_DOUBLE_EQ(plan.near_share_after, 1);
  double shares = 0;
  for (const PlannedShape& p : plan.to_tune) shares += p.share;
  const double recorded_share = 50 * GemmShape{1024, 1024, 1024}.flops() / plan.total_weight;
  EXPECT_NEAR(shares + recorded_share, 1.0, 1e-12);

  const WorkloadPlan shorter = plan_workload(records, models, request_of(workload, 1));
  ASSERT_EQ(shorter.to_tune.size(), 1u);
  EXPECT_EQ(shorter.to_tune[0].shape, plan.to_tune[0].shape) << "a budget's plan starts the longer one";
  EXPECT_EQ(shorter.to_tune[0].shapes_nearest, 2) << "4096x4096x2048 is nearest to it too";
  const WorkloadPlan everything = plan_workload(records, models, request_of(workload, 100));
  EXPECT_EQ(everything.to_tune.size(), 4u) << "all but the recorded shape";
}

TEST(WorkloadPlan, AShapeCountsAsTunedOnlyWhereEveryTemplatePlannedIsRecorded) {
  const RecordSet records = records_at({{1024, 1024, 1024}});
  PerformanceModels models(records);
  WorkloadRequest request = request_of({{{1024, 1024, 1024}, 1}, {{64, 64, 64}, 1}}, 1);
  request.templates = {"t", "not_recorded"};
  const WorkloadPlan plan = plan_workload(records, models, request);
  EXPECT_TRUE(plan.already_tuned.empty());
  ASSERT_EQ(plan.to_tune.size(), 1u);
  EXPECT_EQ(plan.to_tune[0].shape, (GemmShape{1024, 1024, 1024})) << "the heavier one";
}

// The choice over the whole workload: its time over the best there, the shapes weighed by their
// best times; a shape tuned counts at 1.
double workload_ratio(const RecordSet& served, const RecordSet& truth, const std::string& templ) {
  std::map<GemmShape, std::map<std::string, double>> times;
  for (const RecordedChoice& c : truth.choices) {
    if (truth.templates[c.templ].name == templ) times[c.shape][c.config] = c.median_ms;
  }
  PerformanceModels models(served);
  double chosen = 0, best = 0;
  for (const auto& [shape, configs] : times) {
    double fastest = 1e300;
    for (const auto& [config, ms] : configs) fastest = std::min(fastest, ms);
    SelectionRequest request;
    request.template_name = templ;
    request.problem = GemmProblem::packed(shape);
    request.gpu_name = testing_support::kSelectionFixtureGpu;
    const Selection selection = select_configuration(served, request, &models);
    const auto time = configs.find(selection.config);
    chosen += time == configs.end() ? 1.3 * fastest : time->second;  // unmeasured: as a poor choice
    best += fastest;
  }
  return chosen / best;
}

// `into` with the records of `from` at the shapes, matched by GPU and template name.
RecordSet with_shapes(RecordSet into, const RecordSet& from, const std::vector<GemmShape>& shapes) {
  for (const RecordedChoice& c : from.choices) {
    if (std::find(shapes.begin(), shapes.end(), c.shape) == shapes.end()) continue;
    RecordedChoice added = c;
    added.gpu = std::find_if(into.gpus.begin(), into.gpus.end(),
                             [&](const RecordedGpu& g) { return g.name == from.gpus[c.gpu].name; }) -
                into.gpus.begin();
    added.templ = into.find_template(from.templates[c.templ].name) - into.templates.data();
    into.choices.push_back(added);
  }
  sort_choices(into);
  return into;
}

class WorkloadPlanOnFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto dir = std::filesystem::temp_directory_path() / ("tiletune_plan_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    suite_ = new RecordSet(load_database_records(testing_support::load_selection_fixture("suite", dir / "suite.db")));
    heldout_ = new RecordSet(
        load_database_records(testing_support::load_selection_fixture("heldout", dir / "heldout.db")));
    std::filesystem::remove_all(dir);
  }
  static void TearDownTestSuite() {
    delete suite_;
    delete heldout_;
  }
  static RecordSet* suite_;
  static RecordSet* heldout_;
};
RecordSet* WorkloadPlanOnFixture::suite_ = nullptr;
RecordSet* WorkloadPlanOnFixture::heldout_ = nullptr;

// The held-out shapes as a workload (each called once), warp_tiled planned from the suite: tuning
// the 4 shapes planned closes at least a third of the gap between the workload's time and its best
// (1.016x -> 1.009x), and more than most random sets of 4 shapes do (the median of 20).
TEST_F(WorkloadPlanOnFixture, TuningThePlannedShapesBringsTheWorkloadsChoiceNearerItsBest) {
  WorkloadRequest request;
  std::set<GemmShape> shapes;
  for (const RecordedChoice& c : heldout_->choices) shapes.insert(c.shape);
  for (const GemmShape& s : shapes) request.workload.push_back({s, 1});
  request.templates = {"warp_tiled"};
  request.gpu_name = testing_support::kSelectionFixtureGpu;
  request.budget = 4;
  PerformanceModels models(*suite_);
  const WorkloadPlan plan = plan_workload(*suite_, models, request);
  ASSERT_TRUE(plan.weighed_by_model);
  ASSERT_EQ(plan.to_tune.size(), 4u);
  EXPECT_TRUE(plan.already_tuned.empty()) << "the held-out shapes are none of the suite's";
  std::vector<GemmShape> planned;
  for (const PlannedShape& p : plan.to_tune) planned.push_back(p.shape);

  const double untuned = workload_ratio(*suite_, *heldout_, "warp_tiled");
  const double tuned = workload_ratio(with_shapes(*suite_, *heldout_, planned), *heldout_, "warp_tiled");
  EXPECT_LT(tuned, untuned - (untuned - 1) / 3) << "untuned " << untuned << ", planned shapes tuned " << tuned;
  std::vector<GemmShape> all(shapes.begin(), shapes.end());
  std::mt19937 random(7);
  std::vector<double> drawn;
  for (int i = 0; i < 20; ++i) {
    std::shuffle(all.begin(), all.end(), random);
    drawn.push_back(workload_ratio(with_shapes(*suite_, *heldout_, {all.begin(), all.begin() + 4}),
                                   *heldout_, "warp_tiled"));
  }
  std::nth_element(drawn.begin(), drawn.begin() + 10, drawn.end());
  EXPECT_LT(tuned, drawn[10]) << "the median of 20 random sets of 4";
  // The smallest 4 shapes instead: the time the workload spends elsewhere stays as far as it was.
  std::vector<GemmShape> smallest(shapes.begin(), shapes.end());
  std::sort(smallest.begin(), smallest.end(), [](const GemmShape& a, const GemmShape& b) { return a.flops() < b.flops(); });
  smallest.resize(4);
  EXPECT_LT(tuned, workload_ratio(with_shapes(*suite_, *heldout_, smallest), *heldout_, "warp_tiled"));
}

}  // namespace
}  // namespace tiletune::runtime

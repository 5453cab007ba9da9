// The choice at shapes nobody tuned, measured as a user measures it: `tiletune selection-eval`
// on the selection fixture (tests/fixtures/selection: exhaustive H200 tunes at bench's suite and
// at 23 held-out workload shapes). The performance model must keep within the targets of the
// library's choice there (geometric mean 1.05x the best, worst 1.25x) for warp_tiled and the TF32
// templates, and beat the nearest recorded shape's choice; `query` says which chose and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/run_tiletune.h"
#include "tests/support/tuned_fixture.h"
#include "tuner/runtime/bundle_export.h"
#include "tuner/runtime/workload_plan.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::read_text;

// Per template: the model's geometric mean and worst, and the nearest shape's geometric mean.
struct Summary {
  double model_mean = 0, model_worst = 0, nearest_mean = 0;
};

std::map<std::string, Summary> summaries(const std::string& out) {
  static const std::regex line(
      R"(^(\w+): model geomean ([0-9.]+), worst ([0-9.]+) .*; nearest shape geomean ([0-9.]+),.*)");
  std::map<std::string, Summary> result;
  for (const std::string& text : lines_of(out)) {
    std::smatch m;
    if (std::regex_match(text, m, line)) {
      result[m[1]] = {std::stod(m[2]), std::stod(m[3]), std::stod(m[4])};
    }
  }
  return result;
}

class SelectionEvalCli : public testing_tools::TiletuneFolderTest {
 protected:
  SelectionEvalCli() : TiletuneFolderTest("tiletune_selection_eval_") {}
  void SetUp() override {
    TiletuneFolderTest::SetUp();
    suite_ = dir_ / "suite.db";
    truth_ = dir_ / "heldout.db";
    testing_support::load_selection_fixture("suite", suite_);
    testing_support::load_selection_fixture("heldout", truth_);
  }
  std::filesystem::path suite_, truth_;
};

TEST_F(SelectionEvalCli, TheModelsChoiceAtHeldOutShapesKeepsWithinTheTargets) {
  const auto run = tiletune({"selection-eval", "--db", suite_.string(), "--truth", truth_.string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("251 held-out shapes of 11 templates evaluated")) << run;
  const std::map<std::string, Summary> found = summaries(run.out);
  for (const char* name : {"warp_tiled", "tf32_mma", "tf32_wgmma", "tf32_wgmma_rounded_loads",
                           "tf32_wgmma_specialized", "tf32_wgmma_tma", "tf32_wgmma_transposed_b",
                           "tf32x3_mma", "tf32x3_wgmma"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(found.contains(name)) << run;
    const Summary& s = found.at(name);
    EXPECT_LE(s.model_mean, 1.05);
    EXPECT_LE(s.model_worst, 1.25);
    EXPECT_LE(s.model_mean, s.nearest_mean);
  }
  EXPECT_LT(found.at("warp_tiled").model_mean, found.at("warp_tiled").nearest_mean - 0.1)
      << "the nearest shape's choice is 1.3x the best for warp_tiled";
}

TEST_F(SelectionEvalCli, QuerySaysThatTheModelChoseAndWhatTheNearestShapeWouldHave) {
  const auto model = tiletune({"query", "--db", suite_.string(), "--shape", "333x777x2049", "--kernel",
                               "warp_tiled"});
  ASSERT_EQ(model.exit_code, 0) << model;
  EXPECT_THAT(model.out, HasSubstr("NVIDIA H200 has no record of 333x777x2049; the performance model "
                                   "predicts ")) << model;
  EXPECT_THAT(model.out, HasSubstr("; the nearest recorded shape 1000x1000x1000 would have chosen [")) << model;
  EXPECT_THAT(model.out, HasSubstr("NVIDIA H200 333x777x2049: warp_tiled [")) << model;
  const auto nearest = tiletune({"query", "--db", suite_.string(), "--shape", "333x777x2049",
                                 "--kernel", "warp_tiled", "--nearest"});
  ASSERT_EQ(nearest.exit_code, 0) << nearest;
  EXPECT_THAT(nearest.out, HasSubstr("nearest recorded shape: 1000x1000x1000")) << nearest;
  const auto json = tiletune({"query", "--db", suite_.string(), "--shape", "333x777x2049", "--kernel",
                              "warp_tiled", "--json"});
  EXPECT_THAT(json.out, HasSubstr("\"chosen_by\": \"performance_model\"")) << json;
  const auto exact = tiletune({"query", "--db", suite_.string(), "--shape", "1000x1000x1000",
                               "--kernel", "warp_tiled", "--json"});
  EXPECT_THAT(exact.out, HasSubstr("\"chosen_by\": \"exact_shape\"")) << exact;
  EXPECT_THAT(exact.out, HasSubstr("\"predicted_ms\": null")) << exact;
}

// A bundle exported from the suite chooses by the model fitted on the whole suite, which it
// carries: well within the nearest shape's choice (which needs no model), and, exported for the
// held-out shapes as its workload, as the suite database does. Without cubins: the choice is what
// is measured.
TEST_F(SelectionEvalCli, ABundleChoosesByTheModelItCarries) {
  const runtime::RecordSet suite = runtime::load_database_records(suite_);
  std::vector<GemmShape> heldout;
  for (const runtime::WorkloadShape& w : runtime::read_workload(
           std::string(TILETUNE_SOURCE_DIR) + "/tests/fixtures/selection/heldout_shapes.txt")) {
    heldout.push_back(w.shape);
  }
  for (const auto& [folder, workload] : {std::pair{"bundle", std::vector<GemmShape>{}}, std::pair{"workload", heldout}}) {
    const runtime::RecordSet selected = runtime::select_for_export(suite, {{"warp_tiled"}, {}, 4, workload});
    runtime::write_bundle_folder(
        runtime::build_bundle(selected, "suite.db", std::nullopt, 0, runtime::ExportCubins::none).files,
        dir_ / folder);
  }
  const auto database = tiletune({"selection-eval", "--db", suite_.string(), "--truth", truth_.string(),
                                  "--kernel", "warp_tiled"});
  const auto bundle = tiletune({"selection-eval", "--db", (dir_ / "bundle").string(), "--truth",
                                truth_.string(), "--kernel", "warp_tiled"});
  const auto workload = tiletune({"selection-eval", "--db", (dir_ / "workload").string(), "--truth",
                                  truth_.string(), "--kernel", "warp_tiled"});
  ASSERT_EQ(bundle.exit_code, 0) << bundle;
  ASSERT_EQ(workload.exit_code, 0) << workload;
  const Summary from_bundle = summaries(bundle.out).at("warp_tiled");
  EXPECT_LE(from_bundle.model_mean, 1.10) << bundle;
  EXPECT_LT(from_bundle.model_mean, from_bundle.nearest_mean - 0.1) << bundle;
  // The database's choice at every held-out shape: its table, line for line.
  EXPECT_EQ(workload.out, database.out);

  nlohmann::json manifest = nlohmann::json::parse(read_text(dir_ / "bundle" / "manifest.json"));
  manifest["models"][0]["configurations"][0]["coefficients"][0] = -1;
  std::ofstream(dir_ / "bundle" / "manifest.json") << manifest.dump(2);
  const auto damaged = tiletune({"selection-eval", "--db", (dir_ / "bundle").string(), "--truth", truth_.string()});
  expect_one_line_failure(damaged, 2);
  EXPECT_THAT(damaged.err, HasSubstr("manifest.json: the model of warp_tiled on NVIDIA H200 has coefficients [-")) << damaged;
}

TEST_F(SelectionEvalCli, BadInputIsOneLine) {
  expect_one_line_failure(tiletune({"selection-eval", "--db", suite_.string(), "--truth",
                                    (dir_ / "absent.db").string()}), 2);
  // The suite holds no held-out shape of itself.
  expect_one_line_failure(tiletune({"selection-eval", "--db", suite_.string(), "--truth",
                                    suite_.string()}), 2);
  expect_one_line_failure(tiletune({"query", "--db", suite_.string(), "--shape", "64x64x64",
                                    "--exact", "--nearest"}), 2);
  expect_one_line_failure(tiletune({"query", "--db", suite_.string(), "--shape", "64x64x64",
                                    "--exact", "--trial", "4"}), 2);
  expect_one_line_failure(tiletune({"query", "--db", suite_.string(), "--shape", "64x64x64",
                                    "--trial", "1"}), 2);
}

// query --trial K runs the library's first-call trial on this GPU: without one, exit 3 in a line;
// with one, the trial's fastest after the model's answer.
TEST_F(SelectionEvalCli, QueryTrialTimesTheModelsCandidatesOnAGpuOrSaysThereIsNone) {
  const auto run = tiletune({"query", "--db", suite_.string(), "--shape", "333x777x2049", "--kernel",
                             "warp_tiled", "--trial", "3"});
  if (run.exit_code == 3) {
    expect_one_line_failure(run, 3);
    EXPECT_THAT(run.err, ::testing::AnyOf(HasSubstr("CUDA"), HasSubstr("GPU"))) << run;
    return;
  }
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("first-call trial on ")) << run;
  EXPECT_THAT(run.out, HasSubstr(", the fastest of the model's 3 timed")) << run;
}

// `plan` over the held-out shapes as a workload, from the suite: the shapes to tune, the heaviest
// part of the workload's predicted time first; --list gives them alone, for scripts.
TEST_F(SelectionEvalCli, PlanNamesTheWorkloadShapesToTuneByTheModelsPredictedTime) {
  const std::string workload = std::string(TILETUNE_SOURCE_DIR) + "/tests/fixtures/selection/heldout_shapes.txt";
  const auto run = tiletune({"plan", "--workload", workload, "--budget", "3", "--db", suite_.string(),
                             "--kernel", "warp_tiled"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("23 shapes, 23 calls; weighed by the performance model's predicted time")) << run;
  EXPECT_THAT(run.out, HasSubstr("tuned in " + suite_.string() + " on NVIDIA H200: warp_tiled")) << run;
  EXPECT_THAT(run.out, HasSubstr("tune 3 shapes (budget 3), the most useful first:")) << run;
  // The 7B decoder's fused QKV at 1024 tokens is the workload's longest product.
  EXPECT_THAT(run.out, HasSubstr("    1  1024x12288x4096")) << run;
  const auto list = tiletune({"plan", "--workload", workload, "--budget", "3", "--db", suite_.string(),
                              "--kernel", "warp_tiled", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list;
  EXPECT_EQ(lines_of(list.out).size(), 3u) << list;
  EXPECT_EQ(lines_of(list.out)[0], "1024x12288x4096") << list;

  const std::filesystem::path bad = dir_ / "bad.txt";
  std::ofstream(bad) << "4096x768x768\n4096x768 3\n";
  const auto refused = tiletune({"plan", "--workload", bad.string(), "--budget", "3", "--db", suite_.string()});
  expect_one_line_failure(refused, 2);
  EXPECT_THAT(refused.err, HasSubstr("bad.txt:2: invalid shape '4096x768'")) << refused;
  expect_one_line_failure(tiletune({"plan", "--workload", workload, "--db", suite_.string()}), 2);
  expect_one_line_failure(tiletune({"plan", "--workload", workload, "--budget", "-1", "--db", suite_.string()}), 2);
}

}  // namespace
}  // namespace tiletune

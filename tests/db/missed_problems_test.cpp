// The missed problems the runtime library records (ResultStore::record_miss): counted per GPU,
// template, shape and leading dimensions, listed in a fixed order, filtered, and forgotten per
// shape once tuned.
#include "db/result_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/result_records.h"

namespace tiletune {
namespace {

class MissedProblemsTest : public ResultStoreTest {};

const GemmProblem kPacked = GemmProblem::packed({100, 200, 300});
const GemmProblem kPadded{{100, 200, 300}, 320, 256, 256};
const GemmProblem kOther = GemmProblem::packed({64, 4096, 4096});

TEST_F(MissedProblemsTest, ANewDatabaseHasNone) {
  ResultStore store(db_path());
  EXPECT_TRUE(store.missed_problems().empty());
}

TEST_F(MissedProblemsTest, RecordingAgainCountsAndKeepsFirstSeen) {
  ResultStore store(db_path());
  store.record_miss("NVIDIA H200", "tiled", kPacked);
  exec_file(db_path(), "UPDATE missed_problems SET first_seen = '2024-01-01 00:00:00', "
                       "last_seen = '2024-01-01 00:00:00'");
  store.record_miss("NVIDIA H200", "tiled", kPacked);
  store.record_miss("NVIDIA H200", "tiled", kPacked);
  const auto missed = store.missed_problems();
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].gpu_name, "NVIDIA H200");
  EXPECT_EQ(missed[0].template_name, "tiled");
  EXPECT_EQ(missed[0].problem, kPacked);
  EXPECT_EQ(missed[0].count, 3);
  EXPECT_EQ(missed[0].first_seen, "2024-01-01 00:00:00");
  EXPECT_NE(missed[0].last_seen, "2024-01-01 00:00:00") << "last_seen moves on";
  EXPECT_EQ(missed[0].last_seen.size(), 19u) << missed[0].last_seen;
}

// Other leading dimensions are another problem; the list is sorted by GPU, template, sizes and
// leading dimensions whatever the order of recording, and filters on GPU and template.
TEST_F(MissedProblemsTest, ListedInAFixedOrderAndFiltered) {
  ResultStore store(db_path());
  store.record_miss("NVIDIA H200", "tiled", kPadded);
  store.record_miss("NVIDIA H200", "warp_tiled", kPacked);
  store.record_miss("NVIDIA A100", "tiled", kOther);
  store.record_miss("NVIDIA H200", "tiled", kOther);
  store.record_miss("NVIDIA H200", "tiled", kPacked);

  std::vector<std::string> order;
  for (const MissedProblem& row : store.missed_problems()) {
    order.push_back(row.gpu_name + " " + row.template_name + " " + row.problem.to_string());
  }
  EXPECT_EQ(order, (std::vector<std::string>{
                       "NVIDIA A100 tiled " + kOther.to_string(),
                       "NVIDIA H200 tiled " + kOther.to_string(),
                       "NVIDIA H200 tiled " + kPacked.to_string(),
                       "NVIDIA H200 tiled " + kPadded.to_string(),
                       "NVIDIA H200 warp_tiled " + kPacked.to_string(),
                   }));
  EXPECT_EQ(store.missed_problems("NVIDIA H200").size(), 4u);
  EXPECT_EQ(store.missed_problems("NVIDIA H200", "tiled").size(), 3u);
  EXPECT_EQ(store.missed_problems(std::nullopt, "tiled").size(), 4u);
  EXPECT_TRUE(store.missed_problems("NVIDIA H100").empty());
}

// Forgetting a shape takes every leading dimension of it, and nothing of another shape, template
// or GPU.
TEST_F(MissedProblemsTest, ForgettingAShapeTakesAllItsLeadingDimensionsOnly) {
  ResultStore store(db_path());
  store.record_miss("NVIDIA H200", "tiled", kPacked);
  store.record_miss("NVIDIA H200", "tiled", kPadded);
  store.record_miss("NVIDIA H200", "tiled", kOther);
  store.record_miss("NVIDIA H200", "warp_tiled", kPacked);
  store.record_miss("NVIDIA A100", "tiled", kPacked);

  EXPECT_EQ(store.forget_misses("NVIDIA H200", "tiled", kPacked.shape), 2);
  std::vector<std::string> left;
  for (const MissedProblem& row : store.missed_problems()) {
    left.push_back(row.gpu_name + " " + row.template_name + " " + row.problem.to_string());
  }
  EXPECT_EQ(left, (std::vector<std::string>{
                      "NVIDIA A100 tiled " + kPacked.to_string(),
                      "NVIDIA H200 tiled " + kOther.to_string(),
                      "NVIDIA H200 warp_tiled " + kPacked.to_string(),
                  }));
  EXPECT_EQ(store.forget_misses("NVIDIA H200", "tiled", kPacked.shape), 0) << "nothing left";
}

// Misses live beside the results: recording and forgetting them touches no result.
TEST_F(MissedProblemsTest, ResultsAreUntouched) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "c", kPacked.shape, ResultStatus::ok, 1.5));
  store.record_miss(gpu.name, "tiled", kPadded);
  store.forget_misses(gpu.name, "tiled", kPacked.shape);
  EXPECT_TRUE(store.missed_problems().empty());
  EXPECT_TRUE(store.best(gpu.name, kPacked.shape, "tiled").has_value());
}

}  // namespace
}  // namespace tiletune

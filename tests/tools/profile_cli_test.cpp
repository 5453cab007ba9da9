// `tiletune profile` as a user meets it: its bad input (exit 2), no ncu and no GPU (one line, exit
// 3), and, on a GPU, a whole profile through a fake ncu (tests/support/fake_ncu.h: its canned CSV
// recorded as counters, the permission error in one line) and through the real one. And
// `query --json`, which shows the counters recorded for the configuration it answers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/result_store.h"
#include "tests/support/fake_ncu.h"
#include "tests/support/gpu_test.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/test_folder.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/core/kernel_template.h"
#include "tuner/pipeline/tuning_run.h"
#include "tuner/profiling/nsight_compute.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_support::FakeNcu;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::run_tiletune;
using testing_tools::TiletuneRun;

namespace fs = std::filesystem;

const fs::path kNaive = fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu";
const GemmShape kShape{256, 256, 256};

bool gpu_present() {
  try {
    GpuDevice device;
    return true;
  } catch (const GpuUnavailable&) {
    return false;
  }
}

// A database with naive's two configurations recorded ok at kShape on `gpu`.
void prepare_database(const fs::path& db, const GpuRecord& gpu) {
  const KernelTemplate naive = load_template(kNaive);
  ResultStore store(db);
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template({naive.name, naive.source_hash, kNaive.string(), naive.source});
  for (const auto& [config, ms] : {std::pair{"BLOCK_X=32,BLOCK_Y=8", 0.5}, {"BLOCK_X=16,BLOCK_Y=16", 0.75}}) {
    ResultRecord result;
    result.template_name = naive.name;
    result.template_hash = naive.source_hash;
    result.config = config;
    result.shape = kShape;
    result.median_ms = result.min_ms = result.max_ms = ms;
    result.runs = 20;
    result.tflops = kShape.flops() / (ms * 1e-3) / 1e12;
    store.record_result(gpu_id, gpu, result);
  }
}

GpuRecord h200() {
  GpuRecord gpu;
  gpu.name = "NVIDIA H200";
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  gpu.clock_khz = 1980000;
  gpu.memory_bytes = 150'000'000'000ULL;
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  return gpu;
}

class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing_support::fresh_test_folder("profile-cli"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path db() const { return dir_ / "results.db"; }
  fs::path dir_;
};

TEST_F(ProfileCli, BadInputIsOneLineExit2) {
  prepare_database(db(), h200());
  const std::map<std::string, std::string> no_ncu = {{"TILETUNE_NCU", (dir_ / "no-ncu").string()}};
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{"profile", "--db", db().string(), "--top", "0"}, "--top must be at least 1, not 0"},
           {{"profile", "--db", db().string(), "--top", "2", "--config", "BLOCK_X=32,BLOCK_Y=8"},
            "--top excludes --config"},
           {{"profile", "--db", db().string(), "--shape", "4096x"}, "invalid shape '4096x'"},
           {{"profile", "--db", (dir_ / "none.db").string()}, "none.db: no such database"},
           {{"profile", "--db", db().string(), "--launches", "0"}, "--launches must be from 1 to 100"},
       }) {
    SCOPED_TRACE(c.args.back());
    const TiletuneRun run = run_tiletune(dir_, c.args, no_ncu);
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr(c.says)) << run;
  }
  EXPECT_FALSE(fs::exists(dir_ / "none.db")) << "a missing database is not created";
}

TEST_F(ProfileCli, NoNcuIsOneLineExit3NamingWhereItLooked) {
  prepare_database(db(), h200());
  const TiletuneRun run = run_tiletune(dir_, {"profile", "--db", db().string()},
                                       {{"TILETUNE_NCU", (dir_ / "no-ncu").string()}});
  expect_one_line_failure(run, 3);
  EXPECT_THAT(run.err, HasSubstr("Nsight Compute (ncu) not found: $TILETUNE_NCU is " +
                                 (dir_ / "no-ncu").string()))
      << run;
}

TEST_F(ProfileCli, NoGpuIsOneLineExit3) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: this checks the no-GPU path";
  prepare_database(db(), h200());
  FakeNcu fake(dir_ / "fake");
  const TiletuneRun run = run_tiletune(dir_, {"profile", "--db", db().string()},
                                       {{"TILETUNE_NCU", fake.executable().string()}});
  expect_one_line_failure(run, 3);
  EXPECT_EQ(fake.last_arguments(), "") << "nothing was profiled";
  EXPECT_TRUE(ResultStore(db(), ResultStore::Access::read_only).counters().empty());
}

TEST_F(ProfileCli, QueryJsonShowsTheCountersOfTheAnsweredConfiguration) {
  prepare_database(db(), h200());
  const std::vector<std::string> query = {"query", "--shape", kShape.to_string(), "--db",
                                          db().string(), "--gpu", "NVIDIA H200", "--json"};
  {
    const TiletuneRun run = run_tiletune(dir_, query);
    ASSERT_EQ(run.exit_code, 0) << run;
    EXPECT_FALSE(nlohmann::json::parse(run.out).contains("counters")) << "none recorded yet";
  }
  const KernelTemplate naive = load_template(kNaive);
  {
    ResultStore store(db());
    const std::int64_t gpu_id = store.register_gpu(h200());
    CounterRecord counters;
    counters.template_name = naive.name;
    counters.template_hash = naive.source_hash;
    counters.shape = kShape;
    counters.ncu_version = "2025.3.1";
    counters.config = "BLOCK_X=16,BLOCK_Y=16";  // not the answer: not shown
    counters.values = {{"global_ld_requests", 999}};
    store.record_counters(gpu_id, counters);
    counters.config = "BLOCK_X=32,BLOCK_Y=8";
    counters.values = {{"global_ld_requests", 1'048'576}, {"achieved_occupancy_pct", 91.25}};
    store.record_counters(gpu_id, counters);
  }
  const TiletuneRun run = run_tiletune(dir_, query);
  ASSERT_EQ(run.exit_code, 0) << run;
  const nlohmann::json answer = nlohmann::json::parse(run.out);
  EXPECT_EQ(answer.value("config", ""), "BLOCK_X=32,BLOCK_Y=8");
  ASSERT_TRUE(answer.contains("counters")) << run;
  EXPECT_EQ(answer["counters"], (nlohmann::json{{"achieved_occupancy_pct", 91.25},
                                                {"global_ld_requests", 1048576.0}}));
  EXPECT_EQ(answer.value("counters_ncu_version", ""), "2025.3.1");
}

// On a GPU: naive's recorded configuration on this GPU, profiled through ncu.
class ProfileCliOnGpu : public testing_support::GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    dir_ = testing_support::fresh_test_folder("profile-cli-gpu");
    prepare_database(db(), make_gpu_record(device_->properties()));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path db() const { return dir_ / "results.db"; }
  fs::path dir_;
};

TEST_F(ProfileCliOnGpu, FakeNcusCsvIsRecordedAsCounters) {
  FakeNcu fake(dir_ / "fake");
  fake.query_metrics(testing_support::query_metrics_listing(
                         {"l1tex__t_requests_pipe_lsu_mem_global_op_ld", "dram__bytes_read"}),
                     0);
  fake.profile_output(
      "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum\"\n"
      "\"\",\"\",\"byte\",\"\"\n"
      "\"0\",\"naive_gemm\",\"786,432\",\"1,000\"\n"
      "\"1\",\"naive_gemm\",\"786,560\",\"1,000\"\n"
      "\"2\",\"naive_gemm\",\"786,496\",\"1,000\"\n",
      0);
  // The Source Counters of the three launches: naive touches no shared memory.
  std::string source_page;
  for (int launch = 0; launch < 3; ++launch) {
    source_page +=
        "\"Kernel Name\",\"naive_gemm\",\n"
        "\"Address\",\"Source\",\"L1 Wavefronts Shared Excessive\",\"L1 Wavefronts Shared\","
        "\"L1 Wavefronts Shared Ideal\"\n"
        "\"0x7f0000000100\",\"      LDG.E R2, desc[UR4][R2.64]\",\"0\",\"0\",\"0\"\n";
  }
  fake.source_page(source_page);
  const TiletuneRun run =
      run_tiletune(dir_, {"profile", "--db", db().string(), "--config", "BLOCK_X=32,BLOCK_Y=8"},
                   {{"TILETUNE_NCU", fake.executable().string()}});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("Nsight Compute 2025.3.1"));
  EXPECT_THAT(run.out, HasSubstr("this GPU's ncu lacks ")) << run;
  EXPECT_THAT(fake.last_arguments(), HasSubstr("-k\nregex:^naive_gemm$\n"));
  EXPECT_THAT(fake.last_arguments(), HasSubstr("profile-launch\n"));
  const auto counters = ResultStore(db(), ResultStore::Access::read_only).counters();
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].config, "BLOCK_X=32,BLOCK_Y=8");
  EXPECT_EQ(counters[0].ncu_version, "2025.3.1");
  std::map<std::string, double> expected{{"dram_read_bytes", 786496}, {"global_ld_requests", 1000}};
  for (const char* kind : {"shared_ld", "shared_st", "shared_copy"}) {
    for (const char* what : {"_wavefronts", "_ideal_wavefronts", "_excessive_wavefronts"}) {
      expected[std::string(kind) + what] = 0;
    }
  }
  EXPECT_EQ(counters[0].values, expected);
}

TEST_F(ProfileCliOnGpu, MissingPermissionIsOneLineExit3AndRecordsNothing) {
  FakeNcu fake(dir_ / "fake");
  fake.query_metrics(testing_support::query_metrics_listing({"dram__bytes_read"}), 0);
  fake.profile_output(testing_support::kNcuPermissionError, 1);
  const TiletuneRun run = run_tiletune(dir_, {"profile", "--db", db().string()},
                                       {{"TILETUNE_NCU", fake.executable().string()}});
  expect_one_line_failure(run, 3);
  EXPECT_THAT(run.err, HasSubstr("ERR_NVGPUCTRPERM")) << run;
  EXPECT_TRUE(ResultStore(db(), ResultStore::Access::read_only).counters().empty());
}

// The real ncu on the real kernel: the counters a naive SGEMM must have.
TEST_F(ProfileCliOnGpu, RealNcuProfilesOneConfiguration) {
  try {
    NsightCompute::find();
  } catch (const ProfilerUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  const TiletuneRun run =
      run_tiletune(dir_, {"profile", "--db", db().string(), "--config", "BLOCK_X=32,BLOCK_Y=8"});
  if (run.exit_code == 3 && run.err.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    GTEST_SKIP() << run.err;
  }
  ASSERT_EQ(run.exit_code, 0) << run;
  const auto counters = ResultStore(db(), ResultStore::Access::read_only).counters();
  ASSERT_EQ(counters.size(), 1u) << run;
  const auto& values = counters[0].values;
  ASSERT_TRUE(values.contains("global_ld_requests")) << run;
  // Every thread loads K values of A and K of B: 2 K loads per warp, M N / 32 warps.
  EXPECT_EQ(values.at("global_ld_requests"), 2.0 * kShape.k * kShape.m * kShape.n / 32) << run;
  EXPECT_GT(values.at("global_ld_sectors"), values.at("global_ld_requests")) << run;
  EXPECT_EQ(values.at("shared_ld_wavefronts"), 0) << run;
  EXPECT_GT(values.at("registers"), 0) << run;
  EXPECT_GT(values.at("achieved_occupancy_pct"), 0) << run;
}

}  // namespace
}  // namespace tiletune

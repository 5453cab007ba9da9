// Nsight Compute's command line without a GPU: the raw CSV page as ncu writes it (thousands
// separators, a units row, quoted fields, n/a), the counters table, and NsightCompute run on a
// fake ncu (tests/support/fake_ncu.h): unknown metrics left out and named, the permission error in
// one line, ncu's failures and its absence.
#include "tuner/profiling/nsight_compute.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "tests/support/fake_ncu.h"
#include "tests/support/test_folder.h"
#include "tuner/profiling/counter_metrics.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::FakeNcu;
using testing_support::query_metrics_listing;

// What `ncu --csv --page raw --print-units base` printed for two launches, the program's and
// ncu's own lines around it.
constexpr const char* kTwoLaunches =
    "==PROF== Connected to process 4242 (/opt/tiletune/bin/tiletune)\n"
    "==PROF== Profiling \"gemm\" - 0: 0%....50%....100% - 9 passes\n"
    "==PROF== Profiling \"gemm\" - 1: 0%....50%....100% - 9 passes\n"
    "==PROF== Disconnected from process 4242\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Kernel Time\",\"dram__bytes_read.sum\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\"launch__registers_per_thread\","
    "\"sm__warps_active.avg.pct_of_peak_sustained_active\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"byte\",\"\",\"register/thread\",\"%\"\n"
    "\"0\",\"4242\",\"tiletune\",\"127.0.0.1\",\"gemm\",\"1\",\"7\",\"(16, 16, 1)\",\"(64, 64, 1)\","
    "\"0\",\"9.0\",\"2026-Nov-22 10:01:02\",\"12,582,912\",\"1,015,808\",\"40\",\"66.53\"\n"
    "\"1\",\"4242\",\"tiletune\",\"127.0.0.1\",\"gemm\",\"1\",\"7\",\"(16, 16, 1)\",\"(64, 64, 1)\","
    "\"0\",\"9.0\",\"2026-Nov-22 10:01:03\",\"12,582,976\",\"n/a\",\"40\",\"66.49\"\n";

TEST(ParseNcuRawCsv, ReadsEveryLaunchWithThousandsSeparatorsAndSkipsTheUnitsRow) {
  const auto launches = parse_ncu_raw_csv(kTwoLaunches);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].kernel, "gemm");
  EXPECT_EQ(launches[0].metrics,
            (std::map<std::string, double>{
                {"dram__bytes_read.sum", 12582912},
                {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 1015808},
                {"launch__registers_per_thread", 40},
                {"sm__warps_active.avg.pct_of_peak_sustained_active", 66.53}}));
  // n/a: the metric is left out of that launch, not read as 0.
  EXPECT_EQ(launches[1].metrics.size(), 3u);
  EXPECT_FALSE(launches[1].metrics.contains("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"));
  EXPECT_EQ(launches[1].metrics.at("dram__bytes_read.sum"), 12582976);
}

TEST(ParseNcuRawCsv, QuotedFieldsKeepTheirCommasAndQuotes) {
  const auto launches = parse_ncu_raw_csv(
      "\"ID\",\"Kernel Name\",\"Block Size\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"nsecond\"\n"
      "\"0\",\"void gemm<32, \"\"x\"\">(const float *, float *)\",\"(256, 1, 1)\",\"1,234.5\"\n");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "void gemm<32, \"x\">(const float *, float *)");
  EXPECT_EQ(launches[0].metrics, (std::map<std::string, double>{{"gpu__time_duration.sum", 1234.5}}));
}

TEST(ParseNcuRawCsv, NoTableIsOneLineNamingWhatNcuSaid) {
  try {
    parse_ncu_raw_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n");
    ADD_FAILURE() << "parsed";
  } catch (const ProfilerUnavailable& error) {
    EXPECT_THAT(error.what(), HasSubstr("no CSV table"));
    EXPECT_THAT(error.what(), HasSubstr("No kernels were profiled."));
    EXPECT_THAT(error.what(), Not(HasSubstr("\n")));
  }
}

TEST(ParseNcuRawCsv, WordsAreNoCountersAndAreLeftOut) {
  // As ncu 2025.3.1 printed it on an H100: a device attribute that is a word beside the counters.
  const auto launches = parse_ncu_raw_csv(
      "\"ID\",\"Kernel Name\",\"device__attribute_confidential_computing_mode\",\"dram__bytes_read.sum\"\n"
      "\"0\",\"gemm\",\"No-CC\",\"1,024\"\n");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].metrics, (std::map<std::string, double>{{"dram__bytes_read.sum", 1024}}));
}

TEST(ParseNcuRawCsv, ShortRowsAndUnclosedQuotesAreRefused) {
  EXPECT_THROW(parse_ncu_raw_csv("\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\"\n\"0\",\"gemm\"\n"),
               ProfilerUnavailable);
  EXPECT_THROW(parse_ncu_raw_csv("\"ID\",\"Kernel Name\"\n\"0\",\"gemm\n"), ProfilerUnavailable);
}

TEST(CounterMetrics, NamesAreUniqueAndEveryNcuMetricIsFullyQualified) {
  std::set<std::string> names;
  for (const CounterMetric& counter : counter_metrics()) {
    EXPECT_TRUE(names.insert(counter.name).second) << counter.name;
    EXPECT_EQ(find_counter_metric(counter.name), &counter);
    if (!is_source_counter(counter.ncu_metric)) {
      EXPECT_THAT(std::string(counter.ncu_metric), HasSubstr("__")) << counter.name;
    }
    EXPECT_NE(std::string(counter.unit), "") << counter.name;
    EXPECT_NE(std::string(counter.meaning), "") << counter.name;
  }
  EXPECT_EQ(find_counter_metric("no_such_counter"), nullptr);
  // What the issue asks for, by name (profile, the labs and the report read these).
  for (const char* name : {"shared_ld_wavefronts", "shared_st_wavefronts",
                           "shared_ld_excessive_wavefronts", "shared_st_excessive_wavefronts",
                           "shared_copy_excessive_wavefronts",
                           "shared_ld_bank_conflicts", "global_ld_requests", "global_ld_sectors",
                           "global_st_requests", "global_st_sectors", "dram_read_bytes",
                           "dram_write_bytes", "achieved_occupancy_pct", "sm_throughput_pct",
                           "memory_throughput_pct", "registers", "local_st_sectors"}) {
    EXPECT_NE(find_counter_metric(name), nullptr) << name;
  }
}

// `ncu --import R --csv --page source --print-source sass`, trimmed to a few rows and columns of
// warp_tiled at 1024^3 on an H100 (whose LDGSTS copies into the transposed A tile conflict 2-way
// and its LDS.128 broadcasts do not), then a second kernel's table.
constexpr const char* kSourcePage =
    "\"Kernel Name\",\"warp_tiled_gemm\",\n"
    "\"Address\",\"Source\",\"Instructions Executed\",\"L1 Conflicts Shared N-Way\","
    "\"L1 Wavefronts Shared Excessive\",\"L1 Wavefronts Shared\",\"L1 Wavefronts Shared Ideal\"\n"
    "\"0x7f721f7ac200\",\"      LDC R1, c[0x0][0x28]\",\"512\",\"0\",\"0\",\"0\",\"0\"\n"
    "\"0x7f721f7ac7e0\",\"@!PT  LDS RZ, [RZ]\",\"0\",\"0\",\"0\",\"0\",\"0\"\n"
    "\"0x7f721f7ad5a0\",\"      LDGSTS.E desc[UR14][R30.64], [R33]\",\"512\",\"3\",\"1024\",\"1536\",\"512\"\n"
    "\"0x7f721f7ad5c0\",\"@P0   LDGSTS.E desc[UR14][R12.64], [R33+0x20]\",\"512\",\"3\",\"1024\",\"1536\",\"512\"\n"
    "\"0x7f721f7ad900\",\"      LDS.128 R40, [R2+UR4]\",\"65,536\",\"1\",\"0\",\"262,144\",\"262,144\"\n"
    "\"0x7f721f7ad990\",\"      STS [R7], R9\",\"64\",\"2\",\"64\",\"128\",\"64\"\n"
    "\"Kernel Name\",\"warp_tiled_gemm\",\n"
    "\"Address\",\"Source\",\"Instructions Executed\",\"L1 Conflicts Shared N-Way\","
    "\"L1 Wavefronts Shared Excessive\",\"L1 Wavefronts Shared\",\"L1 Wavefronts Shared Ideal\"\n"
    "\"0x7f721f7ad900\",\"      LDS.128 R40, [R2+UR4]\",\"65,536\",\"1\",\"0\",\"262,144\",\"262,144\"\n";

TEST(CounterMetrics, SharedWavefrontsAreSumsOverTheInstructionsOfEachKind) {
  const auto kernels = parse_ncu_source_csv(kSourcePage);
  ASSERT_EQ(kernels.size(), 2u);
  const auto values = counter_values(kernels[0]);
  EXPECT_EQ(values.at("shared_copy_wavefronts"), 3072);
  EXPECT_EQ(values.at("shared_copy_ideal_wavefronts"), 1024);
  EXPECT_EQ(values.at("shared_copy_excessive_wavefronts"), 2048);
  EXPECT_EQ(values.at("shared_ld_wavefronts"), 262144);  // a broadcast is ideal: none excessive
  EXPECT_EQ(values.at("shared_ld_excessive_wavefronts"), 0);
  EXPECT_EQ(values.at("shared_st_wavefronts"), 128);
  EXPECT_EQ(values.at("shared_st_excessive_wavefronts"), 64);
  const auto second = counter_values(kernels[1]);
  EXPECT_EQ(second.at("shared_ld_wavefronts"), 262144);
  EXPECT_EQ(second.at("shared_copy_wavefronts"), 0) << "each kernel's table is summed apart";

  EXPECT_THROW(parse_ncu_source_csv("==PROF== no kernel\n"), ProfilerUnavailable);
  EXPECT_THROW(parse_ncu_source_csv("\"Kernel Name\",\"k\",\n\"Address\",\"Source\"\n"), ProfilerUnavailable)
      << "a page without the Source Counters columns";

  const auto needed = ncu_metrics_of(counter_metrics());
  EXPECT_EQ(std::count(needed.begin(), needed.end(), "source_counters:shared_ld_excessive_wavefronts"), 1);
  EXPECT_THAT(counters_needing({"source_counters:shared_ld_ideal_wavefronts"}),
              ElementsAre("shared_ld_ideal_wavefronts"));
}

class NsightComputeTest : public ::testing::Test {
 protected:
  void SetUp() override { folder_ = testing_support::fresh_test_folder("ncu"); }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::filesystem::path folder_;
};

TEST_F(NsightComputeTest, ProfilesOnlyTheMetricsThisGpuKnowsAndNamesTheOthers) {
  FakeNcu fake(folder_);
  // launch__registers_per_thread is not listed: ncu's launch attributes are asked all the same.
  fake.query_metrics(query_metrics_listing({"dram__bytes_read", "sm__warps_active",
                                            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld"}),
                     0);
  fake.profile_output(kTwoLaunches, 0);
  const NsightCompute ncu(fake.executable());
  EXPECT_EQ(ncu.version(), "2025.3.1");
  EXPECT_TRUE(ncu.available_metrics().contains("sm__warps_active"));
  EXPECT_FALSE(ncu.available_metrics().contains("Metric"));

  std::vector<std::string> missing;
  const auto launches = ncu.profile(
      {"/opt/tiletune/bin/tiletune", "profile-launch", "--shape", "64x64x64"},
      {"dram__bytes_read.sum", "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum",
       "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"},
      "gemm", &missing);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].metrics.at("dram__bytes_read.sum"), 12582912);
  EXPECT_THAT(missing, ElementsAre("smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum"));
  const std::string arguments = fake.last_arguments();
  EXPECT_THAT(arguments, HasSubstr("--csv\n--page\nraw\n--print-units\nbase\n"));
  EXPECT_THAT(arguments, HasSubstr("--clock-control\nnone\n"));
  EXPECT_THAT(arguments, HasSubstr("--cache-control\nall\n"));
  EXPECT_THAT(arguments,
              HasSubstr("--metrics\ndram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,"
                        "launch__registers_per_thread,"
                        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\n"));
  EXPECT_THAT(arguments, HasSubstr("-k\nregex:gemm\n"));
  EXPECT_THAT(arguments, HasSubstr("\nbase\n/opt/tiletune/bin/tiletune\nprofile-launch\n--shape\n64x64x64\n"))
      << "the program and its arguments come last";
}

// Per-instruction counters: the run exports a report with the Source Counters section, read back
// as its raw page and its source page, launch by launch.
TEST_F(NsightComputeTest, SourceCountersAreReadFromTheExportedReportsSourcePage) {
  FakeNcu fake(folder_);
  fake.query_metrics(query_metrics_listing({"dram__bytes_read"}), 0);
  fake.profile_output(kTwoLaunches, 0);
  fake.source_page(kSourcePage);
  const auto launches = NsightCompute(fake.executable())
                            .profile({"/opt/tiletune/bin/tiletune", "profile-launch"},
                                     {"dram__bytes_read.sum", "source_counters:shared_copy_wavefronts"}, "gemm");
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].metrics.at("dram__bytes_read.sum"), 12582912);
  EXPECT_EQ(launches[0].metrics.at("source_counters:shared_copy_wavefronts"), 3072);
  EXPECT_EQ(launches[1].metrics.at("source_counters:shared_ld_wavefronts"), 262144);
  const std::string profiling = fake.arguments_of("profile");
  EXPECT_THAT(profiling, HasSubstr("--section\nSourceCounters\n--export\n"));
  EXPECT_THAT(profiling, HasSubstr("--metrics\ndram__bytes_read.sum\n"));
  EXPECT_THAT(profiling, Not(HasSubstr("source_counters:")));
  EXPECT_THAT(fake.arguments_of("source"), HasSubstr("--page\nsource\n--print-source\nsass\n"));
  EXPECT_THAT(fake.arguments_of("raw"), HasSubstr("--page\nraw\n"));

  fake.source_page(std::string(kSourcePage).substr(0, std::string(kSourcePage).rfind("\"Kernel Name\"")));
  EXPECT_THROW(NsightCompute(fake.executable()).profile({"true"}, {"source_counters:shared_ld_wavefronts"}, "gemm"),
               ProfilerUnavailable)
      << "2 launches on the raw page, 1 on the source page";
}

TEST_F(NsightComputeTest, MissingPermissionIsOneLine) {
  FakeNcu fake(folder_);
  fake.query_metrics(query_metrics_listing({"dram__bytes_read"}), 0);
  fake.profile_output(testing_support::kNcuPermissionError, 1);
  try {
    NsightCompute(fake.executable()).profile({"true"}, {"dram__bytes_read.sum"}, "gemm");
    ADD_FAILURE() << "profiled";
  } catch (const ProfilerUnavailable& error) {
    EXPECT_THAT(error.what(), HasSubstr("no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM)"));
    EXPECT_THAT(error.what(), HasSubstr(fake.executable().string()));
    EXPECT_THAT(error.what(), Not(HasSubstr("\n")));
  }
}

TEST_F(NsightComputeTest, NcuFailureNamesItsErrorLine) {
  FakeNcu fake(folder_);
  fake.query_metrics("==ERROR== Failed to query metrics: no device 3\n", 1);
  try {
    NsightCompute(fake.executable()).available_metrics(3);
    ADD_FAILURE() << "queried";
  } catch (const ProfilerUnavailable& error) {
    EXPECT_THAT(error.what(), HasSubstr("--query-metrics failed (exit code 1): Failed to query metrics: no device 3"));
  }
}

TEST_F(NsightComputeTest, NoKnownMetricIsRefusedBeforeProfiling) {
  FakeNcu fake(folder_);
  fake.query_metrics(query_metrics_listing({"dram__bytes_read"}), 0);
  std::vector<std::string> missing;
  EXPECT_THROW(NsightCompute(fake.executable()).profile({"true"}, {"no__such_metric.sum"}, "gemm", &missing),
               ProfilerUnavailable);
  EXPECT_EQ(fake.last_arguments(), "") << "ncu was not run to profile";
}

// $TILETUNE_NCU first; without ncu anywhere, one line naming every place looked at.
TEST_F(NsightComputeTest, FindUsesTheEnvironmentAndNamesWhereItLooked) {
  FakeNcu fake(folder_);
  const char* old_ncu = std::getenv("TILETUNE_NCU");
  const char* old_path = std::getenv("PATH");
  const char* old_cuda = std::getenv("CUDA_HOME");
  const std::string saved_path = old_path ? old_path : "";
  ::setenv("TILETUNE_NCU", fake.executable().c_str(), 1);
  EXPECT_EQ(NsightCompute::find().executable(), fake.executable());

  ::setenv("TILETUNE_NCU", (folder_ / "nowhere" / "ncu").c_str(), 1);
  EXPECT_THROW(NsightCompute::find(), ProfilerUnavailable);

  ::unsetenv("TILETUNE_NCU");
  ::setenv("PATH", folder_.c_str(), 1);
  EXPECT_EQ(NsightCompute::find().executable(), fake.executable());

  const bool system_ncu = std::filesystem::exists("/usr/local/cuda/bin/ncu");
  ::setenv("PATH", (folder_ / "empty").c_str(), 1);
  ::setenv("CUDA_HOME", (folder_ / "cuda").c_str(), 1);
  if (!system_ncu) {
    try {
      NsightCompute::find();
      ADD_FAILURE() << "found";
    } catch (const ProfilerUnavailable& error) {
      EXPECT_EQ(std::string(error.what()),
                "Nsight Compute (ncu) not found (looked in $TILETUNE_NCU, $PATH, " +
                    (folder_ / "cuda" / "bin" / "ncu").string() +
                    ", /usr/local/cuda/bin/ncu): install it with the CUDA toolkit or set $TILETUNE_NCU");
    }
  }
  ::setenv("PATH", saved_path.c_str(), 1);
  if (old_ncu) ::setenv("TILETUNE_NCU", old_ncu, 1);
  if (old_cuda) {
    ::setenv("CUDA_HOME", old_cuda, 1);
  } else {
    ::unsetenv("CUDA_HOME");
  }
}

}  // namespace
}  // namespace tiletune

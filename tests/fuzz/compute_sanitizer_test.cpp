// compute-sanitizer's output read into findings per configuration, without a GPU: the samples
// follow real reports (NVIDIA's Compute Sanitizer manual, v2024.3, and logs posted in public issues:
// HeCBench #112/#133, CCCL #1891, cudf #12831, kokkos #6217, gunrock #844), with the child's
// "tiletune-sanitize-config:" markers and its own lines mixed in as they would be. The flags, the
// search for the executable and the process glue run against stand-in shell scripts.
#include "fuzz/compute_sanitizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tuner/system/child_process.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kTile8 = "TILE=8,PAD=0,SWIZZLE=0";
constexpr const char* kTile16 = "TILE=16,PAD=0,SWIZZLE=0";
constexpr const char* kTile32 = "TILE=32,PAD=1,SWIZZLE=0";

std::string marker(const char* configuration) {
  return sanitizer_config_marker(configuration) + "\n";
}

const SanitizerFindings& findings(const SanitizerResult& result, const char* configuration) {
  const SanitizerFindings* found = result.find(configuration);
  if (found == nullptr) {
    ADD_FAILURE() << "no findings for " << configuration;
    static const SanitizerFindings none;
    return none;
  }
  return *found;
}

// Two out-of-bounds reads by the TILE=16 kernel, nothing from the others; the child's progress
// lines in between, as progress_line prints them when stderr is not a terminal.
const std::string kMemcheckOutOfBounds =
    "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
    "pass tiled [TILE=8,PAD=0,SWIZZLE=0]: 3 cases\n" + marker(kTile16) +
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at tiled_gemm+0x490\n"
    "=========     by thread (1,0,0) in block (0,0,0)\n"
    "=========     Access at 0x7f71b9e01360 is out of bounds\n"
    "=========     and is 1 bytes after the nearest allocation at 0x7f71b9e00a00 of size 2400 bytes\n"
    "=========\n"
    "========= Invalid __global__ read of size 4 bytes\n"
    "=========     at tiled_gemm+0x490\n"
    "=========     by thread (2,0,0) in block (0,0,0)\n"
    "=========     Access at 0x7f71b9e01364 is out of bounds\n"
    "=========     and is 5 bytes after the nearest allocation at 0x7f71b9e00a00 of size 2400 bytes\n"
    "=========\n"
    "FAIL tiled [TILE=16,PAD=0,SWIZZLE=0]: C[0][15] is NaN\n" +
    marker(kTile32) + "pass tiled [TILE=32,PAD=1,SWIZZLE=0]: 3 cases\n"
    "3 configurations passed, 1 failed, 0 skipped\n"
    "========= ERROR SUMMARY: 2 errors\n";

TEST(SanitizerOutput, AttributesMemcheckReportsToTheConfigurationWhoseMarkerPrecedesThem) {
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, kMemcheckOutOfBounds, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  ASSERT_EQ(result.configurations.size(), 3u);
  EXPECT_EQ(result.configurations[0].configuration, kTile8);
  EXPECT_EQ(result.configurations[1].configuration, kTile16);
  EXPECT_EQ(result.configurations[2].configuration, kTile32);
  EXPECT_TRUE(findings(result, kTile8).clean());
  EXPECT_TRUE(findings(result, kTile32).clean());

  const SanitizerFindings& bad = findings(result, kTile16);
  EXPECT_EQ(bad.errors, 2);
  EXPECT_EQ(bad.warnings, 0);
  EXPECT_FALSE(bad.incomplete);
  EXPECT_EQ(bad.first_report,
            "Invalid __global__ read of size 4 bytes at tiled_gemm+0x490 by thread (1,0,0) in block "
            "(0,0,0) Access at 0x7f71b9e01360 is out of bounds and is 1 bytes after the nearest "
            "allocation at 0x7f71b9e00a00 of size 2400 bytes");
  EXPECT_THAT(bad.to_string(), StartsWith("TILE=16,PAD=0,SWIZZLE=0: 2 errors; first: Invalid"));
  EXPECT_EQ(findings(result, kTile8).to_string(), "TILE=8,PAD=0,SWIZZLE=0: clean");

  EXPECT_EQ(result.summary_count, 2);
  EXPECT_THAT(result.summary_lines, ElementsAre("ERROR SUMMARY: 2 errors"));
  EXPECT_EQ(result.unattributed, 0);
  EXPECT_EQ(result.reports(), 2);
  EXPECT_FALSE(result.clean());
  EXPECT_EQ(result.log, kMemcheckOutOfBounds);  // kept whole for the caller to save
}

// The manual's memcheck_demo run (release build, --destroy-on-device-error kernel), backtraces
// included as they are without --show-backtrace no: they stay out of the condensed text.
TEST(SanitizerOutput, LeavesBacktracesOutOfTheCondensedReport) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at unaligned_kernel()+0x70\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     Address 0x7f671ac00001 is misaligned\n"
      "=========     and is inside the nearest allocation at 0x7fb654c00000 of size 4 bytes\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "=========     Host Frame: [0x2774ec]\n"
      "=========                in /lib/x86_64-linux-gnu/libcuda.so.1\n"
      "=========     Host Frame:cudaLaunchKernel [0x6a578]\n"
      "=========                in /home/cuda/github/compute-sanitizer-samples/Memcheck/memcheck_demo\n"
      "=========     Host Frame:_start [0xada5]\n"
      "=========                in /home/cuda/github/compute-sanitizer-samples/Memcheck/memcheck_demo\n"
      "=========\n"
      "Running unaligned_kernel: no error\n" +
      marker(kTile16) +
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at out_of_bounds_function()+0xb0 in memcheck_demo.cu:39\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     Address 0x87654320 is out of bounds\n"
      "=========     and is 140,276,689,190,112 bytes before the nearest allocation at 0x7f953da00000 of size 1,024 bytes\n"
      "=========     Device Frame:out_of_bounds_kernel()+0x30 in memcheck_demo.cu:44\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "=========     Host Frame: [0x2774ec]\n"
      "=========                in /lib/x86_64-linux-gnu/libcuda.so.1\n"
      "=========\n"
      "Running out_of_bounds_kernel: no error\n"
      "========= ERROR SUMMARY: 2 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(findings(result, kTile8).errors, 1);
  EXPECT_EQ(findings(result, kTile8).first_report,
            "Invalid __global__ write of size 4 bytes at unaligned_kernel()+0x70 by thread (0,0,0) "
            "in block (0,0,0) Address 0x7f671ac00001 is misaligned and is inside the nearest "
            "allocation at 0x7fb654c00000 of size 4 bytes");
  EXPECT_EQ(findings(result, kTile16).errors, 1);
  EXPECT_THAT(findings(result, kTile16).first_report, HasSubstr("Address 0x87654320 is out of bounds"));
  EXPECT_THAT(findings(result, kTile16).first_report, Not(HasSubstr("Frame")));
}

// Racecheck in its analysis mode: the manual's block_error record (an error), a multi-line record
// as HeCBench #133 printed it (a warning), the summary line that counts both.
TEST(SanitizerOutput, CountsRacecheckAnalysisRecordsBySeverity) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile8) + marker(kTile16) +
      "========= Error: Race reported between Write access at tiled_gemm+0x90\n"
      "=========     and Read access at tiled_gemm+0x100 [508 hazards]\n"
      "=========\n" +
      marker(kTile32) +
      "========= Warning: Race reported between Read access at tiled_gemm+0x260\n"
      "=========     and Write access at tiled_gemm+0x200 [294291 hazards]\n"
      "=========     and Write access at tiled_gemm+0x2b0 [294127 hazards]\n"
      "=========\n"
      "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::racecheck, output, 0);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_TRUE(findings(result, kTile8).clean());
  EXPECT_EQ(findings(result, kTile16).errors, 1);
  EXPECT_EQ(findings(result, kTile16).warnings, 0);
  EXPECT_EQ(findings(result, kTile16).first_report,
            "Error: Race reported between Write access at tiled_gemm+0x90 and Read access at "
            "tiled_gemm+0x100 [508 hazards]");
  EXPECT_EQ(findings(result, kTile32).errors, 0);
  EXPECT_EQ(findings(result, kTile32).warnings, 1);
  EXPECT_THAT(findings(result, kTile32).first_report,
              HasSubstr("and Write access at tiled_gemm+0x2b0 [294127 hazards]"));
  EXPECT_THAT(findings(result, kTile32).to_string(), HasSubstr("0 errors, 1 warning"));
  EXPECT_EQ(result.summary_count, 2);
  EXPECT_EQ(result.unattributed, 0);
  EXPECT_FALSE(result.clean());
}

// Racecheck's per-byte hazard reports, in the manual's form and in the older one (gunrock #844).
TEST(SanitizerOutput, CountsRacecheckHazardReports) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile16) +
      "========= Error: Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :\n"
      "=========     Write Thread (0,0,0) at tiled_gemm+0x2f0\n"
      "=========     Write Thread (1,0,0) at tiled_gemm+0x2f0\n"
      "=========     Current Value : 1, Incoming Value : 2\n"
      "=========\n"
      "========= Error: Potential RAW hazard detected at __shared__ 0x4 in block (0,0,0) :\n"
      "=========     Write Thread (1,0,0) at tiled_gemm+0x2f0\n"
      "=========     Read Thread (0,1,0) at tiled_gemm+0x300\n"
      "=========     Current Value : 2\n"
      "=========\n" +
      marker(kTile32) +
      "========= WARN:(Warp Level Programming) Potential RAW hazard detected at __shared__ 0xf4 in block (0, 0, 0) :\n"
      "=========     Write Thread (24, 0, 0) at 0x00001ab0 in warp_scan.cuh:146:tiled_gemm\n"
      "=========     Read Thread (25, 0, 0) at 0x00001b00 in warp_scan.cuh:151:tiled_gemm\n"
      "=========\n"
      "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::racecheck, output, 0);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(findings(result, kTile16).errors, 2);
  EXPECT_EQ(findings(result, kTile16).first_report,
            "Error: Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) : Write Thread "
            "(0,0,0) at tiled_gemm+0x2f0 Write Thread (1,0,0) at tiled_gemm+0x2f0 Current Value : "
            "1, Incoming Value : 2");
  EXPECT_EQ(findings(result, kTile32).warnings, 1);
  EXPECT_THAT(findings(result, kTile32).first_report,
              StartsWith("WARN:(Warp Level Programming) Potential RAW hazard detected at __shared__ 0xf4"));
  EXPECT_EQ(result.unattributed, 0);
}

TEST(SanitizerOutput, ReadsSynccheckBarrierErrors) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
      "========= Barrier error detected. Divergent thread(s) in block\n"
      "=========     at tiled_gemm+0x578\n"
      "=========     by thread (32,0,0) in block (0,0,0)\n"
      "=========\n"
      "========= Barrier error detected. Divergent thread(s) in block\n"
      "=========     at tiled_gemm+0x578\n"
      "=========     by thread (33,0,0) in block (0,0,0)\n"
      "=========\n" +
      marker(kTile16) +
      "========= Barrier error detected. Invalid arguments.\n"
      "=========     at __cuda_sm70_warpsync+0x30\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     Device Frame:__syncwarp(unsigned int)+0xf0 in sm_30_intrinsics.hpp:110\n"
      "=========\n"
      "========= ERROR SUMMARY: 3 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::synccheck, output, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(findings(result, kTile8).errors, 2);
  EXPECT_EQ(findings(result, kTile8).first_report,
            "Barrier error detected. Divergent thread(s) in block at tiled_gemm+0x578 by thread "
            "(32,0,0) in block (0,0,0)");
  EXPECT_EQ(findings(result, kTile16).errors, 1);
  EXPECT_EQ(findings(result, kTile16).first_report,
            "Barrier error detected. Invalid arguments. at __cuda_sm70_warpsync+0x30 by thread "
            "(0,0,0) in block (0,0,0)");
}

// Initcheck: a kernel read of never-written memory (the manual's memset_error) and a copy of
// uninitialized device memory back to the host (dogqc #4).
TEST(SanitizerOutput, ReadsInitcheckReports) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile32) +
      "========= Uninitialized __global__ memory read of size 4 bytes\n"
      "=========     at tiled_gemm+0x70\n"
      "=========     by thread (31,0,0) in block (1,0,0)\n"
      "=========     Address 0x7f3c7ec000fc\n"
      "=========\n"
      "========= Host API memory access error at host access to 0x7f7fcdc01200 of size 400 bytes\n"
      "=========     Uninitialized access at 0x7f7fcdc01300 on access by cudaMemcpy source\n"
      "=========\n"
      "========= ERROR SUMMARY: 2 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::initcheck, output, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(findings(result, kTile32).errors, 2);
  EXPECT_EQ(findings(result, kTile32).first_report,
            "Uninitialized __global__ memory read of size 4 bytes at tiled_gemm+0x70 by thread "
            "(31,0,0) in block (1,0,0) Address 0x7f3c7ec000fc");
}

TEST(SanitizerOutput, ACleanRunIsClean) {
  const std::string memcheck = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                               "pass tiled [TILE=8,PAD=0,SWIZZLE=0]: 3 cases\n" + marker(kTile16) +
                               "pass tiled [TILE=16,PAD=0,SWIZZLE=0]: 3 cases\n"
                               "========= ERROR SUMMARY: 0 errors\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::memcheck, memcheck, 0);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_TRUE(result.clean());
  ASSERT_EQ(result.configurations.size(), 2u);
  EXPECT_TRUE(result.configurations[0].clean());
  EXPECT_TRUE(result.configurations[1].clean());
  EXPECT_EQ(result.summary_count, 0);

  const std::string racecheck = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                                "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
  EXPECT_TRUE(parse_sanitizer_output(SanitizerTool::racecheck, racecheck, 0).clean());
}

// A wrong result makes the replaying tiletune exit 1; compute-sanitizer then returns that code.
TEST(SanitizerOutput, TheChildsFindingsExitCodeStillMakesAValidRun) {
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                             "FAIL tiled [TILE=8,PAD=0,SWIZZLE=0]: C[3][4] = 7, expected 8\n"
                             "========= ERROR SUMMARY: 0 errors\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::memcheck, output, 1);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_TRUE(result.clean());
}

TEST(SanitizerOutput, ReportsBeforeTheFirstMarkerHaveTheirOwnEntry) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n"
      "========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to \"invalid argument\" on CUDA API call to cuMemAlloc_v2.\n"
      "=========\n" +
      marker(kTile8) + "========= ERROR SUMMARY: 1 error\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  ASSERT_EQ(result.configurations.size(), 2u);
  EXPECT_EQ(result.configurations[0].configuration, kBeforeFirstConfiguration);
  EXPECT_EQ(result.configurations[0].errors, 1);
  EXPECT_THAT(result.configurations[0].first_report,
              StartsWith("Program hit CUDA_ERROR_INVALID_VALUE (error 1)"));
  EXPECT_EQ(result.configurations[1].configuration, kTile8);
  EXPECT_TRUE(result.configurations[1].clean());
  EXPECT_EQ(result.summary_count, 1);  // "1 error", singular
}

TEST(SanitizerOutput, ARepeatedMarkerAddsToTheSameConfiguration) {
  const std::string report =
      "========= Invalid __shared__ write of size 4 bytes\n"
      "=========     at tiled_gemm+0x120\n"
      "=========     by thread (7,7,0) in block (0,0,0)\n"
      "=========     Address 0x1100 is out of bounds\n"
      "=========\n";
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) + report + marker(kTile16) +
                             marker(kTile8) + report + "========= ERROR SUMMARY: 2 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode);
  ASSERT_EQ(result.configurations.size(), 2u);
  EXPECT_EQ(findings(result, kTile8).errors, 2);
  EXPECT_TRUE(findings(result, kTile16).clean());
}

TEST(SanitizerOutput, TheChildsOwnRowsOfEqualsSignsAreNotReports) {
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                             "[==========] 3 tests ran\n"
                             "=================\n"
                             "========= ERROR SUMMARY: 0 errors\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::memcheck, output, 0);
  EXPECT_TRUE(result.clean()) << findings(result, kTile8).to_string();
}

// The pipe carries the child's partial lines and carriage returns too.
TEST(SanitizerOutput, FindsReportsAfterCarriageReturnsAndPartialLines) {
  const std::string output =
      "========= COMPUTE-SANITIZER\r\n" + marker(kTile8) +
      "\r\x1b[Kfuzz tiled [TILE=8,PAD=0,SWIZZLE=0] on NVIDIA H100========= Invalid __global__ write of size 4 bytes\r\n"
      "=========     at tiled_gemm+0x3a0\r\n"
      "=========     by thread (0,0,0) in block (3,0,0)\r\n"
      "=========     Address 0x7f0000001000 is out of bounds\r\n"
      "=========\r\n"
      "========= ERROR SUMMARY: 1 error\r\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(findings(result, kTile8).errors, 1);
  EXPECT_EQ(findings(result, kTile8).first_report,
            "Invalid __global__ write of size 4 bytes at tiled_gemm+0x3a0 by thread (0,0,0) in "
            "block (3,0,0) Address 0x7f0000001000 is out of bounds");
}

std::string repeated_reports(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) {
    text += "========= Invalid __global__ read of size 4 bytes\n"
            "=========     at tiled_gemm+0x490\n"
            "=========     by thread (" + std::to_string(i) + ",0,0) in block (0,0,0)\n"
            "=========     Access at 0x7f71b9e01360 is out of bounds\n"
            "=========\n";
  }
  return text;
}

// Past the print limit the summary still counts, but nothing says which configuration the rest
// belong to: the one where printing stopped and all later ones cannot be called clean.
TEST(SanitizerOutput, MarksConfigurationsAfterThePrintLimitIncomplete) {
  SanitizerOptions options;
  options.print_limit = 100;
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile8) + repeated_reports(60) + marker(kTile16) +
      repeated_reports(40) + marker(kTile32) +
      "========= ERROR SUMMARY: 257 errors\n"
      "========= ERROR SUMMARY: 157 errors were not printed. Use --print-limit option to adjust the number of printed errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode, options);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(result.summary_count, 257);
  EXPECT_EQ(result.unprinted, 157);
  EXPECT_EQ(result.unattributed, 0);
  EXPECT_EQ(findings(result, kTile8).errors, 60);
  EXPECT_FALSE(findings(result, kTile8).incomplete);
  EXPECT_EQ(findings(result, kTile16).errors, 40);
  EXPECT_TRUE(findings(result, kTile16).incomplete);
  EXPECT_TRUE(findings(result, kTile32).incomplete);
  EXPECT_FALSE(findings(result, kTile32).clean());
  EXPECT_THAT(findings(result, kTile32).to_string(), HasSubstr("stopped printing"));
  EXPECT_FALSE(result.clean());
}

TEST(SanitizerOutput, ExactlyAsManyReportsAsTheLimitWithAMatchingSummaryAreComplete) {
  SanitizerOptions options;
  options.print_limit = 5;
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) + repeated_reports(5) +
                             marker(kTile16) + "========= ERROR SUMMARY: 5 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode, options);
  EXPECT_FALSE(findings(result, kTile8).incomplete);
  EXPECT_TRUE(findings(result, kTile16).clean());

  // Without a summary that says so (a format this parser does not know), the limit is assumed hit.
  const std::string unsure = "========= COMPUTE-SANITIZER\n" + marker(kTile8) + repeated_reports(5) +
                             marker(kTile16) + "========= ERROR SUMMARY: 5 errors (and more)\n";
  const SanitizerResult limited =
      parse_sanitizer_output(SanitizerTool::memcheck, unsure, kSanitizerErrorExitCode, options);
  EXPECT_TRUE(findings(limited, kTile16).incomplete);
}

TEST(SanitizerOutput, RacechecksHazardLimitMakesTheRestIncomplete) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile8) + marker(kTile16) +
      "========= Warning: Maximum number of hazards reached. Environment variable "
      "NV_COMPUTE_SANITIZER_MAX_RACECHECK_HAZARDS can be used to increase this count.\n"
      "=========\n"
      "========= Error: Race reported between Write access at tiled_gemm+0x90\n"
      "=========     and Read access at tiled_gemm+0x100 [10000000 hazards]\n"
      "=========\n" +
      marker(kTile32) + "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::racecheck, output, 0);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_FALSE(findings(result, kTile8).incomplete);
  EXPECT_TRUE(findings(result, kTile16).incomplete);
  EXPECT_EQ(findings(result, kTile16).errors, 1);
  EXPECT_TRUE(findings(result, kTile32).incomplete);
  ASSERT_EQ(result.notices.size(), 1u);
  EXPECT_THAT(result.notices[0], StartsWith("Warning: Maximum number of hazards reached"));
}

// A summary that counts more than the log shows (a report form this parser does not know) must not
// leave every configuration looking clean.
TEST(SanitizerOutput, ErrorsTheSummaryCountsButTheLogDoesNotShowAreNotClean) {
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                             "========= ERROR SUMMARY: 3 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode);
  EXPECT_EQ(result.failure, std::nullopt);
  EXPECT_EQ(result.unattributed, 3);
  EXPECT_TRUE(findings(result, kTile8).clean());
  EXPECT_FALSE(result.clean());
}

// cudf #12831: the application never used CUDA. No summary, an exit code: a failure.
TEST(SanitizerFailure, TheChildNeverReachingCudaIsAFailure) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n"
      "tiletune: --case: expected MxNxK\n"
      "========= Error: Target application terminated before first instrumented API call\n"
      "========= Tracking kernels launched by child processes requires the --target-processes all option.\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::memcheck, output, 2);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_THAT(*result.failure,
              HasSubstr("Target application terminated before first instrumented API call"));
  EXPECT_FALSE(result.clean());
  EXPECT_TRUE(result.configurations.empty());
}

TEST(SanitizerFailure, AnUnsupportedDeviceIsAFailure) {
  const std::string output = "========= COMPUTE-SANITIZER\n"
                             "========= Error: Device not supported\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::racecheck, output, 1);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_THAT(*result.failure, HasSubstr("Device not supported"));
  EXPECT_FALSE(result.clean());
}

// The manual's memory-footprint failure: the launch went unchecked, so "0 errors" proves nothing.
TEST(SanitizerFailure, AnInternalErrorSpoilsEvenAZeroSummary) {
  const std::string output =
      "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
      "========= Internal Sanitizer Error: The Sanitizer encountered an error while launching "
      "tiled_gemm and didn't track the launch. Errors might go undetected. (Unable to allocate "
      "enough memory to perform the requested operation)\n"
      "========= ERROR SUMMARY: 0 errors\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::memcheck, output, 0);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_THAT(*result.failure, HasSubstr("Internal Sanitizer Error"));
  EXPECT_FALSE(result.clean());
  EXPECT_TRUE(findings(result, kTile8).clean());  // what was printed is still there
}

TEST(SanitizerFailure, AnExitCodeWithoutASummaryIsAFailure) {
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                             "========= Invalid __global__ read of size 4 bytes\n"
                             "=========     at tiled_gemm+0x490\n";
  const SanitizerResult crashed = parse_sanitizer_output(SanitizerTool::memcheck, output, 139);
  ASSERT_TRUE(crashed.failure.has_value());
  EXPECT_THAT(*crashed.failure, HasSubstr("killed by signal 11"));
  EXPECT_EQ(findings(crashed, kTile8).errors, 1);

  const SanitizerResult no_summary = parse_sanitizer_output(SanitizerTool::memcheck, output, 1);
  ASSERT_TRUE(no_summary.failure.has_value());
  EXPECT_THAT(*no_summary.failure, HasSubstr("no summary"));
  EXPECT_THAT(*no_summary.failure, HasSubstr("exit code 1"));

  const SanitizerResult nothing = parse_sanitizer_output(SanitizerTool::memcheck, "", 0);
  ASSERT_TRUE(nothing.failure.has_value());
  EXPECT_FALSE(nothing.clean());
}

TEST(SanitizerFailure, TiletunesOwnFailureExitCodesAreFailures) {
  const std::string output = "========= COMPUTE-SANITIZER\n"
                             "tiletune: no CUDA driver: libcuda.so.1: cannot open shared object file\n"
                             "========= ERROR SUMMARY: 0 errors\n";
  const SanitizerResult result = parse_sanitizer_output(SanitizerTool::memcheck, output, 3);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_THAT(*result.failure, HasSubstr("exit code 3 (no GPU, driver or NVRTC)"));
}

// ninfer-3090 #76: a banner and "0 errors", and the program never ran. Without a marker nothing
// was checked.
TEST(SanitizerFailure, ASummaryWithoutAnyMarkerIsAFailure) {
  const SanitizerResult result = parse_sanitizer_output(
      SanitizerTool::memcheck, "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_THAT(*result.failure, HasSubstr("tiletune-sanitize-config:"));
  EXPECT_FALSE(result.clean());
}

TEST(SanitizerFailure, TheErrorExitCodeWithNothingReportedIsAFailure) {
  const std::string output = "========= COMPUTE-SANITIZER\n" + marker(kTile8) +
                             "========= ERROR SUMMARY: 0 errors\n";
  const SanitizerResult result =
      parse_sanitizer_output(SanitizerTool::memcheck, output, kSanitizerErrorExitCode);
  EXPECT_TRUE(result.failure.has_value());
}

// ---- Tools and flags ----------------------------------------------------------------------------

TEST(SanitizerTools, NamesRoundTrip) {
  for (SanitizerTool tool : kSanitizerTools) EXPECT_EQ(parse_sanitizer_tool(to_string(tool)), tool);
  EXPECT_EQ(parse_sanitizer_tool("leakcheck"), std::nullopt);
  EXPECT_EQ(sanitizer_config_marker("TILE=8"), "tiletune-sanitize-config: TILE=8");
}

TEST(SanitizerFlags, CommonFlagsComeFirstForEveryTool) {
  for (SanitizerTool tool : kSanitizerTools) {
    const std::vector<std::string> flags = sanitizer_flags(tool);
    ASSERT_GE(flags.size(), 12u);
    EXPECT_EQ(std::vector<std::string>(flags.begin(), flags.begin() + 12),
              (std::vector<std::string>{"--tool", std::string(to_string(tool)), "--print-limit",
                                        "10000", "--error-exitcode", "86", "--check-exit-code",
                                        "no", "--require-cuda-init", "yes", "--show-backtrace",
                                        "no"}));
  }
}

TEST(SanitizerFlags, EachToolGetsItsOwn) {
  auto tail = [](SanitizerTool tool) {
    const std::vector<std::string> flags = sanitizer_flags(tool);
    return std::vector<std::string>(flags.begin() + 12, flags.end());
  };
  EXPECT_THAT(tail(SanitizerTool::memcheck),
              ElementsAre("--destroy-on-device-error", "kernel", "--padding", "512"));
  EXPECT_THAT(tail(SanitizerTool::racecheck), ElementsAre("--racecheck-report", "analysis"));
  EXPECT_THAT(tail(SanitizerTool::initcheck), ElementsAre("--check-api-memory-access", "yes"));
  EXPECT_THAT(tail(SanitizerTool::synccheck), ElementsAre("--destroy-on-device-error", "kernel"));
}

TEST(SanitizerFlags, OptionsChangeThem) {
  SanitizerOptions options;
  options.print_limit = 0;
  options.racecheck_report = "all";
  options.extra_flags = {"--racecheck-detect-level", "info"};
  const std::vector<std::string> flags = sanitizer_flags(SanitizerTool::racecheck, options);
  EXPECT_EQ(flags[3], "0");
  EXPECT_THAT(std::vector<std::string>(flags.end() - 4, flags.end()),
              ElementsAre("--racecheck-report", "all", "--racecheck-detect-level", "info"));
}

TEST(SanitizerFlags, AnExtraFlagReplacesOursOfTheSameName) {
  SanitizerOptions options;
  options.extra_flags = {"--show-backtrace=device", "--padding", "4096"};
  EXPECT_THAT(sanitizer_flags(SanitizerTool::memcheck, options),
              ElementsAre("--tool", "memcheck", "--print-limit", "10000", "--error-exitcode", "86",
                          "--check-exit-code", "no", "--require-cuda-init", "yes",
                          "--destroy-on-device-error", "kernel", "--show-backtrace=device",
                          "--padding", "4096"));
}

// ---- Finding the executable ---------------------------------------------------------------------

class ScratchFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("tiletune_sanitizer_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::filesystem::path script(const std::filesystem::path& relative, const std::string& body,
                               bool executable = true) {
    const std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), executable ? 0755 : 0644);
    return path;
  }

  std::filesystem::path root_;
};

using SanitizerSearchTest = ScratchFolder;

TEST_F(SanitizerSearchTest, PrefersTheOverrideThenPathThenTheToolkit) {
  const auto in_path = script("path/compute-sanitizer", "");
  const auto in_home_bin = script("cuda-home/bin/compute-sanitizer", "");
  const auto in_toolkit = script("usr-local-cuda/compute-sanitizer/compute-sanitizer", "");
  const auto chosen = script("elsewhere/my-sanitizer", "");

  SanitizerSearch search;
  search.path_variable = "/nonexistent:" + (root_ / "path").string();
  search.toolkit_folders = {root_ / "cuda-home", root_ / "usr-local-cuda"};
  EXPECT_EQ(find_compute_sanitizer(search), in_path);

  search.override_path = chosen.string();
  EXPECT_EQ(find_compute_sanitizer(search), chosen);

  search.override_path.clear();
  search.path_variable.clear();
  EXPECT_EQ(find_compute_sanitizer(search), in_home_bin);
  search.toolkit_folders = {root_ / "usr-local-cuda"};
  EXPECT_EQ(find_compute_sanitizer(search), in_toolkit);
}

TEST_F(SanitizerSearchTest, AnOverrideWithoutASlashIsLookedUpInPath) {
  const auto found = script("bin/compute-sanitizer-2025", "");
  SanitizerSearch search;
  search.override_path = "compute-sanitizer-2025";
  search.path_variable = (root_ / "bin").string();
  EXPECT_EQ(find_compute_sanitizer(search), found);
}

TEST_F(SanitizerSearchTest, AWrongOverrideIsAnErrorNotAFallback) {
  script("path/compute-sanitizer", "");
  SanitizerSearch search;
  search.path_variable = (root_ / "path").string();
  search.override_path = (root_ / "missing/compute-sanitizer").string();
  try {
    find_compute_sanitizer(search);
    FAIL() << "expected SanitizerNotFound";
  } catch (const SanitizerNotFound& e) {
    EXPECT_THAT(e.what(), HasSubstr("TILETUNE_COMPUTE_SANITIZER"));
    EXPECT_THAT(e.what(), HasSubstr("missing/compute-sanitizer"));
  }
}

TEST_F(SanitizerSearchTest, NotFoundNamesEveryPlaceLookedAt) {
  script("path/compute-sanitizer", "", /*executable=*/false);  // there, but not executable
  SanitizerSearch search;
  search.path_variable = (root_ / "path").string();
  search.toolkit_folders = {root_ / "cuda"};
  try {
    find_compute_sanitizer(search);
    FAIL() << "expected SanitizerNotFound";
  } catch (const SanitizerNotFound& e) {
    const std::string message = e.what();
    EXPECT_THAT(message, HasSubstr("compute-sanitizer not found"));
    EXPECT_THAT(message, HasSubstr((root_ / "path").string()));
    EXPECT_THAT(message, HasSubstr((root_ / "cuda/bin/compute-sanitizer").string()));
    EXPECT_THAT(message, HasSubstr((root_ / "cuda/compute-sanitizer/compute-sanitizer").string()));
    EXPECT_THAT(message, HasSubstr("TILETUNE_COMPUTE_SANITIZER"));
  }
}

TEST(SanitizerSearchEnvironment, ReadsTheVariablesAndEndsWithUsrLocalCuda) {
  ASSERT_EQ(setenv("TILETUNE_COMPUTE_SANITIZER", "/opt/cs", 1), 0);
  ASSERT_EQ(setenv("CUDA_HOME", "/opt/cuda-13.0", 1), 0);
  const SanitizerSearch search = SanitizerSearch::from_environment();
  unsetenv("TILETUNE_COMPUTE_SANITIZER");
  unsetenv("CUDA_HOME");
  EXPECT_EQ(search.override_path, "/opt/cs");
  EXPECT_THAT(search.toolkit_folders,
              ElementsAre(std::filesystem::path("/opt/cuda-13.0"), std::filesystem::path("/usr/local/cuda")));
}

// ---- Running it -----------------------------------------------------------------------------------

using SanitizerRun = ScratchFolder;

// A stand-in compute-sanitizer: prints its arguments, then a report for the second configuration,
// and exits as compute-sanitizer does when errors were found.
TEST_F(SanitizerRun, RunsTheCommandAndParsesWhatItPrinted) {
  const auto fake = script("compute-sanitizer",
                           "echo \"args: $*\"\n"
                           "echo '========= COMPUTE-SANITIZER'\n"
                           "echo 'tiletune-sanitize-config: TILE=8,PAD=0,SWIZZLE=0'\n"
                           "echo 'tiletune-sanitize-config: TILE=16,PAD=0,SWIZZLE=0' >&2\n"
                           "echo '========= Invalid __global__ read of size 4 bytes'\n"
                           "echo '=========     at tiled_gemm+0x490'\n"
                           "echo \"marker from the environment: $TILETUNE_TEST_SEEN\"\n"
                           "echo '========= ERROR SUMMARY: 1 error'\n"
                           "exit 86\n");
  SanitizerOptions options;
  options.environment = {{"TILETUNE_TEST_SEEN", "yes"}};
  const std::vector<std::string> child = {"/path/to/tiletune", "fuzz", "kernels_src/tiled.cu",
                                          "--backend", "gpu", "--sanitizer-child",
                                          "--case", "37x29x45 lda=50 ldb=31 ldc=29 inputs=small_integers data=12 schedule=7"};
  const SanitizerResult result = run_compute_sanitizer(fake, SanitizerTool::memcheck, child, options);
  EXPECT_EQ(result.exit_code, kSanitizerErrorExitCode);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.failure, std::nullopt) << result.log;
  EXPECT_EQ(findings(result, kTile16).errors, 1);
  EXPECT_TRUE(findings(result, kTile8).clean());
  EXPECT_THAT(result.log, HasSubstr("marker from the environment: yes"));

  std::vector<std::string> expected = {fake.string()};
  const auto flags = sanitizer_flags(SanitizerTool::memcheck, options);
  expected.insert(expected.end(), flags.begin(), flags.end());
  expected.insert(expected.end(), child.begin(), child.end());
  EXPECT_EQ(result.command, expected);
  EXPECT_THAT(result.log, HasSubstr("args: --tool memcheck --print-limit 10000"));
  EXPECT_THAT(result.log, HasSubstr("--sanitizer-child --case 37x29x45 lda=50"));
}

TEST_F(SanitizerRun, ATimeoutIsAFailureThatSaysSo) {
  const auto fake = script("compute-sanitizer",
                           "echo '========= COMPUTE-SANITIZER'\n"
                           "echo 'tiletune-sanitize-config: TILE=8,PAD=0,SWIZZLE=0'\n"
                           "sleep 60\n");
  SanitizerOptions options;
  options.timeout = std::chrono::seconds(1);
  const SanitizerResult result = run_compute_sanitizer(fake, SanitizerTool::racecheck, {"tiletune"}, options);
  EXPECT_TRUE(result.timed_out);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_THAT(*result.failure, HasSubstr("killed after the 1 s timeout"));
  EXPECT_THAT(result.log, HasSubstr("tiletune-sanitize-config: TILE=8"));
  EXPECT_FALSE(result.clean());
}

TEST_F(SanitizerRun, AMissingSanitizerCannotBeStarted) {
  EXPECT_THROW(run_compute_sanitizer(root_ / "no-such-sanitizer", SanitizerTool::memcheck, {"tiletune"}),
               SpawnError);
  EXPECT_THROW(run_compute_sanitizer(root_ / "no-such-sanitizer", SanitizerTool::memcheck, {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace tiletune

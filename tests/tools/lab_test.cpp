// The labs (tools/labs/, tiletune lab NAME): their claims judged on given numbers, the tables, the
// lab kernels compiled with NVRTC, the CPU reference, the command without a GPU, and on a GPU both
// labs run for real.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "tests/support/gpu_test.h"
#include "tools/labs/bank_conflicts_lab.h"
#include "tools/labs/lab_sources.h"
#include "tools/labs/tiling_lab.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/kernel_template.h"
#include "tuner/profiling/counter_metrics.h"
#include "tuner/profiling/nsight_compute.h"

namespace tiletune::labs {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

Timing timing(double median_ms, double min_ms) {
  Timing t;
  t.median_ms = median_ms;
  t.min_ms = min_ms;
  t.max_ms = median_ms * 1.1;
  t.runs = 20;
  return t;
}

// The four variants counted as the tutorials say (ncu's numbers, smaller), stride 32 12.5x slower.
std::vector<SharedAccessMeasurement> measured_as_the_tutorials_say() {
  std::vector<SharedAccessMeasurement> rows;
  for (const char* name : {"stride1", "stride32", "padded", "swizzled"}) {
    SharedAccessMeasurement row;
    row.variant = name;
    const bool conflicted = std::string(name) == "stride32";
    row.requests = 32768;
    row.wavefronts = conflicted ? 32 * 32768.0 : 32768;
    row.excessive = conflicted ? 31 * 32768.0 : 0;
    row.hardware_conflicts = conflicted ? 1015808 : 1200;  // the hardware counter is never judged
    row.timing = conflicted ? timing(0.50, 0.48) : timing(0.04, 0.038);
    rows.push_back(row);
  }
  return rows;
}

std::vector<Verdict> verdicts(const std::vector<Claim>& claims) {
  std::vector<Verdict> v;
  for (const Claim& c : claims) v.push_back(c.verdict);
  return v;
}

SharedAccessMeasurement& row(std::vector<SharedAccessMeasurement>& rows, const std::string& name) {
  for (SharedAccessMeasurement& r : rows) {
    if (r.variant == name) return r;
  }
  throw std::logic_error(name);
}

TEST(BankConflictClaims, ConfirmedWhenTheCountsAreTheTutorials) {
  const std::vector<Claim> claims = bank_conflict_claims(measured_as_the_tutorials_say(), "");
  ASSERT_EQ(claims.size(), 5u);
  EXPECT_THAT(verdicts(claims),
              ElementsAre(Verdict::kConfirmed, Verdict::kConfirmed, Verdict::kConfirmed,
                          Verdict::kConfirmed, Verdict::kConfirmed));
  EXPECT_EQ(claims[3].statement, "stride32: 32-way, 31 excessive wavefronts per request");
  EXPECT_EQ(claims[3].measured, "1015808 excessive / 32768 requests = 31.00");
  EXPECT_EQ(claims_exit_code(claims), 0);
}

TEST(BankConflictClaims, ExcessiveWavefrontsOnAConflictFreeLayoutRefuteIt) {
  std::vector<SharedAccessMeasurement> rows = measured_as_the_tutorials_say();
  row(rows, "padded").excessive = 64;
  const std::vector<Claim> claims = bank_conflict_claims(rows, "");
  EXPECT_EQ(claims[1].statement, "padded: no excessive shared wavefronts");
  EXPECT_EQ(claims[1].verdict, Verdict::kRefuted);
  EXPECT_EQ(claims[1].measured, "64 excessive wavefronts");
  EXPECT_EQ(claims_exit_code(claims), 1);
}

TEST(BankConflictClaims, ASixteenWayConflictRefutesThirtyTwoWay) {
  std::vector<SharedAccessMeasurement> rows = measured_as_the_tutorials_say();
  row(rows, "stride32").excessive = 15 * 32768.0;
  EXPECT_EQ(bank_conflict_claims(rows, "")[3].verdict, Verdict::kRefuted);
  row(rows, "stride32").excessive = 30 * 32768.0;  // 31-way is not 32-way either
  EXPECT_EQ(bank_conflict_claims(rows, "")[3].verdict, Verdict::kRefuted);
}

TEST(BankConflictClaims, StrideThirtyTwoWithinTheNoiseOfAnotherIsNotSlower) {
  std::vector<SharedAccessMeasurement> rows = measured_as_the_tutorials_say();
  row(rows, "swizzled").timing = timing(0.49, 0.47);  // stride32's fastest run 0.48 beats it
  const std::vector<Claim> claims = bank_conflict_claims(rows, "");
  EXPECT_EQ(claims[4].verdict, Verdict::kRefuted);
  EXPECT_EQ(claims[4].measured, "median time over stride1 x12.50, padded x12.50, swizzled x1.02");
}

TEST(BankConflictClaims, WithoutCountersTheCounterClaimsAreNotMeasuredAndTimingStillJudged) {
  std::vector<SharedAccessMeasurement> rows = measured_as_the_tutorials_say();
  for (SharedAccessMeasurement& r : rows)
    r.requests = r.wavefronts = r.excessive = r.hardware_conflicts = std::nullopt;
  const std::vector<Claim> claims =
      bank_conflict_claims(rows, "no permission to read GPU counters (ERR_NVGPUCTRPERM)");
  EXPECT_THAT(verdicts(claims),
              ElementsAre(Verdict::kNotMeasured, Verdict::kNotMeasured, Verdict::kNotMeasured,
                          Verdict::kNotMeasured, Verdict::kConfirmed));
  EXPECT_EQ(verdict_text(claims[0]),
            "not measured: no permission to read GPU counters (ERR_NVGPUCTRPERM)");
  EXPECT_EQ(claims_exit_code(claims), 0);
}

TEST(BankConflictClaims, AMetricNcuDidNotGiveIsNamed) {
  std::vector<SharedAccessMeasurement> rows = measured_as_the_tutorials_say();
  row(rows, "swizzled").excessive = std::nullopt;
  const std::vector<Claim> claims = bank_conflict_claims(rows, "");
  EXPECT_EQ(verdict_text(claims[2]), "not measured: ncu gave no excessive wavefronts for swizzled");
}

std::string ncu_name(const char* counter) { return find_counter_metric(counter)->ncu_metric; }

TEST(BankConflictCounters, LoadsAndStoresAddUpAndTheIdealCountsRequests) {
  // Loads and stores together: 10 requests each, 32-way on loads, conflict-free stores.
  SharedAccessMeasurement row;
  take_shared_access_counters({{ncu_name("shared_ld_wavefronts"), 320.0},
                               {ncu_name("shared_st_wavefronts"), 10.0},
                               {ncu_name("shared_ld_ideal_wavefronts"), 10.0},
                               {ncu_name("shared_st_ideal_wavefronts"), 10.0},
                               {ncu_name("shared_ld_excessive_wavefronts"), 310.0},
                               {ncu_name("shared_st_excessive_wavefronts"), 0.0},
                               {ncu_name("shared_ld_bank_conflicts"), 5.0},
                               {ncu_name("shared_st_bank_conflicts"), 6.0}},
                              row);
  EXPECT_EQ(row.wavefronts, 330.0);
  EXPECT_EQ(row.requests, 20.0);
  EXPECT_EQ(row.excessive, 310.0);
  EXPECT_EQ(row.hardware_conflicts, 11.0);

  SharedAccessMeasurement partial;  // no Source Counters (ideal, excessive), no store conflicts
  take_shared_access_counters({{ncu_name("shared_ld_wavefronts"), 320.0},
                               {ncu_name("shared_st_wavefronts"), 0.0},
                               {ncu_name("shared_ld_bank_conflicts"), 5.0}},
                              partial);
  EXPECT_EQ(partial.wavefronts, 320.0);
  EXPECT_EQ(partial.excessive, std::nullopt);
  EXPECT_EQ(partial.requests, std::nullopt);
  EXPECT_EQ(partial.hardware_conflicts, std::nullopt);
  const std::vector<std::string> asked = shared_access_metrics();
  EXPECT_THAT(asked, ::testing::Contains(ncu_name("shared_ld_ideal_wavefronts")));
}

// ncu runs the tiletune binary named, never the process reading the counters (a test binary).
TEST(LabCounters, NcuRunsTheNamedTiletuneLabKernel) {
  EXPECT_THAT(lab_kernel_command("/opt/bin/tiletune", {"tiling", "naive16", "1024"}),
              ElementsAre("/opt/bin/tiletune", "lab-kernel", "tiling", "naive16", "1024"));
}

TEST(TilingCounters, RequestsSectorsAndDramReadPlusWritten) {
  TilingMeasurement row;
  take_tiling_counters({{ncu_name("global_ld_requests"), 100.0},
                        {ncu_name("global_ld_sectors"), 400.0},
                        {ncu_name("dram_read_bytes"), 3000.0},
                        {ncu_name("dram_write_bytes"), 1000.0}},
                       row);
  EXPECT_EQ(row.load_requests, 100.0);
  EXPECT_EQ(row.load_sectors, 400.0);
  EXPECT_EQ(row.dram_bytes, 4000.0);
  EXPECT_EQ(tiling_metrics().size(), 4u);
}

std::vector<TilingMeasurement> tiling_rows(double requests_ratio16) {
  std::vector<TilingMeasurement> rows;
  for (const int size : kTilingSizes) {
    for (const TilingKernel& k : kTilingKernels) {
      TilingMeasurement row;
      row.kernel = k.name;
      row.size = size;
      row.timing = timing(1, 1);
      const double naive_requests = 2.0 * size * size / 32 * size;
      const double ratio = k.tile == 16 ? requests_ratio16 : 32;
      row.load_requests = k.tiled ? naive_requests / ratio : naive_requests;
      row.load_sectors = k.tiled ? naive_requests * 4 / 20 : naive_requests * 4;
      row.dram_bytes = 3.0 * size * size * 4;
      rows.push_back(row);
    }
  }
  return rows;
}

TEST(TilingClaims, RequestsRatioNearTileIsConfirmedSectorsAndDramReported) {
  const std::vector<Claim> claims = tiling_claims(tiling_rows(16), "");
  ASSERT_EQ(claims.size(), 18u);  // 3 sizes x 2 tiles x (requests, sectors, DRAM)
  EXPECT_EQ(claims[0].statement,
            "256^3 TILE=16: naive/tiled global load requests near 16 (within 10%)");
  EXPECT_EQ(claims[0].verdict, Verdict::kConfirmed);
  EXPECT_EQ(claims[1].statement, "256^3 TILE=16: naive/tiled global load sectors");
  EXPECT_EQ(claims[1].verdict, Verdict::kReported);
  EXPECT_THAT(claims[1].measured, StartsWith("20.00 ("));
  EXPECT_EQ(claims[2].verdict, Verdict::kReported);
  EXPECT_EQ(claims[2].measured, "1.00 (786432 / 786432)");
  EXPECT_EQ(claims_exit_code(claims), 0);
}

TEST(TilingClaims, ARequestsRatioFarFromTileRefutesIt) {
  const std::vector<Claim> claims = tiling_claims(tiling_rows(13.9), "");
  EXPECT_EQ(claims[0].verdict, Verdict::kRefuted);
  EXPECT_EQ(claims[0].measured.substr(0, 5), "13.90");
  EXPECT_EQ(claims[3].verdict, Verdict::kConfirmed);  // TILE=32 at 256^3
  EXPECT_EQ(claims_exit_code(claims), 1);
  // 14.5 is within 10% of 16.
  EXPECT_EQ(tiling_claims(tiling_rows(14.5), "")[0].verdict, Verdict::kConfirmed);
}

TEST(TilingClaims, WithoutCountersNothingIsConfirmed) {
  std::vector<TilingMeasurement> rows = tiling_rows(16);
  for (TilingMeasurement& r : rows) r.load_requests = r.load_sectors = r.dram_bytes = std::nullopt;
  const std::vector<Claim> claims =
      tiling_claims(rows, "Nsight Compute (ncu) not found: looked at ...");
  for (const Claim& c : claims) {
    EXPECT_EQ(c.verdict, Verdict::kNotMeasured) << c.statement;
    EXPECT_EQ(c.measured, "Nsight Compute (ncu) not found: looked at ...");
  }
  EXPECT_EQ(claims_exit_code(claims), 0);
}

TEST(ClaimsTable, AlignedColumnsAndTheReasonInPlaceOfVerdictAndMeasurement) {
  const std::vector<Claim> claims = {
      judged("stride1: no excessive shared wavefronts", true, "0 excessive wavefronts"),
      judged("padded: no excessive", false, "64 excessive wavefronts"),
      not_measured("swizzled: no excessive", "no permission to read GPU counters"),
      reported("sectors", "20.00 (a / b)")};
  EXPECT_EQ(
      format_claims_table(claims),
      "claim                                    verdict    measured\n"
      "stride1: no excessive shared wavefronts  confirmed  0 excessive wavefronts\n"
      "padded: no excessive                     REFUTED    64 excessive wavefronts\n"
      "swizzled: no excessive                   not measured: no permission to read GPU counters\n"
      "sectors                                  reported   20.00 (a / b)\n");
  const nlohmann::json json = claims_json(claims);
  EXPECT_EQ(json[1]["verdict"], "refuted");
  EXPECT_EQ(json[2]["verdict"], "not measured");
  EXPECT_EQ(json[2]["why"], "no permission to read GPU counters");
  EXPECT_EQ(json[3]["measured"], "20.00 (a / b)");
}

TEST(BankConflictLabTable, EndsWithTheClaimsTable) {
  BankConflictLab lab;
  lab.gpu = "NVIDIA H200";
  lab.rows = measured_as_the_tutorials_say();
  lab.claims = bank_conflict_claims(lab.rows, "");
  const std::string text = format_bank_conflict_lab(lab);
  EXPECT_THAT(text, StartsWith("bank conflicts on NVIDIA H200: 1024 blocks x 256 threads"));
  EXPECT_THAT(text, HasSubstr("stride32  tile[col][row] in [32][32]             500.0      480.0"
                              "        32768      1048576      1015808      1015808\n"));
  EXPECT_THAT(text, EndsWith(format_claims_table(lab.claims)));
  const nlohmann::json json = bank_conflict_lab_json(lab);
  EXPECT_EQ(json["lab"], "bank-conflicts");
  EXPECT_EQ(json["rows"][1]["variant"], "stride32");
  EXPECT_EQ(json["rows"][1]["excessive_wavefronts"], 31 * 32768.0);
  EXPECT_EQ(json["claims"][3]["verdict"], "confirmed");
  EXPECT_FALSE(json.contains("counters_not_measured"));
}

TEST(BankConflictLabTable, WithoutCountersDashesAndTheReasonOnce) {
  BankConflictLab lab;
  lab.gpu = "NVIDIA H200";
  lab.rows = measured_as_the_tutorials_say();
  for (SharedAccessMeasurement& r : lab.rows)
    r.requests = r.wavefronts = r.excessive = r.hardware_conflicts = std::nullopt;
  lab.why_no_counters = "Nsight Compute (ncu) not found";
  lab.claims = bank_conflict_claims(lab.rows, lab.why_no_counters);
  const std::string text = format_bank_conflict_lab(lab);
  EXPECT_THAT(text, HasSubstr("stride1   tile[row][col] in [32][32]              40.0       38.0"
                              "            -            -            -            -\n"));
  EXPECT_THAT(text, HasSubstr("counters not measured: Nsight Compute (ncu) not found\n"));
  EXPECT_EQ(bank_conflict_lab_json(lab)["rows"][0]["excessive_wavefronts"], nullptr);
}

TEST(TilingLabTable, EachSizeWithTheCpuReferenceThenTheClaims) {
  TilingLab lab;
  lab.gpu = "NVIDIA H100 80GB HBM3";
  lab.cpu_ms = {{256, 20.0}, {512, 160.0}, {1024, 1280.0}};
  lab.rows = tiling_rows(16);
  lab.rows[1].timing = timing(0.5, 0.5);  // tiled16 at 256^3: twice as fast as naive16
  lab.claims = tiling_claims(lab.rows, "");
  const std::string text = format_tiling_lab(lab);
  EXPECT_THAT(text, StartsWith("tiling on NVIDIA H100 80GB HBM3: square SGEMM"));
  EXPECT_THAT(text, HasSubstr("  256 CPU reference        20000.0       1.7\n"));
  EXPECT_THAT(text, HasSubstr("  256 tiled TILE=16          500.0      67.1     2.00     40.0      "
                              "  65536       209715       786432\n"));
  EXPECT_THAT(text, EndsWith(format_claims_table(lab.claims)));
  const nlohmann::json json = tiling_lab_json(lab);
  EXPECT_EQ(json["rows"][1]["global_load_requests"], 65536.0);
  EXPECT_EQ(json["claims"].size(), 18u);
}

// The lab kernels compile for sm_90, each entry with the shared tile its layout needs.
TEST(LabKernels, BankConflictKernelsCompileWithNvrtcForSm90) {
  for (const SharedAccessVariant& v : kSharedAccessVariants) {
    const CompiledKernelImage image = compile_cuda_source(
        std::string(bank_conflicts_source()), "bank_conflicts.cu", {}, "sm_90", v.entry, v.name);
    EXPECT_FALSE(image.cubin.empty()) << v.name;
    EXPECT_EQ(image.report.static_shared_bytes,
              std::string(v.name) == "padded" ? 32 * 33 * 4 : 32 * 32 * 4)
        << v.name << "\n"
        << image.log;
    EXPECT_EQ(image.report.spill_bytes(), 0) << v.name;
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The templates built into the binary are the shipped ones, at the lab's configurations.
TEST(LabKernels, TilingUsesTheShippedTemplatesAndTheyCompileForSm90) {
  const fs::path shipped = fs::path(TILETUNE_SOURCE_DIR) / "kernels_src";
  EXPECT_EQ(naive_template_source(), read_file(shipped / "naive.cu"));
  EXPECT_EQ(tiled_template_source(), read_file(shipped / "tiled.cu"));
  EXPECT_EQ(bank_conflicts_source(),
            read_file(fs::path(TILETUNE_SOURCE_DIR) / "tools" / "labs" / "bank_conflicts.cu"));
  const KernelTemplate naive = parse_template(std::string(naive_template_source()), "naive.cu");
  const KernelTemplate tiled = parse_template(std::string(tiled_template_source()), "tiled.cu");
  for (const int tile : {16, 32}) {
    EXPECT_FALSE(
        compile_configuration(
            naive, naive.parse_configuration(fmt::format("BLOCK_X={0},BLOCK_Y={0}", tile)), "sm_90")
            .cubin.empty());
    EXPECT_FALSE(
        compile_configuration(
            tiled, tiled.parse_configuration(fmt::format("TILE={},PAD=0,SWIZZLE=0", tile)), "sm_90")
            .cubin.empty());
  }
}

TEST(TilingReference, ComputesTheProductAndCatchesAWrongElement) {
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  const ReferenceProduct ref = cpu_reference_product(a, b, 2);
  EXPECT_THAT(ref.value, ElementsAre(19, 22, 43, 50));
  EXPECT_EQ(compare_with_reference({19, 22, 43, 50}, ref, 2), std::nullopt);
  const std::optional<std::string> wrong = compare_with_reference({19, 22, 43, 50.01f}, ref, 2);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_THAT(*wrong, StartsWith("C[1][1] = 50.01"));
  EXPECT_TRUE(compare_with_reference({19, 22, std::nanf(""), 50}, ref, 2).has_value());
}

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

Outcome tiletune(const std::string& arguments) {
  const fs::path dir =
      fs::temp_directory_path() / ("tiletune_lab_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string command = (fs::path(TILETUNE_BINARY_DIR) / "tools" / "tiletune").string() +
                              " " + arguments + " >" + (dir / "out").string() + " 2>" +
                              (dir / "err").string();
  const int status = std::system(command.c_str());
  Outcome run{WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_file(dir / "out"),
              read_file(dir / "err")};
  fs::remove_all(dir);
  return run;
}

bool gpu_present() {
  try {
    GpuDevice device;
    return true;
  } catch (const GpuUnavailable&) {
    return false;
  }
}

TEST(LabCommand, WithoutAGpuOneLineAndExitThree) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: the labs run (LabsOnGpu)";
  for (const char* lab : {"bank-conflicts", "tiling"}) {
    const Outcome run = tiletune(std::string("lab ") + lab);
    EXPECT_EQ(run.exit_code, 3) << run.err;
    EXPECT_THAT(run.err, StartsWith("tiletune: "));
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

TEST(LabCommand, AnUnknownLabIsBadInput) {
  const Outcome run = tiletune("lab strides");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, StartsWith("tiletune: "));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

// A kernel the labs do not have is bad input, with or without a GPU.
TEST(LabCommand, AnUnknownLabKernelIsBadInput) {
  for (const char* words :
       {"bank-conflicts stride7", "tiling tiled64 1024", "tiling tiled32 300", "tiling tiled32"}) {
    const Outcome run = tiletune(std::string("lab-kernel ") + words);
    EXPECT_EQ(run.exit_code, 2) << words << ": " << run.err;
    EXPECT_THAT(run.err, StartsWith("tiletune: ")) << words;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

class LabsOnGpu : public testing_support::GpuTest {};

// Both labs on this GPU with Nsight Compute where it is found: every result verified, nothing
// refuted; without ncu or permission the counter claims say so and only timing is judged.
TEST_F(LabsOnGpu, BothLabsRunAndNoClaimIsRefuted) {
  const CounterReader counters =
      nsight_compute_reader(fs::path(TILETUNE_BINARY_DIR) / "tools" / "tiletune");
  const BankConflictLab bank = run_bank_conflict_lab(*device_, counters);
  const std::string bank_text = format_bank_conflict_lab(bank);
  EXPECT_EQ(claims_exit_code(bank.claims), 0) << bank_text;
  ASSERT_EQ(bank.rows.size(), 4u);
  const TilingLab tiling = run_tiling_lab(*device_, counters);
  const std::string tiling_text = format_tiling_lab(tiling);
  EXPECT_EQ(claims_exit_code(tiling.claims), 0) << tiling_text;
  ASSERT_EQ(tiling.rows.size(), 12u);
  std::cout << bank_text << "\n" << tiling_text;
}

}  // namespace
}  // namespace tiletune::labs

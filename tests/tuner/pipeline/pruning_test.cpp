// Pruning before compiling (launch geometry) and after (ptxas's report), against an H100's limits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tuner/pipeline/pruning.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;

DeviceProperties h100() {
  DeviceProperties d;
  d.max_threads_per_block = 1024;
  d.max_block_dim[0] = d.max_block_dim[1] = 1024;
  d.max_block_dim[2] = 64;
  d.max_grid_dim[0] = 2147483647;
  d.max_grid_dim[1] = d.max_grid_dim[2] = 65535;
  d.max_shared_bytes_per_block = 48 * 1024;
  d.max_shared_bytes_per_block_optin = 227 * 1024;
  d.max_registers_per_block = 65536;
  d.max_registers_per_sm = 65536;
  d.max_threads_per_sm = 2048;
  d.warp_size = 32;
  return d;
}

// Parsed on first use: the expression parser's tables are not ready during static initialisation.
const KernelTemplate& pruning_template() {
  static const KernelTemplate tmpl = parse_template(
      "// tiletune: entry k\n"
      "// tiletune: param T 8 16 64\n"
      "// tiletune: param SMEM 0 1\n"
      "// tiletune: block T, T\n"
      "// tiletune: grid ceil_div(N, T), ceil_div(M, T)\n"
      "// tiletune: shared SMEM * 300000\n",
      "prune.cu");
  return tmpl;
}
const GemmShape kShape{100, 100, 100};

TEST(Pruning, BeforeCompilingTheGeometryDecides) {
  EXPECT_FALSE(prune_before_compile(pruning_template(), pruning_template().parse_configuration("T=16,SMEM=0"), kShape, h100()));
  const auto threads = prune_before_compile(pruning_template(), pruning_template().parse_configuration("T=64,SMEM=0"), kShape, h100());
  ASSERT_TRUE(threads);
  EXPECT_EQ(threads->status, ResultStatus::device_limit);
  EXPECT_THAT(threads->detail, HasSubstr("4096 threads per block"));
  const auto shared = prune_before_compile(pruning_template(), pruning_template().parse_configuration("T=8,SMEM=1"), kShape, h100());
  ASSERT_TRUE(shared);
  EXPECT_THAT(shared->detail, HasSubstr("300000 bytes of shared memory"));
}

TEST(Pruning, AfterCompilingSpillsAndZeroOccupancyArePruned) {
  const Configuration config = pruning_template().parse_configuration("T=16,SMEM=0");  // 256 threads
  PtxasReport report;
  report.registers = 64;
  EXPECT_FALSE(prune_after_compile(pruning_template(), config, kShape, report, h100(), {}));

  report.spill_store_bytes = 8;
  report.spill_load_bytes = 12;
  auto spills = prune_after_compile(pruning_template(), config, kShape, report, h100(), {});
  ASSERT_TRUE(spills);
  EXPECT_EQ(spills->status, ResultStatus::pruned);
  EXPECT_THAT(spills->detail, HasSubstr("spills 20 bytes"));
  EXPECT_FALSE(prune_after_compile(pruning_template(), config, kShape, report, h100(), {.keep_spilling = true}));

  report = PtxasReport{};
  report.registers = 255;
  report.static_shared_bytes = 240 * 1024;
  auto shared = prune_after_compile(pruning_template(), config, kShape, report, h100(), {});
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->status, ResultStatus::device_limit);

  // 255 registers round up to 256 per thread: 256 threads need the whole 64K file, one block fits.
  report.static_shared_bytes = 0;
  EXPECT_FALSE(prune_after_compile(pruning_template(), config, kShape, report, h100(), {}));
  DeviceProperties small = h100();
  small.max_registers_per_sm = 32768;
  small.max_registers_per_block = 65536;
  auto zero = prune_after_compile(pruning_template(), config, kShape, report, small, {});
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->status, ResultStatus::pruned);
  EXPECT_THAT(zero->detail, HasSubstr("zero occupancy"));
}

TEST(Pruning, ResidentBlocksCountRegistersPerWarpInUnitsOf256) {
  LaunchGeometry geometry;
  geometry.block = {128, 1, 1};  // 4 warps
  PtxasReport report;
  report.registers = 33;  // 33 * 32 = 1056, allocated as 1280 per warp
  EXPECT_EQ(resident_blocks_per_sm(geometry, report, h100()), 65536 / (4 * 1280));
  report.registers = 0;
  EXPECT_EQ(resident_blocks_per_sm(geometry, report, h100()), 2048 / 128);
}

}  // namespace
}  // namespace tiletune

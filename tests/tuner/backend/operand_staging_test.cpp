#include "tuner/backend/operand_staging.h"

#include <gtest/gtest.h>

namespace tiletune {
namespace {

LaunchGeometry maps(bool copy_a, bool copy_b) {
  LaunchGeometry geometry;
  geometry.tensor_maps = {{'A', true, true, copy_a, 32, 128}, {'B', true, false, copy_b, 136, 32}};
  return geometry;
}

constexpr std::uintptr_t kAligned = 0x7f0000000100, kOtherAligned = 0x7f0000100000;

TEST(OperandStaging, TmaReadsInPlaceOnlyRowsThatStart16ByteAligned) {
  EXPECT_TRUE(rows_start_aligned(kAligned, 4096));
  EXPECT_TRUE(rows_start_aligned(kAligned + 16, 4));
  EXPECT_FALSE(rows_start_aligned(kAligned, 4093)) << "row 1 starts 4 bytes past 16";
  EXPECT_FALSE(rows_start_aligned(kAligned, 4098));
  EXPECT_FALSE(rows_start_aligned(kAligned + 4, 4096)) << "a sub-matrix one float in";
}

TEST(OperandStaging, AlignedOperandsAreReadInPlace) {
  const GemmProblem problem{{4096, 4096, 4096}, 4096, 4100, 4096};
  const OperandStaging plan = plan_operand_staging(maps(true, true), kAligned, kOtherAligned, problem);
  EXPECT_TRUE(plan.copies.empty());
  EXPECT_EQ(plan.floats, 0u);
}

TEST(OperandStaging, UnalignedOperandsAreCopiedIntoAlignedRowsOneAfterTheOther) {
  // A: 5 rows of 7 floats, 9 apart; B: 7 rows of 3 floats, in place at 4 apart but one float in.
  const GemmProblem problem{{5, 3, 7}, 9, 4, 3};
  const OperandStaging plan = plan_operand_staging(maps(true, true), kAligned, kOtherAligned + 4, problem);
  ASSERT_EQ(plan.copies.size(), 2u);
  const OperandCopy& a = plan.copies[0];
  EXPECT_EQ(a.operand, 'A');
  EXPECT_EQ(a.rows, 5);
  EXPECT_EQ(a.width, 7);
  EXPECT_EQ(a.from_ld, 9);
  EXPECT_EQ(a.to_ld, 8);
  EXPECT_EQ(a.offset, 0u);
  const OperandCopy& b = plan.copies[1];
  EXPECT_EQ(b.operand, 'B');
  EXPECT_EQ(b.rows, 7);
  EXPECT_EQ(b.width, 3);
  EXPECT_EQ(b.from_ld, 4);
  EXPECT_EQ(b.to_ld, 4);
  EXPECT_EQ(b.offset, 64u) << "A's 40 floats, rounded up to 256 bytes";
  EXPECT_EQ(plan.floats, 128u);
}

TEST(OperandStaging, OnlyMapsThatDeclareCopyUnalignedAreCopied) {
  const GemmProblem problem{{5, 6, 7}, 9, 10, 6};
  const OperandStaging plan = plan_operand_staging(maps(false, true), kAligned, kOtherAligned, problem);
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].operand, 'B');
  EXPECT_EQ(plan.copies[0].to_ld, 8);
  EXPECT_TRUE(plan_operand_staging(LaunchGeometry{}, kAligned + 4, kOtherAligned, problem).copies.empty())
      << "a template without tensor maps reads its operands itself";
}

// A copy_unaligned declaration (no tensor map; geometry.aligned_copies) copies the same way, one
// product at a time: a strided batch is read in place.
TEST(OperandStaging, DeclaredCopiesOfOperandsWithoutMapsAreMadeForOneProductOnly) {
  GemmProblem problem{{5, 6, 7}, 9, 10, 6};
  LaunchGeometry geometry;
  geometry.aligned_copies = {{'B', false}};
  const OperandStaging plan = plan_operand_staging(geometry, kAligned, kOtherAligned, problem);
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].operand, 'B');
  EXPECT_EQ(plan.copies[0].rows, 7);
  EXPECT_EQ(plan.copies[0].width, 6);
  EXPECT_EQ(plan.copies[0].to_ld, 8);
  EXPECT_TRUE(plan_operand_staging(geometry, kAligned + 4, kOtherAligned + 16, GemmProblem{{5, 6, 7}, 9, 12, 6})
                  .copies.empty())
      << "B's rows start aligned; A is not named";
  problem.batch = 3;
  problem.stride_a = 5 * 9, problem.stride_b = 7 * 10, problem.stride_c = 5 * 6;
  EXPECT_TRUE(plan_operand_staging(geometry, kAligned, kOtherAligned, problem).copies.empty());
}

TEST(OperandStaging, ATransposedOperandsMapCopiesTheMatrixAsStored) {
  // op_b = t: B stored N x K (3 rows of 7 floats, 9 apart), its map the build's op_b=t one.
  GemmProblem problem{{5, 3, 7}, 8, 9, 3};
  problem.op_b = Op::t;
  LaunchGeometry geometry;
  geometry.tensor_maps = {{'A', true, true, true, 32, 128}, {'B', true, true, true, 32, 128, true}};
  EXPECT_EQ(geometry.tensor_maps[1].width(problem.shape), 7);
  EXPECT_EQ(geometry.tensor_maps[1].rows(problem.shape), 3);
  const OperandStaging plan = plan_operand_staging(geometry, kAligned, kOtherAligned, problem);
  ASSERT_EQ(plan.copies.size(), 1u) << "A is read in place at lda 8";
  const OperandCopy& b = plan.copies[0];
  EXPECT_EQ(b.operand, 'B');
  EXPECT_EQ(b.rows, 3);
  EXPECT_EQ(b.width, 7);
  EXPECT_EQ(b.from_ld, 9);
  EXPECT_EQ(b.to_ld, 8);
  // A transposed A alike: K x M, M wide.
  const TensorMapBox a{'A', true, true, true, 32, 128, true};
  EXPECT_EQ(a.width(problem.shape), 5);
  EXPECT_EQ(a.rows(problem.shape), 7);
}

}  // namespace
}  // namespace tiletune

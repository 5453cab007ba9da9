#include "tuner/backend/operand_staging.h"

namespace tiletune {

namespace {

constexpr std::int64_t kRowAlignFloats = 4;   // 16 bytes: TMA's global strides and address
constexpr std::size_t kCopyAlignFloats = 64;  // 256 bytes, as cuMemAlloc aligns

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

bool rows_start_aligned(std::uintptr_t address, std::int64_t ld) {
  return address % (kRowAlignFloats * sizeof(float)) == 0 && ld % kRowAlignFloats == 0;
}

OperandStaging plan_operand_staging(const LaunchGeometry& geometry, std::uintptr_t a,
                                    std::uintptr_t b, const GemmProblem& problem) {
  OperandStaging staging;
  // The operand copied where its rows are not aligned.
  const auto stage = [&](const StoredOperand& operand) {
    const bool is_a = operand.operand == 'A';
    const std::int64_t ld = is_a ? problem.lda : problem.ldb;
    if (rows_start_aligned(is_a ? a : b, ld)) return;
    OperandCopy copy;
    copy.operand = operand.operand;
    copy.rows = operand.rows(problem.shape);  // the matrix as stored (transposed: by the build)
    copy.width = operand.width(problem.shape);
    copy.from_ld = ld;
    copy.to_ld = round_up(copy.width, kRowAlignFloats);
    copy.offset = staging.floats;
    staging.floats += std::size_t(round_up(copy.rows * copy.to_ld, kCopyAlignFloats));
    staging.copies.push_back(copy);
  };
  for (const TensorMapBox& box : geometry.tensor_maps) {
    if (box.copy_unaligned) stage(box.stored());
  }
  // A batch's entries would each need a copy (a tensor map serves no batch).
  if (problem.batch == 1) {
    for (const StoredOperand& operand : geometry.aligned_copies) stage(operand);
  }
  return staging;
}

}  // namespace tiletune

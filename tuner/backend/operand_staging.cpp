#include "tuner/backend/operand_staging.h"

namespace tiletune {

namespace {

constexpr std::int64_t kRowAlignFloats = 4;   // 16 bytes: TMA's global strides and address
constexpr std::size_t kCopyAlignFloats = 64;  // 256 bytes, as cuMemAlloc aligns

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

bool tensor_map_reads_in_place(std::uintptr_t address, std::int64_t ld) {
  return address % (kRowAlignFloats * sizeof(float)) == 0 && ld % kRowAlignFloats == 0;
}

OperandStaging plan_operand_staging(const LaunchGeometry& geometry, std::uintptr_t a,
                                    std::uintptr_t b, const GemmProblem& problem) {
  OperandStaging staging;
  for (const TensorMapBox& box : geometry.tensor_maps) {
    const bool is_a = box.operand == 'A';
    const std::int64_t ld = is_a ? problem.lda : problem.ldb;
    if (!box.copy_unaligned || tensor_map_reads_in_place(is_a ? a : b, ld)) continue;
    OperandCopy copy;
    copy.operand = box.operand;
    copy.rows = box.rows(problem.shape);  // the matrix as stored (transposed: box.transposed)
    copy.width = box.width(problem.shape);
    copy.from_ld = ld;
    copy.to_ld = round_up(copy.width, kRowAlignFloats);
    copy.offset = staging.floats;
    staging.floats += std::size_t(round_up(copy.rows * copy.to_ld, kCopyAlignFloats));
    staging.copies.push_back(copy);
  }
  return staging;
}

}  // namespace tiletune

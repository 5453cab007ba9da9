// The operands a launch copies into aligned rows before its kernel reads them.
//
// TMA reads an operand whose address and rows are 16-byte aligned: a leading dimension that is a
// multiple of 4 floats. A template that declares `tensor_map ... copy_unaligned` runs at every
// other leading dimension too: its launcher first copies such an operand, row by row, into a
// staging buffer whose rows are, and hands the kernel (arguments and tensor map) the copy. A
// template without tensor maps whose 16-byte loads need such rows (warp_tiled's copies of B)
// asks the same with `copy_unaligned B EXPR`, where the expression says when the copy pays; its
// strided batches are read in place. The copy is part of every launch, so it is part of every
// time the tuner and bench measure.
// Backend-neutral: the GPU launcher copies with a kernel of its own (gpu/row_copy.h), the CPU
// backend with memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// Whether the rows of an operand at `address`, `ld` floats apart, all start 16-byte aligned (what
// TMA reads in place, and 16-byte vector loads).
bool rows_start_aligned(std::uintptr_t address, std::int64_t ld);

// One operand's copy: `rows` rows of `width` floats, `from_ld` apart in the caller's operand,
// `to_ld` (width rounded up to 4 floats) apart in the staging buffer, from float `offset` on.
struct OperandCopy {
  char operand = 'A';  // 'A': M rows of K floats; 'B': K rows of N floats
  std::int64_t rows = 0, width = 0, from_ld = 0, to_ld = 0;
  std::size_t offset = 0;  // a multiple of 64 floats: each copy starts 256-byte aligned
};

struct OperandStaging {
  std::vector<OperandCopy> copies;  // empty: every operand is read in place
  std::size_t floats = 0;           // the staging buffer's size
};

// The copies a launch of `geometry` with these operands needs: an operand whose tensor map
// declares copy_unaligned, or that a copy_unaligned declaration names (geometry.aligned_copies,
// one product only), and whose rows do not start 16-byte aligned.
OperandStaging plan_operand_staging(const LaunchGeometry& geometry, std::uintptr_t a,
                                    std::uintptr_t b, const GemmProblem& problem);

}  // namespace tiletune

// The launcher's operand copy kernel (tuner/backend/gpu/row_copy.h): NVRTC compiles it for every
// architecture the shipped templates target (no GPU needed), and on a GPU it copies rows at any
// leading dimension into aligned ones, zeros past the width, as the driver's copy would.
#include "tuner/backend/gpu/row_copy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/gpu_test.h"
#include "tests/support/skip_without_nvrtc.h"
#include "tuner/backend/gpu/cubin_elf.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {
namespace {

using ::testing::Contains;

TEST(RowCopy, TheKernelCompilesForAmpereAndHopperWithoutSpilling) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_80", "sm_90"}) {
    const CompiledKernelImage image = compile_cuda_source(kRowCopySource, "tiletune_copy_rows.cu", {},
                                                          arch, "tiletune_copy_rows", "the copy kernel");
    EXPECT_THAT(CubinElf(image.cubin).kernels(), Contains("tiletune_copy_rows")) << arch;
    EXPECT_EQ(image.report.spill_bytes(), 0) << arch;
  }
}

class RowCopyGpu : public testing_support::GpuTest {};

// Rows of odd widths and leading dimensions (as an operand with lda = 9 holds them), 16-byte
// aligned rows out, as many rows as blocks in y and more.
TEST_F(RowCopyGpu, CopiesRowsIntoAlignedOnesAtAnyLeadingDimension) {
  for (const OperandCopy copy : {OperandCopy{'A', 5, 7, 9, 8, 0}, OperandCopy{'B', 70000, 3, 3, 4, 0},
                                 OperandCopy{'A', 3, 1030, 1031, 1032, 0}}) {
    std::vector<float> from(std::size_t(copy.rows * copy.from_ld));
    for (std::size_t i = 0; i < from.size(); ++i) from[i] = float(i % 1000) + 0.25f;
    const DeviceBuffer in = DeviceBuffer::from(from);
    std::vector<float> to(std::size_t(copy.rows * copy.to_ld), -1.0f);
    const DeviceBuffer out = DeviceBuffer::from(to);
    RowCopier copier;
    copier.copy(copy, in.get(), out.get(), std::size_t(1) << 31, nullptr);
    check_cuda(cuda_driver().cuCtxSynchronize(), "cuCtxSynchronize");
    EXPECT_TRUE(copier.uses_kernel());
    out.download_into(to);
    for (std::int64_t row = 0; row < copy.rows; ++row) {
      for (std::int64_t col = 0; col < copy.to_ld; ++col) {
        const float expected = col < copy.width ? from[std::size_t(row * copy.from_ld + col)] : 0.0f;
        ASSERT_EQ(to[std::size_t(row * copy.to_ld + col)], expected) << "row " << row << ", column " << col;
      }
    }
  }
}

}  // namespace
}  // namespace tiletune

// The launcher's pass over C (tuner/backend/gpu/epilogue_pass_kernel.h): NVRTC compiles it, the
// contract's header inlined, for every architecture the shipped templates target (no GPU needed).
// Its results are checked where it runs: the GPU fuzz of split-K and stream-K configurations with
// beta and the epilogues, and the library's tests.
#include "tuner/backend/gpu/epilogue_pass_kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/skip_without_nvrtc.h"
#include "tuner/backend/gpu/cubin_elf.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/device_library.h"

namespace tiletune {
namespace {

using ::testing::Contains;

TEST(EpiloguePass, TheKernelCompilesForAmpereAndHopperWithoutSpilling) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_80", "sm_90"}) {
    const CompiledKernelImage image =
        compile_cuda_source(inline_device_library(kEpiloguePassSource), "tiletune_epilogue_pass.cu", {}, arch,
                            "tiletune_epilogue_pass", "the epilogue pass kernel");
    EXPECT_THAT(CubinElf(image.cubin).kernels(), Contains("tiletune_epilogue_pass")) << arch;
    EXPECT_EQ(image.report.spill_bytes(), 0) << arch;
  }
}

}  // namespace
}  // namespace tiletune

// tiletune's device library: its headers put into a template's text where it includes them (each
// once, the template's line numbers kept), so that the template's hash follows them; and the
// headers compiled by NVRTC for sm_80 and sm_90 (NVRTC needs no GPU), refused below sm_80.
#include "tuner/core/device_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(DeviceLibrary, HasTheTensorCoreAndAsyncCopyHeaders) {
  ASSERT_TRUE(device_library_header("tiletune/tensor_core.h").has_value());
  ASSERT_TRUE(device_library_header("tiletune/async_copy.h").has_value());
  EXPECT_THAT(std::string(*device_library_header("tiletune/tensor_core.h")),
              HasSubstr("tt_mma_m16n8k8_tf32"));
  EXPECT_THAT(std::string(*device_library_header("tiletune/async_copy.h")),
              HasSubstr("tt_cp_async_wait"));
  EXPECT_FALSE(device_library_header("tiletune/missing.h").has_value());
}

TEST(DeviceLibrary, PutsEachHeaderInOnceAndKeepsTheLineNumbers) {
  const std::string source =
      "#include <cstdio>\n"
      "#include <tiletune/tensor_core.h>\n"
      "#include <tiletune/tensor_core.h>  // again\n"
      "  #  include <tiletune/async_copy.h>\n"
      "int main;\n";
  const std::string text = inline_device_library(source);
  const std::string tensor_core(*device_library_header("tiletune/tensor_core.h"));
  EXPECT_THAT(text, HasSubstr("inline float tt_tf32_round(float x)")) << text;
  EXPECT_EQ(text.find("inline float tt_tf32_round"), text.rfind("inline float tt_tf32_round"))
      << "included twice";
  EXPECT_THAT(text, HasSubstr("tt_cp_async_16"));
  EXPECT_THAT(text, Not(HasSubstr("#include <tiletune/")));
  EXPECT_THAT(text, Not(HasSubstr("#pragma once")));
  EXPECT_THAT(text, HasSubstr("#include <cstdio>\n"));
  EXPECT_THAT(text, HasSubstr("#line 3\n")) << "line 3 follows the first include";
  EXPECT_THAT(text, HasSubstr("#line 5\nint main;\n")) << "line 5 follows the second header";
}

TEST(DeviceLibrary, LineNumbersFollowEarlierLineDirectives) {
  // A template whose local headers were put in first: its own numbering goes on after #line.
  const std::string text =
      inline_device_library("int a;\n#line 40\nint b;\n#include <tiletune/async_copy.h>\nint c;\n");
  EXPECT_THAT(text, HasSubstr("#line 42\nint c;\n")) << text;
}

TEST(DeviceLibrary, AnIncludeTheLibraryDoesNotHaveIsRefusedNamingTheOnesItHas) {
  try {
    inline_device_library("#include <tiletune/wmma.h>\n");
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("#include <tiletune/wmma.h>"));
    EXPECT_THAT(e.what(), HasSubstr("<tiletune/async_copy.h>, <tiletune/gemm_contract.h>, <tiletune/named_barrier.h>, <tiletune/tensor_core.h>"));
  }
}

TEST(DeviceLibrary, ASourceWithoutLibraryIncludesIsUnchanged) {
  const std::string source = "#include <cstdio>\n// <tiletune/tensor_core.h>\nint x;";
  EXPECT_EQ(inline_device_library(source), source);
}

const std::string kTemplate = R"(// tiletune: entry probe
// tiletune: param P 0
// tiletune: block 32
// tiletune: grid 1
#include <tiletune/tensor_core.h>
#include <tiletune/async_copy.h>
extern "C" __global__ void probe(const float* A, const float* B, float* C, int M, int N, int K,
                                 int lda, int ldb, int ldc) {
  __shared__ __align__(16) float stage[32 * 4];
  const int lane = threadIdx.x % 32;
  tt_cp_async_16(stage + 4 * lane, A + 4 * lane, lane < M ? 16 : 0);
  tt_cp_async_4(stage + 4 * lane, A, 0);
  tt_cp_async_commit();
  tt_cp_async_wait<0>();
  __syncwarp();
  const float a[4] = {tt_tf32_round(stage[lane]), stage[lane + 32], stage[lane + 64],
                      stage[lane + 96]};
  const float b[2] = {__shfl_xor_sync(0xffffffffu, a[0], 1), a[1]};
  const float c[4] = {0, 0, 0, 0};
  float d[4];
  tt_mma_m16n8k8_tf32(d, a, b, c);
  for (int i = 0; i < 4; ++i) C[4 * lane + i] = d[i];
}
)";

TEST(DeviceLibrary, ATemplatesVersionIncludesTheLibrary) {
  const KernelTemplate tmpl = parse_template(kTemplate, "probe.cu");
  EXPECT_THAT(tmpl.source, HasSubstr("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
  EXPECT_EQ(tmpl.source_hash, fnv1a_hex(inline_device_library(kTemplate)));
  EXPECT_NE(tmpl.source_hash, fnv1a_hex(kTemplate));
  // A recorded template, its text already expanded, parses to the same version.
  EXPECT_EQ(parse_template(tmpl.source, "probe.cu").source_hash, tmpl.source_hash);
}

TEST(DeviceLibrary, CompilesWithNvrtcForSm80AndSm90) {
  const KernelTemplate tmpl = parse_template(kTemplate, "probe.cu");
  for (const char* arch : {"sm_80", "sm_90"}) {
    try {
      const CompiledKernelImage image =
          compile_configuration(tmpl, tmpl.parse_configuration("P=0"), arch);
      EXPECT_FALSE(image.cubin.empty()) << arch;
      EXPECT_GT(image.report.registers, 0) << arch << "\n" << image.log;
    } catch (const CompileError& e) {
      ADD_FAILURE() << arch << ": " << e.what() << "\n" << e.log();
    }
  }
}

TEST(DeviceLibrary, TensorCoresBelowSm80AreACompileErrorThatSaysSo) {
  const KernelTemplate tmpl = parse_template(kTemplate, "probe.cu");
  try {
    compile_configuration(tmpl, tmpl.parse_configuration("P=0"), "sm_75");
    ADD_FAILURE() << "compiled for sm_75";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.log(), HasSubstr("needs sm_80 or newer")) << e.log();
  }
}

}  // namespace
}  // namespace tiletune

// NVRTC on the shipped templates, every configuration, for Hopper and Ampere: no GPU needed.
//
// NVRTC is opened at run time (libnvrtc.so.13, .12, then libnvrtc.so) through the dynamic
// loader's ordinary search: LD_LIBRARY_PATH, then the ld.so cache. The CUDA toolkit's installer
// registers its lib folder in /etc/ld.so.conf.d, so the tests need no environment of their own.
// Where NVRTC cannot be found these tests are skipped with the loader's reason, unless
// TILETUNE_REQUIRE_NVRTC is set (to anything but 0): then they fail, so that a CI machine which
// is meant to have NVRTC cannot pass by skipping.
#include "tuner/backend/gpu/nvrtc_compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/compiled_kernels.h"
#include "tuner/core/configurations.h"

namespace tiletune {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using testing_support::kTemplates;

TEST(Nvrtc, VersionIsMajorDotMinor) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_THAT(nvrtc_version(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+"));
}

// --- every shipped configuration compiles ---------------------------------------------------

struct TemplateAndArch {
  const char* file;
  const char* arch;
};

class ShippedTemplate : public ::testing::TestWithParam<TemplateAndArch> {};

TEST_P(ShippedTemplate, EveryConfigurationCompiles) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = load_template(kTemplates / GetParam().file);
  const std::string arch = GetParam().arch;
  const std::vector<Configuration> configs = enumerate_configurations(tmpl);
  ASSERT_FALSE(configs.empty());
  // Through the user's cubin cache, as `tiletune compile` and a tune store there: in CI what the
  // main job's covering sample compiled is not compiled again. An entry keeps its key whole
  // (source, options, NVRTC version), and a cached outcome is the compile's own, its log included.
  CompiledKernels compiled(arch, 0, default_cubin_cache());
  compiled.prepare(tmpl, configs);
  for (const Configuration& config : configs) {
    SCOPED_TRACE(tmpl.name + " [" + config.to_string() + "] for " + arch);
    CompiledKernelImage image;
    try {
      image = compiled.get(tmpl, config);
    } catch (const CompileError& e) {
      ADD_FAILURE() << e.what() << "\n" << e.log();
      continue;
    }
    EXPECT_EQ(image.arch, arch);
    ASSERT_GT(image.cubin.size(), 4u);
    EXPECT_EQ(std::string(image.cubin.data(), 4), "\x7f" "ELF") << "a cubin is an ELF file";
    // An architecture-specific template (arch sm_90a) compiles for that target, and its image
    // keeps the GPU's own.
    EXPECT_THAT(image.log, HasSubstr("Compiling entry function '" + tmpl.entry + "' for '" +
                                     tmpl.compile_arch(arch) + "'"));
    EXPECT_GT(image.report.registers, 0);
    EXPECT_LE(image.report.registers, 255);
    EXPECT_EQ(image.report.spill_bytes(), 0) << image.log;
    // ptxas serializes wgmma (each waits for the one before) when the accumulators of two in flight
    // do not fit the registers: correct, and several times slower.
    EXPECT_THAT(image.log, Not(HasSubstr("wgmma.mma_async instructions are serialized")));
    if (tmpl.name == "tiled") {
      // As and Bs: two TILE x (TILE + PAD) floats.
      const std::int64_t tile = config.at("TILE"), pad = config.at("PAD");
      EXPECT_EQ(image.report.static_shared_bytes, 2 * tile * (tile + pad) * 4);
    } else if (tmpl.name == "tf32_wgmma_tma") {
      // Two mbarriers a stage, and two for the raw buffers of A's transposed tile (op_a=t alone).
      EXPECT_EQ(image.report.static_shared_bytes, (2 * config.at("STAGES") + 2) * 8);
    } else {
      EXPECT_EQ(image.report.static_shared_bytes, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ShippedTemplate,
    ::testing::Values(TemplateAndArch{"naive.cu", "sm_90"}, TemplateAndArch{"naive.cu", "sm_80"},
                      TemplateAndArch{"tiled.cu", "sm_90"}, TemplateAndArch{"tiled.cu", "sm_80"},
                      TemplateAndArch{"tf32_mma.cu", "sm_90"},
                      TemplateAndArch{"tf32x3_mma.cu", "sm_90"},
                      TemplateAndArch{"tf32_wgmma.cu", "sm_90"},
                      TemplateAndArch{"tf32_wgmma_specialized.cu", "sm_90"},
                      TemplateAndArch{"tf32x3_wgmma.cu", "sm_90"},
                      TemplateAndArch{"tf32_wgmma_rounded_loads.cu", "sm_90"},
                      TemplateAndArch{"tf32_wgmma_transposed_b.cu", "sm_90"},
                      TemplateAndArch{"tf32_wgmma_tma.cu", "sm_90"}),
    [](const ::testing::TestParamInfo<TemplateAndArch>& info) {
      std::string file = info.param.file;
      return file.substr(0, file.find('.')) + "_" + info.param.arch;
    });

TEST(Nvrtc, ParametersReachTheSourceAsPrefixedMacros) {
  SKIP_WITHOUT_NVRTC();
  // Compiles only if TT_WIDTH is defined as 3 and WIDTH is not defined at all.
  const KernelTemplate tmpl = parse_template(
      "// tiletune: entry k\n// tiletune: param WIDTH 3\n// tiletune: block 1\n// tiletune: grid 1\n"
      "static_assert(TT_WIDTH == 3, \"TT_WIDTH\");\n"
      "#ifdef WIDTH\n#error bare macro\n#endif\n"
      "extern \"C\" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K,"
      " int lda, int ldb, int ldc) { C[threadIdx.x] = TT_WIDTH; }\n",
      "macros.cu");
  const Configuration config = tmpl.parse_configuration("WIDTH=3");
  const CompiledKernelImage image = compile_configuration(tmpl, config, "sm_90");
  EXPECT_GT(image.report.registers, 0);
}

// --- compile errors -------------------------------------------------------------------------

KernelTemplate broken_template() {
  return parse_template(
      "// tiletune: name broken\n// tiletune: entry broken_gemm\n// tiletune: param T 4 8\n"
      "// tiletune: block T\n// tiletune: grid 1\n"
      "extern \"C\" __global__ void broken_gemm(float* C) {\n"
      "  C[threadIdx.x] = undeclared_thing * TT_T\n"  // no such name, no semicolon
      "}\n",
      "broken.cu");
}

TEST(Nvrtc, SyntaxErrorInTheCudaCodeThrowsCompileErrorWithTheLog) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = broken_template();
  for (const Configuration& config : enumerate_configurations(tmpl)) {
    try {
      compile_configuration(tmpl, config, "sm_90");
      ADD_FAILURE() << "compiled " << config.to_string();
    } catch (const CompileError& e) {
      EXPECT_EQ(std::string(e.what()), "broken [" + config.to_string() + "] does not compile for sm_90");
      EXPECT_THAT(e.log(), AllOf(HasSubstr("broken.cu(7)"), HasSubstr("error"),
                                 HasSubstr("undeclared_thing")));
    }
  }
}

TEST(Nvrtc, CompileCudaSourceNamesWhatDoesNotCompile) {
  SKIP_WITHOUT_NVRTC();
  try {
    compile_cuda_source("extern \"C\" __global__ void f() { int x = ; }", "f.cu", {}, "sm_80", "f",
                        "the test kernel");
    ADD_FAILURE() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), "the test kernel does not compile for sm_80");
    EXPECT_THAT(e.log(), HasSubstr("f.cu(1)"));
    EXPECT_THAT(e.log(), HasSubstr("expected an expression"));
  }
}

TEST(Nvrtc, UnknownArchitectureIsNotACompileOfTheSource) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = load_template(kTemplates / "tiled.cu");
  const Configuration config = enumerate_configurations(tmpl).front();
  // NVRTC rejects the option itself: an NVRTC failure, not the template's.
  EXPECT_THROW(compile_configuration(tmpl, config, "sm_7"), NvrtcError);
}

TEST(Nvrtc, ArchitectureSpecificTemplateOnAnotherGpuIsACompileErrorNamingBoth) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = load_template(kTemplates / "tf32_wgmma.cu");
  const Configuration config = enumerate_configurations(tmpl).front();
  try {
    compile_configuration(tmpl, config, "sm_80");
    ADD_FAILURE() << "an sm_90a template compiled for sm_80";
  } catch (const CompileError& e) {
    EXPECT_THAT(e.what(), HasSubstr("uses instructions of sm_90a only; this GPU is sm_80"));
  }
  EXPECT_THAT(nvrtc_options(tmpl, config, "sm_90"), Contains("-arch=sm_90a"));
}

TEST(Nvrtc, ReportBelongsToTheNamedEntry) {
  SKIP_WITHOUT_NVRTC();
  const std::string source =
      "extern \"C\" __global__ void small(float* c) { c[threadIdx.x] = 1.0f; }\n"
      "extern \"C\" __global__ void big(float* c) {\n"
      "  __shared__ float s[1024];\n"
      "  s[threadIdx.x] = c[threadIdx.x]; __syncthreads(); c[threadIdx.x] = s[1023 - threadIdx.x];\n"
      "}\n// " + std::to_string(getpid()) + "\n";
  const CompiledKernelImage image = compile_cuda_source(source, "two.cu", {}, "sm_90", "big", "two");
  EXPECT_EQ(image.report.static_shared_bytes, 4096);
  EXPECT_GT(image.report.registers, 0);
  const PtxasReport small = parse_ptxas_report(image.log, "small");
  EXPECT_EQ(small.static_shared_bytes, 0);
  EXPECT_GT(small.registers, 0);
}

// The resource report is read from ptxas's -v output. NVRTC 12.9+ caches compiles where a CUDA
// driver is installed, and a hit runs no ptxas: the log would be empty, the report zeros, and the
// cubin cache would refuse to keep the compile (so every worker compiled it again). tiletune
// turns NVRTC's cache off (--no-cache) and keeps its own. Where NVRTC does not cache (no driver,
// e.g. CI) this passes either way; on a GPU host it fails without the option.
// A device variable unique to this process makes the template's first compile here a real one.
KernelTemplate uncached(KernelTemplate tmpl) {
  static int count = 0;
  tmpl.source += "\nextern \"C\" __device__ int nvrtc_compiler_test_" + std::to_string(getpid()) + "_" +
                 std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "_" +
                 std::to_string(++count) + " = 1;\n";
  return tmpl;
}

TEST(Nvrtc, ASecondCompileOfTheSameSourceHasItsReport) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tmpl = uncached(load_template(kTemplates / "tiled.cu"));
  const Configuration config = tmpl.parse_configuration("TILE=16,PAD=1,SWIZZLE=0");
  const CompiledKernelImage first = compile_configuration(tmpl, config, "sm_90");
  const CompiledKernelImage second = compile_configuration(tmpl, config, "sm_90");
  ASSERT_GT(first.report.registers, 0);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.report.registers, first.report.registers) << "second log:\n" << second.log;
  EXPECT_EQ(second.report.static_shared_bytes, first.report.static_shared_bytes);
  EXPECT_THAT(nvrtc_options(tmpl, config, "sm_90"), Contains("--no-cache"));
}

// --- parse_ptxas_report on literal logs -----------------------------------------------------

// What NVRTC 13 prints with --ptxas-options=-v, two entry points.
constexpr const char* kLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'other_gemm' for 'sm_90'\n"
    "ptxas info    : Function properties for other_gemm\n"
    "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 16 bytes cumulative stack size, "
    "49152 bytes smem, 400 bytes cmem[0]\n"
    "ptxas info    : Compile time = 30.125 ms\n"
    "ptxas info    : Compiling entry function 'tiled_gemm' for 'sm_90'\n"
    "ptxas info    : Function properties for tiled_gemm\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 1 barriers, 8448 bytes smem, 400 bytes cmem[0]\n"
    "ptxas info    : Compile time = 7.033 ms\n";

TEST(PtxasReport, ReadsTheNamedEntrysRegistersSharedMemoryAndFrame) {
  const PtxasReport tiled = parse_ptxas_report(kLog, "tiled_gemm");
  EXPECT_EQ(tiled.registers, 40);
  EXPECT_EQ(tiled.static_shared_bytes, 8448);
  EXPECT_EQ(tiled.stack_frame_bytes, 0);
  EXPECT_EQ(tiled.spill_bytes(), 0);

  const PtxasReport other = parse_ptxas_report(kLog, "other_gemm");
  EXPECT_EQ(other.registers, 255);
  EXPECT_EQ(other.static_shared_bytes, 49152);
  EXPECT_EQ(other.stack_frame_bytes, 16);
  EXPECT_EQ(other.spill_store_bytes, 8);
  EXPECT_EQ(other.spill_load_bytes, 12);
  EXPECT_EQ(other.spill_bytes(), 20);
}

TEST(PtxasReport, EntryNotInTheLogGivesAnEmptyReport) {
  const PtxasReport none = parse_ptxas_report(kLog, "tiled");  // a prefix of tiled_gemm
  EXPECT_EQ(none.registers, 0);
  EXPECT_EQ(none.static_shared_bytes, 0);
  EXPECT_EQ(none.spill_bytes(), 0);
  EXPECT_EQ(parse_ptxas_report("", "tiled_gemm").registers, 0);
}

TEST(PtxasReport, KernelWithoutSharedMemory) {
  const PtxasReport report = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'naive_gemm' for 'sm_80'\n"
      "ptxas info    : Function properties for naive_gemm\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 28 registers, used 0 barriers, 400 bytes cmem[0]\n",
      "naive_gemm");
  EXPECT_EQ(report.registers, 28);
  EXPECT_EQ(report.static_shared_bytes, 0);
}

}  // namespace
}  // namespace tiletune

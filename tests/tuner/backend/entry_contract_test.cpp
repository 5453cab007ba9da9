// The entry contract (tuner/backend/entry_contract.h): the layout comparison and its one line, the cubin
// reader on NVRTC's real output (skipped without NVRTC, as nvrtc_compiler_test.cpp explains), the
// refusal of a configuration whose entry is missing or takes other parameters right after NVRTC,
// and on a GPU (skipped without one) the refusal when the entry is loaded, from the layout the
// driver reports.
#include "tuner/backend/entry_contract.h"

#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/gpu_test.h"
#include "tests/support/skip_without_nvrtc.h"
#include "tuner/backend/gpu/cubin_elf.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kContract =
    "(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, int ldc)";

// --- the layout and its one line -------------------------------------------------------------

TEST(EntryContract, TheContractsLayoutIsThreePointersThenSixInts) {
  EXPECT_THAT(contract_parameter_layout(),
              ElementsAre(KernelParameter{0, 8}, KernelParameter{8, 8}, KernelParameter{16, 8},
                          KernelParameter{24, 4}, KernelParameter{28, 4}, KernelParameter{32, 4},
                          KernelParameter{36, 4}, KernelParameter{40, 4}, KernelParameter{44, 4}));
  EXPECT_EQ(kEntryContractParameters, kContract);
  EXPECT_EQ(parameter_layout_mismatch("tiled_gemm", contract_parameter_layout()), std::nullopt);
}

TEST(EntryContract, AnotherLayoutIsOneLineNamingBoth) {
  const std::vector<KernelParameter> swapped = {{0, 4}, {4, 4}, {8, 4}, {16, 8}, {24, 8}, {32, 8}};
  EXPECT_EQ(parameter_layout_mismatch("tiled_gemm", swapped),
            "entry tiled_gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); the contract is 9: " +
                kContract);
  EXPECT_EQ(parameter_layout_mismatch("k", {{0, 8}}),
            "entry k takes 1 parameter (8 bytes); the contract is 9: " + kContract);
  EXPECT_EQ(parameter_layout_mismatch("k", {}),
            "entry k takes no parameters; the contract is 9: " + kContract);
}

TEST(EntryContract, NineParametersOfOtherSizesOrPlacesAreRefused) {
  std::vector<KernelParameter> wide_m = contract_parameter_layout();  // (..., long M, ...)
  wide_m[3].size = 8;
  for (std::size_t i = 4; i < wide_m.size(); ++i) wide_m[i].offset += 4;
  EXPECT_EQ(parameter_layout_mismatch("g", wide_m),
            "entry g takes 9 parameters (8, 8, 8, 8, 4, 4, 4, 4, 4 bytes); the contract is 9: " +
                kContract);
  // Same sizes, other offsets (an over-aligned parameter): the offsets are named.
  std::vector<KernelParameter> aligned = contract_parameter_layout();
  aligned.back().offset = 48;
  EXPECT_EQ(parameter_layout_mismatch("g", aligned),
            "entry g takes 9 parameters (8, 8, 8, 4, 4, 4, 4, 4, 4 bytes at offsets 0, 8, 16, 24, "
            "28, 32, 36, 40, 48); the contract is 9: " + kContract);
}

TEST(EntryContract, TensorMapsFollowTheContractsParametersAt128BytesEach) {
  std::vector<KernelParameter> two_maps = contract_parameter_layout();
  two_maps.push_back({48, 128});  // where sm_90's compiler puts a 64-byte aligned map
  two_maps.push_back({176, 128});
  EXPECT_EQ(parameter_layout_mismatch("tma", two_maps, EntryForm{false, 2}), std::nullopt);
  EXPECT_EQ(parameter_layout_mismatch("tma", {two_maps.begin(), two_maps.end() - 1}, EntryForm{false, 1}),
            std::nullopt);
  // A template that declares two maps and an entry that takes one, or none.
  EXPECT_EQ(parameter_layout_mismatch("tma", {two_maps.begin(), two_maps.end() - 1}, EntryForm{false, 2}),
            "entry tma takes 10 parameters (8, 8, 8, 4, 4, 4, 4, 4, 4, 128 bytes); the contract is "
            "11: (const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, "
            "int ldc, const __grid_constant__ tt_tensor_map map0, const __grid_constant__ "
            "tt_tensor_map map1)");
  EXPECT_NE(parameter_layout_mismatch("tma", contract_parameter_layout(), EntryForm{false, 1}), std::nullopt);
  EXPECT_NE(parameter_layout_mismatch("tma", two_maps, EntryForm{false, 0}), std::nullopt);
  // A map of another size, or one overlapping the ints.
  std::vector<KernelParameter> small = two_maps;
  small.back().size = 64;
  EXPECT_NE(parameter_layout_mismatch("tma", small, EntryForm{false, 2}), std::nullopt);
  std::vector<KernelParameter> overlapping = two_maps;
  overlapping[9].offset = 32;
  EXPECT_NE(parameter_layout_mismatch("tma", overlapping, EntryForm{false, 2}), std::nullopt);
}

TEST(EntryContract, AContractTemplatesEntryTakesItsGemmArgsLastAfterAnyMap) {
  std::vector<KernelParameter> args = contract_parameter_layout();
  args.push_back({48, kContractArgsBytes});
  EXPECT_EQ(parameter_layout_mismatch("blas", args, EntryForm{true, 0}), std::nullopt);
  // A template that declares `supports` and an entry without the args, and the other way round.
  EXPECT_EQ(parameter_layout_mismatch("blas", contract_parameter_layout(), EntryForm{true, 0}),
            "entry blas takes 9 parameters (8, 8, 8, 4, 4, 4, 4, 4, 4 bytes); the contract is 10: "
            "(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, "
            "int ldc, const tt_gemm_args args)");
  EXPECT_NE(parameter_layout_mismatch("blas", args, EntryForm{false, 0}), std::nullopt);
  // The args are no tensor map, and come after the maps: the maps keep the offsets they have in
  // an entry without the args (and the template its instructions).
  EXPECT_NE(parameter_layout_mismatch("blas", args, EntryForm{false, 1}), std::nullopt);
  std::vector<KernelParameter> maps_then_args = contract_parameter_layout();
  maps_then_args.push_back({48, 128});
  maps_then_args.push_back({176, 128});
  maps_then_args.push_back({304, kContractArgsBytes});
  EXPECT_EQ(parameter_layout_mismatch("blas", maps_then_args, EntryForm{true, 2}), std::nullopt);
  EXPECT_EQ(parameter_layout_mismatch("blas", {maps_then_args.begin(), maps_then_args.end() - 1},
                                      EntryForm{true, 2}),
            "entry blas takes 11 parameters (8, 8, 8, 4, 4, 4, 4, 4, 4, 128, 128 bytes); the "
            "contract is 12: (const float* A, const float* B, float* C, int M, int N, int K, int "
            "lda, int ldb, int ldc, const __grid_constant__ tt_tensor_map map0, const "
            "__grid_constant__ tt_tensor_map map1, const tt_gemm_args args)");
  std::vector<KernelParameter> args_first = args;
  args_first.push_back({112, 128});
  EXPECT_NE(parameter_layout_mismatch("blas", args_first, EntryForm{true, 1}), std::nullopt);
}

TEST(EntryContract, AMissingEntryIsNamedWithWhatTheCodeHasInstead) {
  EXPECT_EQ(missing_entry_line("tiled_gemmm", {"tiled_gemm"}),
            "entry tiled_gemmm is not in the compiled code, whose __global__ functions are "
            "tiled_gemm");
  EXPECT_EQ(missing_entry_line("gemm", {"_Z4gemmPKfS0_Pfiiiiii", "other"}),
            "entry gemm is not in the compiled code: it is compiled as _Z4gemmPKfS0_Pfiiiiii, a C++ "
            "name; declare it extern \"C\"");
  // gemm2's mangled name is not gemm's.
  EXPECT_EQ(missing_entry_line("gemm", {"_Z5gemm2v"}),
            "entry gemm is not in the compiled code, whose __global__ functions are _Z5gemm2v");
  EXPECT_EQ(missing_entry_line("gemm", {}),
            "entry gemm is not in the compiled code, which has no __global__ function");
}

TEST(EntryContract, AnEntryTypeIsNamedAsTheCompilerPrintsIt) {
  EXPECT_EQ(entry_type_mismatch("g", true, "void(const float*, ...)"), std::nullopt);
  EXPECT_EQ(entry_type_mismatch("g", false, "void(int, int, int, const float*, const float*, float*)"),
            "entry g is void(int, int, int, const float*, const float*, float*); the contract is "
            "void" + kContract);
}

// --- the cubin reader on NVRTC's output ----------------------------------------------------

const char* const kKernels = R"(
struct Big { float v[10]; };
extern "C" __device__ __noinline__ float helper(const float* a, int i) { return a[i] * 2.0f; }
extern "C" __global__ void good(const float* A, const float* B, float* C, int M, int N, int K,
                                int lda, int ldb, int ldc) {
  if (M > 0) C[0] = helper(A, N) + B[K] + lda + ldb + ldc;
}
extern "C" __global__ void swapped(int M, int N, int K, const float* A, const float* B, float* C) {
  C[0] = A[M] + B[N] + K;
}
extern "C" __global__ void unused_parameters(const float* A, const float* B, float* C, int M, int N,
                                             int K, int lda, int ldb, int ldc) {}
extern "C" __global__ void none() {}
extern "C" __global__ void mixed(Big big, float* C, char c, short s, double d) {
  C[0] = big.v[3] + c + s + d;
}
__global__ void mangled(const float* A, const float* B, float* C, int M, int N, int K, int lda,
                        int ldb, int ldc) {
  C[0] = 1;
}
)";

CompiledKernelImage compiled_kernels() {
  return compile_cuda_source(kKernels, "kernels.cu", {}, "sm_90", "good", "the test kernels");
}

TEST(CubinElf, ListsTheKernelsOfNvrtcsOutputAndNotItsDeviceFunctions) {
  SKIP_WITHOUT_NVRTC();
  const CubinElf cubin(compiled_kernels().cubin);
  EXPECT_THAT(cubin.kernels(), ::testing::UnorderedElementsAre(
                                   "good", "swapped", "unused_parameters", "none", "mixed",
                                   "_Z7mangledPKfS0_Pfiiiiii"));
  EXPECT_TRUE(cubin.defines_kernel("good"));
  EXPECT_FALSE(cubin.defines_kernel("helper"));
  EXPECT_FALSE(cubin.defines_kernel("mangled"));
}

TEST(CubinElf, ReadsEachKernelsParameterLayoutFromNvrtcsOutput) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const CubinElf cubin(
        compile_cuda_source(kKernels, "kernels.cu", {}, arch, "good", "the test kernels").cubin);
    EXPECT_EQ(cubin.parameters("good"), contract_parameter_layout());
    EXPECT_EQ(cubin.parameters("unused_parameters"), contract_parameter_layout());
    EXPECT_EQ(cubin.parameters("swapped"),
              (std::vector<KernelParameter>{{0, 4}, {4, 4}, {8, 4}, {16, 8}, {24, 8}, {32, 8}}));
    EXPECT_EQ(cubin.parameters("mixed"),
              (std::vector<KernelParameter>{{0, 40}, {40, 8}, {48, 1}, {50, 2}, {56, 8}}));
    EXPECT_EQ(cubin.parameters("none"), std::vector<KernelParameter>{});
    EXPECT_EQ(cubin.parameters("absent"), std::nullopt);
  }
}

TEST(CubinElf, AFileThatIsNotAWholeElfFileIsAFormatError) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_THROW(CubinElf(std::vector<char>{'n', 'o', 't', ' ', 'E', 'L', 'F'}), CubinFormatError);
  EXPECT_THROW(CubinElf(std::vector<char>{}), CubinFormatError);
  std::vector<char> truncated = compiled_kernels().cubin;
  truncated.resize(truncated.size() / 2);  // the section headers are at the end
  EXPECT_THROW(CubinElf{truncated}, CubinFormatError);
  // Without a symbol table which kernels there are is unknown, not none.
  std::vector<char> no_symbols = compiled_kernels().cubin;
  Elf64_Ehdr header;
  std::memcpy(&header, no_symbols.data(), sizeof header);
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    char* at = no_symbols.data() + header.e_shoff + i * sizeof(Elf64_Shdr);
    Elf64_Shdr section;
    std::memcpy(&section, at, sizeof section);
    if (section.sh_type == SHT_SYMTAB) section.sh_type = SHT_PROGBITS;
    std::memcpy(at, &section, sizeof section);
  }
  EXPECT_THROW(CubinElf{no_symbols}, CubinFormatError);
}

// --- refused after NVRTC ---------------------------------------------------------------------

KernelTemplate gemm_template(const std::string& entry_line, const std::string& declaration) {
  return parse_template("// tiletune: entry " + entry_line +
                            "\n"
                            "// tiletune: param BLOCK 8 16\n"
                            "// tiletune: block BLOCK, BLOCK\n"
                            "// tiletune: grid ceil_div(N, BLOCK), ceil_div(M, BLOCK)\n" +
                            declaration + " {\n  if (threadIdx.x == 0) C[0] = A[0] * B[0];\n}\n",
                        "contract.cu");
}

const std::string kGoodDeclaration =
    "extern \"C\" __global__ void gemm(const float* A, const float* B, float* C, int M, int N, "
    "int K, int lda, int ldb, int ldc)";

// The log of the compile error compile_configuration throws, or "compiled" when it throws none.
std::string compile_error_log(const KernelTemplate& tmpl) {
  try {
    compile_configuration(tmpl, tmpl.parse_configuration("BLOCK=8"), "sm_90");
    return "compiled";
  } catch (const EntryContractError& e) {
    EXPECT_THAT(e.what(), HasSubstr("contract [BLOCK=8]: "));
    return e.log();
  }
}

TEST(EntryContractAfterNvrtc, AContractEntryCompiles) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_EQ(compile_error_log(gemm_template("gemm", kGoodDeclaration)), "compiled");
}

TEST(EntryContractAfterNvrtc, AMisspeltEntryIsACompileError) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_EQ(compile_error_log(gemm_template("gemmm", kGoodDeclaration)),
            "entry gemmm is not in the compiled code, whose __global__ functions are gemm");
}

TEST(EntryContractAfterNvrtc, AnEntryWithoutExternCIsACompileError) {
  SKIP_WITHOUT_NVRTC();
  std::string declaration = kGoodDeclaration;
  declaration.erase(0, std::string("extern \"C\" ").size());
  EXPECT_EQ(compile_error_log(gemm_template("gemm", declaration)),
            "entry gemm is not in the compiled code: it is compiled as _Z4gemmPKfS0_Pfiiiiii, a "
            "C++ name; declare it extern \"C\"");
}

TEST(EntryContractAfterNvrtc, AnEntryTakingOtherParametersIsACompileError) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_EQ(compile_error_log(gemm_template(
                "gemm", "extern \"C\" __global__ void gemm(int M, int N, int K, const float* A, "
                        "const float* B, float* C)")),
            "entry gemm takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); the contract is 9: " + kContract);
}

TEST(EntryContractAfterNvrtc, AnEntryTakingTheDeclaredTensorMapsCompiles) {
  SKIP_WITHOUT_NVRTC();
  const std::string maps =
      "// tiletune: arch sm_90a\n// tiletune: tensor_map A tf32 swizzle128 32, 64\n"
      "// tiletune: tensor_map B tf32 dense 72, 32\n#include <tiletune/tensor_map.h>\n";
  std::string declaration = kGoodDeclaration;
  declaration.pop_back();
  EXPECT_EQ(compile_error_log(gemm_template(
                "gemm", maps + declaration +
                            ", const __grid_constant__ tt_tensor_map map_a, const "
                            "__grid_constant__ tt_tensor_map map_b)")),
            "compiled");
  // The template declares two maps; the entry takes one.
  EXPECT_THAT(compile_error_log(gemm_template(
                  "gemm", maps + declaration + ", const __grid_constant__ tt_tensor_map map_a)")),
              HasSubstr("takes 10 parameters"));
}

TEST(EntryContractAfterNvrtc, AnEntryThatIsADeviceFunctionIsNotAKernel) {
  SKIP_WITHOUT_NVRTC();
  KernelTemplate tmpl = gemm_template("helper", kGoodDeclaration);
  tmpl.source += "extern \"C\" __device__ __noinline__ float helper(const float* a) { return *a; }\n";
  EXPECT_EQ(compile_error_log(tmpl),
            "entry helper is not in the compiled code, whose __global__ functions are gemm");
}

// --- refused on the GPU, from the layout the driver reports ----------------------------------

class EntryContractOnGpu : public testing_support::GpuTest {
 protected:
  // Compiled without compile_configuration's check, so that the GPU's own is what refuses.
  CompiledKernelImage unchecked_kernels() const {
    return compile_cuda_source(kKernels, "kernels.cu", {}, device_->properties().arch(), "good",
                               "the test kernels");
  }

};

TEST_F(EntryContractOnGpu, TheDriverReportsTheContractsLayoutForAContractEntry) {
  const CompiledKernelImage image = unchecked_kernels();
  EXPECT_NO_THROW(GpuKernel(image, "good", EntryForm{}));
  EXPECT_NO_THROW(GpuKernel(image, "unused_parameters", EntryForm{}));
}

TEST_F(EntryContractOnGpu, AnEntryTakingOtherParametersIsRefusedWhenLoaded) {
  if (cuda_driver().cuFuncGetParamInfo == nullptr) {
    GTEST_SKIP() << "the driver is older than CUDA 12.4: it cannot report a parameter layout";
  }
  const CompiledKernelImage image = unchecked_kernels();
  try {
    GpuKernel kernel(image, "swapped", EntryForm{});
    ADD_FAILURE() << "an entry taking (int M, int N, int K, const float* A, ...) was loaded";
  } catch (const EntryContractError& e) {
    EXPECT_EQ(e.log(), "entry swapped takes 6 parameters (4, 4, 4, 8, 8, 8 bytes); the contract "
                       "is 9: " + kContract);
  }
  EXPECT_THROW(GpuKernel(image, "mixed", EntryForm{}), EntryContractError);
}

TEST_F(EntryContractOnGpu, AMissingEntryIsRefusedWhenLoaded) {
  const CompiledKernelImage image = unchecked_kernels();
  try {
    GpuKernel kernel(image, "mangled", EntryForm{});
    ADD_FAILURE() << "a C++ name was found as an extern \"C\" entry";
  } catch (const EntryContractError& e) {
    EXPECT_THAT(e.log(), HasSubstr("entry mangled is not in the compiled code: it is compiled as "
                                   "_Z7mangledPKfS0_Pfiiiiii"));
  }
}

}  // namespace
}  // namespace tiletune

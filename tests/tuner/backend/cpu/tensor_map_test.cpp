// <tiletune/tensor_map.h> on the CPU backend, and against the GPU: a probe kernel whose one thread
// copies a box of A through the launch's tensor map into shared memory and whose threads write
// that memory to C as it is. On the CPU: elements outside A read 0, a tf32 map rounds to nearest
// even, a swizzled box moves 16-byte chunks by the row, an fp32 map copies the bits; a wait for a
// phase that never completes, an mbarrier used without its initialisation, and a copy from an inner
// coordinate that is not a multiple of 16 bytes (an illegal instruction on the H100) are errors. On a
// Hopper GPU (skipped without one): the same copies bit for bit, ties and specials among random
// floats.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fuzz/gemm_executor.h"
#include "tests/support/gpu_test.h"
#include "tuner/backend/cpu/cpu_kernel.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// What C holds where the probe wrote nothing.
constexpr std::uint32_t kUnwritten = 0x7fc0beefu;

// The probe: `map` the tensor_map declaration's element, layout and box (e.g. "tf32 dense 8, 8"),
// `inner` x `outer` the box; B[0] and B[1] the coordinates of the copy. `body` replaces the copy and
// its wait where a test wants another use of the barrier.
KernelTemplate probe(const std::string& map, int inner, int outer, const std::string& body = "") {
  const std::string box = std::to_string(inner * outer);
  const std::string copy =
      "  if (threadIdx.x == 0) {\n"
      "    tt_mbarrier_arrive_expect_tx(&bar, " + box + " * 4);\n"
      "    tt_tensor_copy_2d(tile, &map_a, int(B[0]), int(B[1]), &bar);\n"
      "  }\n"
      "  tt_mbarrier_wait(&bar, 0);\n";
  return parse_template(
      "// tiletune: entry probe\n"
      "// tiletune: param P 0\n"
      "// tiletune: block 32\n"
      "// tiletune: grid 1\n"
      "// tiletune: arch sm_90a\n"
      "// tiletune: tensor_map A " + map + "\n"
      "#include <tiletune/tensor_map.h>\n"
      "extern \"C\" __global__ void probe(const float* A, const float* B, float* C, int M, int N,\n"
      "    int K, int lda, int ldb, int ldc, const __grid_constant__ tt_tensor_map map_a) {\n"
      "  __shared__ __align__(1024) float tile[" + box + "];\n"
      "  __shared__ __align__(8) unsigned long long bar;\n"
      "  if (threadIdx.x == 0) {\n"
      "    tt_mbarrier_init(&bar, 1);\n"
      "    tt_mbarrier_init_fence();\n"
      "  }\n"
      "  __syncthreads();\n" +
          (body.empty() ? copy : body) +
          "  for (int i = threadIdx.x; i < " + box + "; i += 32) C[i] = tile[i];\n"
          "}\n",
      "tensor_map_probe.cu");
}

// A of `rows` x `width` floats, `lda` apart.
struct Operand {
  std::vector<float> values;
  int rows, width, lda;
};

GemmProblem problem_of(const Operand& a) { return GemmProblem{{a.rows, 1, a.width}, a.lda, 4, 4}; }

std::vector<std::uint32_t> run_on_cpu(const KernelTemplate& tmpl, const Operand& a, int inner,
                                      int outer, std::size_t outputs, std::uint64_t seed = 0) {
  CpuBackendOptions options;
  options.cache_dir = std::filesystem::path(TILETUNE_BINARY_DIR) / "cpu-backend-test-cache";
  options.workers = 1;
  const Configuration config = tmpl.parse_configuration("P=0");
  const CpuKernel kernel(tmpl, config, options);
  const GemmProblem p = problem_of(a);
  const float coordinates[4] = {float(inner), float(outer), 0, 0};
  std::vector<float> c(outputs, from_bits(kUnwritten));
  kernel.launch(tmpl.launch_geometry(config, p.shape), a.values.data(), coordinates, c.data(),
                int(p.shape.m), 1, int(p.shape.k), int(p.lda), 4, 4, seed);
  std::vector<std::uint32_t> out;
  for (float x : c) out.push_back(bits(x));
  return out;
}

// The error a CPU launch of the probe ends with.
std::string cpu_launch_error(const KernelTemplate& tmpl, const Operand& a, int inner = 0,
                             int outer = 0) {
  try {
    run_on_cpu(tmpl, a, inner, outer, 64);
  } catch (const LaunchError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the launch ended without an error";
  return {};
}

// TF32 to nearest, ties to even, as the H100's tensor memory accelerator gave it.
std::uint32_t round_even(std::uint32_t x) {
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x007fffffu) != 0) return 0x7fffe000u;
  return (x + 0x0fffu + ((x >> 13) & 1u)) & ~0x1fffu;
}

// What the box at (inner, outer) of `a` holds, element by element in the box's row order.
std::vector<std::uint32_t> expected_box(const Operand& a, int inner, int outer, int box_inner,
                                        int box_outer, bool tf32) {
  std::vector<std::uint32_t> box;
  for (int o = 0; o < box_outer; ++o) {
    for (int i = 0; i < box_inner; ++i) {
      const int column = inner + i, row = outer + o;
      const bool inside = column >= 0 && row >= 0 && column < a.width && row < a.rows;
      const std::uint32_t x = inside ? bits(a.values[std::size_t(row) * a.lda + column]) : 0u;
      box.push_back(inside && tf32 ? round_even(x) : x);
    }
  }
  return box;
}

Operand counting(int rows, int width, int lda) {
  Operand a{std::vector<float>(std::size_t(rows) * lda, from_bits(0x7fbadbadu)), rows, width, lda};
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < width; ++c) a.values[std::size_t(r) * lda + c] = float(100 * r + c + 1);
  }
  return a;
}

TEST(TensorMapCpu, ADenseBoxReadsZerosOutsideTheOperandAndRoundsToNearestEven) {
  Operand a = counting(5, 6, 8);  // the padding between 6 and 8 is a NaN no copy may read
  a.values[0] = from_bits(0x3f801000u);  // a tie below an even TF32 value: down
  a.values[1] = from_bits(0x3f803000u);  // a tie below an odd one: up
  a.values[2] = from_bits(0x3f801001u);
  a.values[3] = from_bits(0x7fc00001u);  // a NaN: the canonical one
  a.values[4] = from_bits(0x7f7ff000u);  // to infinity
  for (const auto& [inner, outer] : {std::pair{0, 0}, std::pair{-4, 2}, std::pair{4, -1}}) {
    SCOPED_TRACE(std::to_string(inner) + ", " + std::to_string(outer));
    for (std::uint64_t seed : {0u, 1u, 2u, 3u}) {  // landing at once and at the wait
      EXPECT_EQ(run_on_cpu(probe("tf32 dense 8, 8", 8, 8), a, inner, outer, 64, seed),
                expected_box(a, inner, outer, 8, 8, true));
    }
  }
  EXPECT_EQ(round_even(0x3f801000u), 0x3f800000u);
  EXPECT_EQ(round_even(0x3f803000u), 0x3f804000u);
  EXPECT_EQ(round_even(0x7f7ff000u), 0x7f800000u);
}

TEST(TensorMapCpu, AnFp32MapCopiesTheBits) {
  Operand a = counting(9, 12, 12);
  a.values[5] = from_bits(0x3f801001u);
  EXPECT_EQ(run_on_cpu(probe("fp32 dense 4, 8", 4, 8), a, 4, 3, 32),
            expected_box(a, 4, 3, 4, 8, false));
}

TEST(TensorMapCpu, ASwizzledBoxMovesEachRowsChunksByTheRow) {
  const Operand a = counting(20, 40, 44);
  const std::vector<std::uint32_t> box = expected_box(a, 4, 1, 32, 16, true);
  const std::vector<std::uint32_t> out =
      run_on_cpu(probe("tf32 swizzle128 32, 16", 32, 16), a, 4, 1, 512);
  for (int row = 0; row < 16; ++row) {
    for (int k = 0; k < 32; ++k) {
      const int chunk = (k / 4) ^ (row % 8);
      EXPECT_EQ(out[row * 32 + chunk * 4 + k % 4], box[row * 32 + k]) << row << ", " << k;
    }
  }
}

TEST(TensorMapCpu, APhaseThatNeverCompletesIsADeadlockNamingTheBarrier) {
  const Operand a = counting(8, 8, 8);
  // The copy's bytes are never armed: the phase waits for an arrival that never comes.
  const std::string no_arrival =
      "  if (threadIdx.x == 0) tt_tensor_copy_2d(tile, &map_a, 0, 0, &bar);\n"
      "  tt_mbarrier_wait(&bar, 0);\n";
  EXPECT_THAT(cpu_launch_error(probe("tf32 dense 8, 8", 8, 8, no_arrival), a),
              AllOf(HasSubstr("never completes its phase of parity 0"),
                    HasSubstr("of the 1 arrivals a phase expects 1 are missing")));
  // Armed for fewer bytes than the copy brings.
  const std::string short_arming =
      "  if (threadIdx.x == 0) {\n"
      "    tt_mbarrier_arrive_expect_tx(&bar, 128);\n"
      "    tt_tensor_copy_2d(tile, &map_a, 0, 0, &bar);\n"
      "  }\n"
      "  tt_mbarrier_wait(&bar, 0);\n";
  EXPECT_THAT(cpu_launch_error(probe("tf32 dense 8, 8", 8, 8, short_arming), a),
              HasSubstr("never completes"));
}

TEST(TensorMapCpu, MisusedBarriersAndCopiesAreErrors) {
  const Operand a = counting(8, 8, 8);
  const std::string elsewhere =
      "  __shared__ __align__(8) unsigned long long other;\n"
      "  tt_mbarrier_wait(&other, 0);\n";
  EXPECT_THAT(cpu_launch_error(probe("tf32 dense 8, 8", 8, 8, elsewhere), a),
              HasSubstr("no mbarrier was initialised there (tt_mbarrier_init)"));
  // A second arrival while the phase still waits for bytes: more than it expects.
  const std::string twice =
      "  if (threadIdx.x == 0) {\n"
      "    tt_mbarrier_arrive_expect_tx(&bar, 64);\n"
      "    tt_mbarrier_arrive(&bar);\n"
      "  }\n";
  EXPECT_THAT(cpu_launch_error(probe("tf32 dense 8, 8", 8, 8, twice), a), HasSubstr("more arrivals"));
  // An inner coordinate off 16 bytes: the H100 stops the kernel with an illegal instruction.
  EXPECT_THAT(cpu_launch_error(probe("tf32 dense 8, 8", 8, 8), a, 3, 0),
              HasSubstr("tt_tensor_copy_2d: an inner coordinate that is not a multiple of 4"));
}

// --- against the GPU -----------------------------------------------------------------------------

class TensorMapGpu : public testing_support::GpuTest {
 protected:
  std::vector<std::uint32_t> run_on_gpu(const KernelTemplate& tmpl, const Operand& a, int inner,
                                        int outer, std::size_t outputs) {
    const Configuration config = tmpl.parse_configuration("P=0");
    const GpuKernel kernel(compile_configuration(tmpl, config, device_->properties().arch()),
                           tmpl.entry, entry_form(tmpl));
    const DeviceBuffer da = DeviceBuffer::from(a.values);
    const DeviceBuffer db = DeviceBuffer::from(std::vector<float>{float(inner), float(outer), 0, 0});
    std::vector<float> c(outputs, from_bits(kUnwritten));
    const DeviceBuffer dc = DeviceBuffer::from(c);
    const GemmProblem p = problem_of(a);
    kernel.launch(tmpl.launch_geometry(config, p.shape), da.get(), db.get(), dc.get(), p);
    check_cuda(cuda_driver().cuCtxSynchronize(), "tensor map probe");
    dc.download_into(c);
    std::vector<std::uint32_t> out;
    for (float x : c) out.push_back(bits(x));
    return out;
  }
};

TEST_F(TensorMapGpu, CopiesAreTheCpuBackendsBitForBit) {
  if (device_->properties().arch() != "sm_90") GTEST_SKIP() << "the probe is an sm_90a kernel";
  // Random floats, each with a tie and its neighbours below TF32's precision, and specials.
  Operand a{{}, 64, 256, 256};
  std::mt19937 random(90);
  for (int i = 0; i < a.rows * a.lda; ++i) {
    const std::uint32_t x = random();
    const std::uint32_t low[] = {x & 0x1fffu, 0x1000u, 0x0fffu, 0x1001u};
    a.values.push_back(from_bits((x & ~0x1fffu) | low[i % 4]));
  }
  const std::uint32_t specials[] = {0x00000000u, 0x80000000u, 0x00001000u, 0x00003000u,
                                    0x007fffffu, 0x7f7ff000u, 0x7f800000u, 0xff800000u,
                                    0x7f800001u, 0x7fc00000u, 0xffc00001u, 0x7f7fefffu};
  for (std::size_t i = 0; i < std::size(specials); ++i) a.values[i * 3] = from_bits(specials[i]);
  for (const auto& [map, inner, outer] :
       {std::tuple{"tf32 dense 64, 32", 64, 32}, std::tuple{"fp32 dense 64, 32", 64, 32},
        std::tuple{"tf32 swizzle128 32, 64", 32, 64}}) {
    const KernelTemplate tmpl = probe(map, inner, outer);
    for (const auto& [x, y] :
         {std::pair{0, 0}, std::pair{200, 40}, std::pair{252, 61}, std::pair{-4, -3}}) {
      const std::string where = std::string(map) + " at " + std::to_string(x) + ", " + std::to_string(y);
      SCOPED_TRACE(where);
      std::vector<std::uint32_t> gpu;
      try {
        gpu = run_on_gpu(tmpl, a, x, y, inner * outer);
      } catch (const CudaError& e) {
        FAIL() << where << ": " << e.what();  // the context is lost: no later case could run
      }
      const std::vector<std::uint32_t> cpu = run_on_cpu(tmpl, a, x, y, inner * outer);
      int differ = 0;
      for (std::size_t i = 0; i < gpu.size(); ++i) {
        if (gpu[i] != cpu[i] && ++differ <= 5) {
          ADD_FAILURE() << "element " << i << ": GPU " << std::hex << gpu[i] << ", CPU " << cpu[i];
        }
      }
      EXPECT_EQ(differ, 0);
    }
  }
}

}  // namespace
}  // namespace tiletune

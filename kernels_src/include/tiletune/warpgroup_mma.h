// <tiletune/warpgroup_mma.h>: Hopper's asynchronous warpgroup matrix multiply-accumulate (wgmma)
// in TF32 for kernel templates, on the GPU (inline PTX; needs `// tiletune: arch sm_90a`) and on
// tiletune's CPU backend. tiletune puts this text into every template that includes it.
//
//   tt_shared_align_1024(p)          p moved up to the next 1024-byte boundary of shared memory
//   tt_wgmma_descriptor(start)       the shared-memory operand's descriptor: a K-major tile of rows
//                                    of 32 floats (128 bytes each, one after another) stored with
//                                    the 128-byte swizzle (16-byte chunk c of row r at chunk
//                                    c ^ (r % 8)), its first row 1024-byte aligned; start is that
//                                    row + 8s floats for the tile's k8 slice s (0 to 3)
//   tt_wgmma_tf32<N>(d, a, desc)     D += A * B for one 64 x N x 8 step (N = 64, 128 or 256), by a
//                                    whole warpgroup (128 threads, 4 aligned warps): A (64 x 8) from
//                                    registers, warp w holding rows 16w to 16w + 15 in mma.sync's
//                                    m16n8k8 A layout (<tiletune/tensor_core.h>); B (8 x N) from
//                                    shared memory by descriptor, column n being row n of the tile;
//                                    d (N / 2 floats) in warp w's rows, d[4j + i] = D[16w + g +
//                                    8 (i / 2)][8j + 2t + i % 2] with g = lane / 4, t = lane % 4
//   tt_wgmma_tf32_shared<N>(d, a, b) the same with A from shared memory too: `a` a descriptor
//                                    like b's, A's row r being row r of its tile (warp w's rows
//                                    16w to 16w + 15)
//   tt_wgmma_fence()                 before the first tt_wgmma_tf32 after the thread wrote its
//                                    accumulators or fragments (wgmma.fence)
//   tt_wgmma_commit()                closes this thread's group of issued tt_wgmma_tf32
//   tt_wgmma_wait<N>(d)              waits until at most N committed groups are in flight; d (the
//                                    accumulators they update) is not to be read or written before
//   tt_fence_proxy_async()           makes this thread's shared-memory writes visible to wgmma's
//                                    reads (fence.proxy.async); then a __syncthreads() for others'
//   tt_setmaxnreg_inc<R>()           the calling warpgroup's threads take, or give back, registers
//   tt_setmaxnreg_dec<R>()           up or down to R each (a multiple of 8, 24 to 256; setmaxnreg),
//                                    so that warpgroups with different jobs split the register
//                                    file unevenly; ptxas then allocates the code that follows
//                                    within R. Called by all 128 threads of the warpgroup, the
//                                    block's total within 64 Ki; a no-op on the CPU backend
//
// Like mma.sync, wgmma reads the top 19 bits of each float (TF32, truncated): round them first
// with tt_tf32_round for round-to-nearest. What the GPU guarantees of an issued operation: it
// reads shared memory and updates d at some moment before the wait that retires its group. The CPU
// backend takes the latest moment: it keeps the fragments when the operation is issued and reads
// shared memory, and updates d, only when a wait retires it, so a template that overwrites a
// stage still being read, or skips a wait, fails the fuzz.
#pragma once

#include <tiletune/tensor_core.h>

#define TT_SETMAXNREG_CHECK(R) \
  static_assert((R) % 8 == 0 && (R) >= 24 && (R) <= 256, "setmaxnreg: a multiple of 8, 24 to 256")

#if defined(__CUDA_ARCH__)

#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "<tiletune/warpgroup_mma.h> needs sm_90a: declare `// tiletune: arch sm_90a` in the template"
#endif

__device__ __forceinline__ float* tt_shared_align_1024(void* p) {
  const unsigned int offset = static_cast<unsigned int>(__cvta_generic_to_shared(p));
  return reinterpret_cast<float*>(static_cast<char*>(p) + ((1024u - offset % 1024u) % 1024u));
}

// Matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading byte offset
// (unused by a swizzled K-major tile one swizzle wide: 1 by convention), stride byte offset 1024
// (from one 8-row group to the next), base offset 0 (the tile is 1024-byte aligned), 128B swizzle.
__device__ __forceinline__ unsigned long long tt_wgmma_descriptor(const float* start) {
  const unsigned int address = static_cast<unsigned int>(__cvta_generic_to_shared(start));
  return static_cast<unsigned long long>((address & 0x3ffffu) >> 4) | (1ull << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
}

// An instruction's N / 2 accumulators: their names in its PTX (%0 on), and their operands.
#define TT_WGMMA_D64_NAMES \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18," \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TT_WGMMA_D128_NAMES \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18," \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35," \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52," \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TT_WGMMA_D256_NAMES \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18," \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35," \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52," \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69," \
  "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86," \
  "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102," \
  "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116," \
  "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TT_WGMMA_D8(i)                                                                          \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define TT_WGMMA_D32(i) TT_WGMMA_D8(i), TT_WGMMA_D8(i + 8), TT_WGMMA_D8(i + 16), TT_WGMMA_D8(i + 24)
#define TT_WGMMA_D64_OPERANDS TT_WGMMA_D32(0)
#define TT_WGMMA_D128_OPERANDS TT_WGMMA_D32(0), TT_WGMMA_D32(32)
#define TT_WGMMA_D256_OPERANDS TT_WGMMA_D32(0), TT_WGMMA_D32(32), TT_WGMMA_D32(64), TT_WGMMA_D32(96)

// m64nNk8 in both forms, A from registers or from shared memory. P0 to P5 name the operands after
// the accumulators: A's four fragment registers, B's descriptor and the accumulate flag in the
// register form; A's descriptor, B's and the flag in the shared form.
template <int N>
struct tt_wgmma_tf32_instruction;
#define TT_WGMMA_TF32_INSTRUCTION(N, P0, P1, P2, P3, P4, P5)                                    \
  template <>                                                                                   \
  struct tt_wgmma_tf32_instruction<N> {                                                         \
    __device__ __forceinline__ static void issue(float (&d)[N / 2], const float (&a)[4],        \
                                                 unsigned long long b) {                        \
      asm volatile("{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, " P5 ", 0;\n"           \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {"                  \
                   TT_WGMMA_D##N##_NAMES "}, {" P0 ", " P1 ", " P2 ", " P3 "}, " P4            \
                   ", accumulate, 1, 1;\n}\n"                                           \
                   : TT_WGMMA_D##N##_OPERANDS                                                   \
                   : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])),                    \
                     "r"(__float_as_uint(a[2])), "r"(__float_as_uint(a[3])), "l"(b), "r"(1));   \
    }                                                                                           \
    __device__ __forceinline__ static void issue_shared(float (&d)[N / 2],                      \
                                                        unsigned long long a,                   \
                                                        unsigned long long b) {                 \
      asm volatile("{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, " P2 ", 0;\n"           \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {"                  \
                   TT_WGMMA_D##N##_NAMES "}, " P0 ", " P1 ", accumulate, 1, 1;\n}\n"     \
                   : TT_WGMMA_D##N##_OPERANDS                                                   \
                   : "l"(a), "l"(b), "r"(1));                                                   \
    }                                                                                           \
  };
TT_WGMMA_TF32_INSTRUCTION(64, "%32", "%33", "%34", "%35", "%36", "%37")
TT_WGMMA_TF32_INSTRUCTION(128, "%64", "%65", "%66", "%67", "%68", "%69")
TT_WGMMA_TF32_INSTRUCTION(256, "%128", "%129", "%130", "%131", "%132", "%133")
#undef TT_WGMMA_TF32_INSTRUCTION
#undef TT_WGMMA_D64_NAMES
#undef TT_WGMMA_D128_NAMES
#undef TT_WGMMA_D256_NAMES
#undef TT_WGMMA_D64_OPERANDS
#undef TT_WGMMA_D128_OPERANDS
#undef TT_WGMMA_D256_OPERANDS
#undef TT_WGMMA_D32
#undef TT_WGMMA_D8

// Called by all 128 threads of the warpgroup together, converged.
template <int N>
__device__ __forceinline__ void tt_wgmma_tf32(float (&d)[N / 2], const float (&a)[4],
                                              unsigned long long b) {
  tt_wgmma_tf32_instruction<N>::issue(d, a, b);
}
template <int N>
__device__ __forceinline__ void tt_wgmma_tf32_shared(float (&d)[N / 2], unsigned long long a,
                                                     unsigned long long b) {
  tt_wgmma_tf32_instruction<N>::issue_shared(d, a, b);
}

__device__ __forceinline__ void tt_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void tt_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// Each accumulator is then an operand of an empty asm statement ordered after the wait, so that
// the compiler takes it as written there: no copy of it made earlier is read afterwards.
template <int Pending, int Floats>
__device__ __forceinline__ void tt_wgmma_wait(float (&d)[Floats]) {
  static_assert(Pending >= 0, "tt_wgmma_wait<N>: N is a count of groups");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
#pragma unroll
  for (int i = 0; i < Floats; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void tt_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
template <int Registers>
__device__ __forceinline__ void tt_setmaxnreg_inc() {
  TT_SETMAXNREG_CHECK(Registers);
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Registers));
}
template <int Registers>
__device__ __forceinline__ void tt_setmaxnreg_dec() {
  TT_SETMAXNREG_CHECK(Registers);
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Registers));
}

#elif defined(TT_CPU_ABI_VERSION)  // tiletune's CPU backend (cuda_on_cpu.h)

inline float* tt_shared_align_1024(void* p) {
  return (float*)((char*)p + (1024 - (uintptr_t)p % 1024) % 1024);
}

// On the CPU a descriptor is the start's address; where the GPU's would name another place than
// the layout above (a start outside the first row of a 1024-byte aligned tile, or between k8
// slices), the kernel ends with an error.
inline unsigned long long tt_wgmma_descriptor(const float* start) {
  const uintptr_t address = (uintptr_t)start;
  if (address % 32 != 0 || address % 1024 >= 128) {
    tt_cpu_host_functions.trap(
        "tt_wgmma_descriptor: the start is not a k8 slice of a 1024-byte aligned tile's first row");
  }
  return (unsigned long long)address;
}

// Element (n, k) of the operand whose descriptor is `b`: row n of the tile, the 128-byte swizzle
// applied to the address bits as the GPU applies it.
inline float tt_cpu_wgmma_operand(unsigned long long b, int n, int k) {
  const uintptr_t logical = (uintptr_t)b + (uintptr_t)(n * 128 + k * 4);
  const uintptr_t physical = logical ^ (((logical >> 7) & 7u) << 4);
  return *(const float*)physical;
}

// Retires one operation for a whole warp, on the last lane to arrive: rows 16w to 16w + 15 of D.
inline void tt_cpu_wgmma_tf32_combine(tt_cpu_warp_call* const* lanes, unsigned int mask) {
  if (mask != 0xffffffffu) tt_cpu_host_functions.trap("tt_wgmma_tf32 needs all 32 lanes of the warp");
  const tt_cpu_async_mma& first = *(const tt_cpu_async_mma*)lanes[0]->in;
  double A[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const tt_cpu_async_mma& op = *(const tt_cpu_async_mma*)lanes[lane]->in;
    if (op.n != first.n || op.b != first.b || op.a_rows != first.a_rows) {
      tt_cpu_host_functions.trap("tt_wgmma_tf32: the lanes of a warp name different operands");
    }
    if (op.a_rows) continue;
    const int g = lane >> 2, t = lane & 3;
    A[g][t] = tt_cpu_tf32_operand(op.a[0]);
    A[g + 8][t] = tt_cpu_tf32_operand(op.a[1]);
    A[g][t + 4] = tt_cpu_tf32_operand(op.a[2]);
    A[g + 8][t + 4] = tt_cpu_tf32_operand(op.a[3]);
  }
  if (first.a_rows) {  // the shared form: read now, as B is
    for (int row = 0; row < 16; ++row) {
      for (int k = 0; k < 8; ++k) {
        A[row][k] = tt_cpu_tf32_operand(
            tt_cpu_wgmma_operand((unsigned long long)(uintptr_t)first.a_rows, row, k));
      }
    }
  }
  const unsigned long long b = (unsigned long long)(uintptr_t)first.b;
  for (int lane = 0; lane < 32; ++lane) {
    const tt_cpu_async_mma& op = *(const tt_cpu_async_mma*)lanes[lane]->in;
    const int g = lane >> 2, t = lane & 3;
    for (unsigned int i = 0; i < op.n / 2; ++i) {
      const int row = g + 8 * (int)(i % 4 / 2), column = 8 * (int)(i / 4) + 2 * t + (int)(i % 2);
      double products[8];
      for (int k = 0; k < 8; ++k) {
        products[k] = A[row][k] * tt_cpu_tf32_operand(tt_cpu_wgmma_operand(b, column, k));
      }
      op.d[i] = tt_cpu_fused_dot8(products, op.d[i]);
    }
  }
}

template <int N>
inline void tt_wgmma_tf32(float (&d)[N / 2], const float (&a)[4], unsigned long long b,
                          unsigned int line = __builtin_LINE()) {
  static_assert(N == 64 || N == 128 || N == 256, "tt_wgmma_tf32<N>: N is 64, 128 or 256");
  const tt_cpu_async_mma operation = {
      d, (const void*)(uintptr_t)b, {a[0], a[1], a[2], a[3]}, nullptr, (unsigned int)N, line};
  tt_cpu_host_functions.async_mma_issue(&operation);
}

// The shared form: the calling warp's rows of A are rows 16w to 16w + 15 of the tile `a` names,
// w its warp in the warpgroup (2048 bytes a step: the swizzle's phase is unchanged).
template <int N>
inline void tt_wgmma_tf32_shared(float (&d)[N / 2], unsigned long long a, unsigned long long b,
                                 unsigned int line = __builtin_LINE()) {
  static_assert(N == 64 || N == 128 || N == 256, "tt_wgmma_tf32_shared<N>: N is 64, 128 or 256");
  const unsigned int thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned long long rows = a + 16ull * 128 * (thread / 32 % 4);
  const tt_cpu_async_mma operation = {
      d, (const void*)(uintptr_t)b, {}, (const void*)(uintptr_t)rows, (unsigned int)N, line};
  tt_cpu_host_functions.async_mma_issue(&operation);
}

inline void tt_wgmma_fence() {}
inline void tt_wgmma_commit() { tt_cpu_host_functions.async_mma_commit(); }

// Carries out the operations this wait retires, oldest first, each as a warp collective.
template <int Pending, int Floats>
inline void tt_wgmma_wait(float (&)[Floats]) {
  static_assert(Pending >= 0, "tt_wgmma_wait<N>: N is a count of groups");
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  while (const tt_cpu_async_mma* retired = tt_cpu_host_functions.async_mma_retire(Pending)) {
    const tt_cpu_async_mma operation = *retired;
    tt_cpu_warp_call call = {"tt_wgmma_tf32", operation.line, 0xffffffffu, &operation, nullptr,
                             &tt_cpu_wgmma_tf32_combine};
    tt_cpu_warp_collective(&call);
  }
}
inline void tt_fence_proxy_async() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
template <int Registers>
inline void tt_setmaxnreg_inc() {
  TT_SETMAXNREG_CHECK(Registers);
}
template <int Registers>
inline void tt_setmaxnreg_dec() {
  TT_SETMAXNREG_CHECK(Registers);
}

#else  // a host compiler pass outside tiletune (nvcc's host side): declarations only

__device__ float* tt_shared_align_1024(void* p);
__device__ unsigned long long tt_wgmma_descriptor(const float* start);
template <int N>
__device__ void tt_wgmma_tf32(float (&d)[N / 2], const float (&a)[4], unsigned long long b);
template <int N>
__device__ void tt_wgmma_tf32_shared(float (&d)[N / 2], unsigned long long a, unsigned long long b);
__device__ void tt_wgmma_fence();
__device__ void tt_wgmma_commit();
template <int Pending, int Floats>
__device__ void tt_wgmma_wait(float (&d)[Floats]);
__device__ void tt_fence_proxy_async();
template <int Registers>
__device__ void tt_setmaxnreg_inc();
template <int Registers>
__device__ void tt_setmaxnreg_dec();

#endif

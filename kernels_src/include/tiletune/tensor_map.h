// <tiletune/tensor_map.h>: Hopper's tensor memory accelerator (TMA) for kernel templates: a tile of
// A or B copied from global to shared memory by one instruction, its completion counted on an
// mbarrier; on the GPU (inline PTX; sm_90 and newer) and on tiletune's CPU backend. tiletune puts
// this text into every template that includes it.
//
//   tt_tensor_map                      what the launcher passes for each `// tiletune: tensor_map`,
//                                      after the contract's parameters, in declaration order:
//                                      `const __grid_constant__ tt_tensor_map map_a`
//   tt_mbarrier_init(bar, count)       one thread sets up the mbarrier `bar` (an 8-byte aligned
//                                      unsigned long long in shared memory) to expect `count`
//                                      arrivals a phase; then tt_mbarrier_init_fence() and a
//                                      __syncthreads() before any other thread uses it
//   tt_mbarrier_arrive_expect_tx(bar, bytes)
//                                      arrives, and makes the running phase also wait for `bytes`
//                                      more bytes of tensor copies (mbarrier.arrive.expect_tx)
//   tt_mbarrier_arrive(bar)            arrives (mbarrier.arrive)
//   tt_mbarrier_wait(bar, parity)      waits until the phase of parity `parity` (0 for the first
//                                      phase, 1 for the second, ...) has completed: every arrival
//                                      it expected made and every byte landed
//   tt_tensor_copy_2d(dst, map, inner, outer, bar)
//                                      copies the map's box whose first element is (inner, outer)
//                                      (column and row of A or B: for A k and m, for B n and k;
//                                      either may be negative; `inner` a multiple of 4 floats, 16
//                                      bytes: the H100 stops the kernel at another)
//                                      to `dst` (128-byte aligned shared memory, 1024 for a
//                                      swizzled map), rows one after another (each `box inner`
//                                      elements, in the 128-byte swizzle where the map says so:
//                                      16-byte chunk c of row r at c ^ (r % 8)); elements outside
//                                      the operand read 0, a tf32 map rounds each to TF32 (to
//                                      nearest, ties to even); the bytes count against `bar`
//
// What the GPU guarantees: the copied bytes are in shared memory for every thread that has
// waited for the phase their barrier counts them in; never earlier. The CPU backend reads the
// source when the copy is issued and writes shared memory when the block's copies land (at once,
// or at the first wait on the barrier: see block_scheduler.h), so that a thread that reads a tile
// without waiting for it, or waits for the wrong phase, reads the previous tile or the 0xff poison,
// and a copy issued into a stage other threads still read overwrites it.
#pragma once

#if defined(__CUDA_ARCH__)

#if __CUDA_ARCH__ < 900
#error "<tiletune/tensor_map.h> needs sm_90 or newer (the tensor memory accelerator)"
#endif

struct __align__(64) tt_tensor_map {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned int tt_shared_address(const void* p) {
  return static_cast<unsigned int>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void tt_mbarrier_init(unsigned long long* barrier, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tt_shared_address(barrier)),
               "r"(count)
               : "memory");
}

// Makes the initialisation visible to the tensor memory accelerator too.
__device__ __forceinline__ void tt_mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void tt_mbarrier_arrive_expect_tx(unsigned long long* barrier,
                                                             unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   tt_shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void tt_mbarrier_arrive(unsigned long long* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(tt_shared_address(barrier))
               : "memory");
}

__device__ __forceinline__ void tt_mbarrier_wait(unsigned long long* barrier, unsigned int parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "tt_mbarrier_wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra tt_mbarrier_wait_%=;\n"
      "}" ::"r"(tt_shared_address(barrier)),
      "r"(parity & 1u)
      : "memory");
}

__device__ __forceinline__ void tt_tensor_copy_2d(void* dst, const tt_tensor_map* map, int inner,
                                                  int outer, unsigned long long* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(tt_shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(inner), "r"(outer),
      "r"(tt_shared_address(barrier))
      : "memory");
}

#elif defined(TT_CPU_ABI_VERSION)  // tiletune's CPU backend (cuda_on_cpu.h defines tt_tensor_map)

inline void tt_mbarrier_init(unsigned long long* barrier, unsigned int count,
                             unsigned int line = __builtin_LINE()) {
  tt_cpu_host_functions.mbarrier_init(barrier, count, line);
}

inline void tt_mbarrier_init_fence() {}

inline void tt_mbarrier_arrive_expect_tx(unsigned long long* barrier, unsigned int bytes,
                                         unsigned int line = __builtin_LINE()) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tt_cpu_host_functions.mbarrier_arrive(barrier, bytes, line);
}

inline void tt_mbarrier_arrive(unsigned long long* barrier, unsigned int line = __builtin_LINE()) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tt_cpu_host_functions.mbarrier_arrive(barrier, 0, line);
}

inline void tt_mbarrier_wait(unsigned long long* barrier, unsigned int parity,
                             unsigned int line = __builtin_LINE()) {
  tt_cpu_host_functions.mbarrier_wait(barrier, parity, line);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// FP32 bits rounded to TF32 as the tensor memory accelerator rounds them (measured on an H100):
// to nearest, ties to even; infinities stay, a NaN becomes 0x7fffe000.
inline unsigned int tt_cpu_tf32_round_even(unsigned int bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) return 0x7fffe000u;
  return (bits + 0x0fffu + ((bits >> 13) & 1u)) & ~0x1fffu;
}

inline void tt_tensor_copy_2d(void* dst, const tt_tensor_map* map, int inner, int outer,
                              unsigned long long* barrier, unsigned int line = __builtin_LINE()) {
  tt_cpu_tensor_map m;
  memcpy(&m, map, sizeof m);
  if (inner % 4 != 0) {
    tt_cpu_host_functions.trap("tt_tensor_copy_2d: an inner coordinate that is not a multiple of "
                               "4 floats (16 bytes: the GPU faults)");
  }
  if ((uintptr_t)dst % (m.swizzle128 ? 1024 : 128) != 0) {
    tt_cpu_host_functions.trap(m.swizzle128
                                   ? "tt_tensor_copy_2d: a swizzled box needs its destination "
                                     "1024-byte aligned"
                                   : "tt_tensor_copy_2d: the destination is not 128-byte aligned");
  }
  const unsigned int bytes = m.box[0] * m.box[1] * 4u;
  unsigned char* data = (unsigned char*)malloc(bytes);
  for (unsigned int o = 0; o < m.box[1]; ++o) {
    for (unsigned int i = 0; i < m.box[0]; ++i) {
      const long long column = (long long)inner + i, row = (long long)outer + o;
      unsigned int value = 0;
      if (column >= 0 && row >= 0 && (unsigned long long)column < m.dims[0] &&
          (unsigned long long)row < m.dims[1]) {
        memcpy(&value, (const unsigned char*)m.base + (unsigned long long)row * m.row_bytes +
                           (unsigned long long)column * 4u,
               4);
        if (m.tf32) value = tt_cpu_tf32_round_even(value);
      }
      unsigned int offset = (o * m.box[0] + i) * 4u;
      if (m.swizzle128) offset ^= ((offset >> 7) & 7u) << 4;
      memcpy(data + offset, &value, 4);
    }
  }
  tt_cpu_host_functions.tensor_copy(barrier, dst, data, bytes, line);
  free(data);
}

#else  // a host compiler pass outside tiletune (nvcc's host side): declarations only

struct __align__(64) tt_tensor_map {
  unsigned long long opaque[16];
};
__device__ void tt_mbarrier_init(unsigned long long* barrier, unsigned int count);
__device__ void tt_mbarrier_init_fence();
__device__ void tt_mbarrier_arrive_expect_tx(unsigned long long* barrier, unsigned int bytes);
__device__ void tt_mbarrier_arrive(unsigned long long* barrier);
__device__ void tt_mbarrier_wait(unsigned long long* barrier, unsigned int parity);
__device__ void tt_tensor_copy_2d(void* dst, const tt_tensor_map* map, int inner, int outer,
                                  unsigned long long* barrier);

#endif

// <tiletune/async_copy.h>: asynchronous copies from global to shared memory (cp.async) for kernel
// templates, on the GPU (inline PTX on sm_80 and newer, plain copies below) and on tiletune's CPU
// backend. tiletune puts this text into every template that includes it (local_includes.h).
//
//   tt_cp_async_4(dst, src, src_bytes)   copies src_bytes (0 to 4) bytes, zero-fills the rest of 4
//   tt_cp_async_16(dst, src, src_bytes)  the same for 16 bytes; both addresses 16-byte aligned
//   tt_cp_async_commit()                 closes this thread's group of copies (commit_group)
//   tt_cp_async_wait<N>()                waits until at most N of this thread's committed groups
//                                        are still in flight (wait_group N)
//
// src_bytes 0 reads nothing: src need not be valid. What the GPU guarantees: a copy's bytes are in
// shared memory, for this thread, once a wait has retired its group, and for the block's other
// threads after that wait and a __syncthreads(); never earlier, and copies not yet committed are
// retired by no wait. The CPU backend reads the source when the copy is issued and writes the
// destination at either end of that window, drawn per block from the schedule seed: at the
// wait that retires its group (a copy never waited for is never written), so that a template
// that skips a wait, or waits for too few groups, reads the previous stage or the 0xff poison
// each block starts with; or at once, so that a copy into a stage other threads may still read
// (issued before the barrier that says they are done with it) overwrites what they read.
#pragma once

#if defined(__CUDA_ARCH__)

#if __CUDA_ARCH__ >= 800

__device__ __forceinline__ void tt_cp_async_4(void* shared_dst, const void* global_src,
                                              int src_bytes) {
  const unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(global_src),
               "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void tt_cp_async_16(void* shared_dst, const void* global_src,
                                               int src_bytes) {
  const unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(global_src),
               "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void tt_cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void tt_cp_async_wait() {
  static_assert(N >= 0, "tt_cp_async_wait<N>: N is a count of groups");
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

#else  // no cp.async before sm_80: each copy completes at once

__device__ __forceinline__ void tt_cp_async_bytes(void* shared_dst, const void* global_src,
                                                  int src_bytes, int size) {
  unsigned char* dst = static_cast<unsigned char*>(shared_dst);
  const unsigned char* src = static_cast<const unsigned char*>(global_src);
  for (int i = 0; i < size; ++i) dst[i] = i < src_bytes ? src[i] : 0;
}
__device__ __forceinline__ void tt_cp_async_4(void* shared_dst, const void* global_src,
                                              int src_bytes) {
  tt_cp_async_bytes(shared_dst, global_src, src_bytes, 4);
}
__device__ __forceinline__ void tt_cp_async_16(void* shared_dst, const void* global_src,
                                               int src_bytes) {
  tt_cp_async_bytes(shared_dst, global_src, src_bytes, 16);
}
__device__ __forceinline__ void tt_cp_async_commit() {}
template <int N>
__device__ __forceinline__ void tt_cp_async_wait() {
  static_assert(N >= 0, "tt_cp_async_wait<N>: N is a count of groups");
}

#endif

#elif defined(TT_CPU_ABI_VERSION)  // tiletune's CPU backend (cuda_on_cpu.h)

// Reads the source now, into the copy tiletune queues in this thread's open group.
inline void tt_cpu_cp_async(void* shared_dst, const void* global_src, int src_bytes,
                            unsigned int size, const char* what) {
  if (src_bytes < 0 || (unsigned int)src_bytes > size) {
    tt_cpu_host_functions.trap(size == 4 ? "tt_cp_async_4: src_bytes outside 0 to 4"
                                         : "tt_cp_async_16: src_bytes outside 0 to 16");
  }
  if ((uintptr_t)shared_dst % size != 0 || (src_bytes > 0 && (uintptr_t)global_src % size != 0)) {
    tt_cpu_host_functions.trap(what);
  }
  unsigned char* data = (unsigned char*)tt_cpu_host_functions.async_copy_issue(shared_dst, size);
  if (src_bytes > 0) memcpy(data, global_src, (size_t)src_bytes);
  memset(data + src_bytes, 0, size - (unsigned int)src_bytes);
}

inline void tt_cp_async_4(void* shared_dst, const void* global_src, int src_bytes) {
  tt_cpu_cp_async(shared_dst, global_src, src_bytes, 4,
                  "tt_cp_async_4: an address is not 4-byte aligned");
}
inline void tt_cp_async_16(void* shared_dst, const void* global_src, int src_bytes) {
  tt_cpu_cp_async(shared_dst, global_src, src_bytes, 16,
                  "tt_cp_async_16: an address is not 16-byte aligned");
}
inline void tt_cp_async_commit() { tt_cpu_host_functions.async_copy_commit(); }

// Writes the copies of the groups this wait retires, oldest first.
template <int N>
inline void tt_cp_async_wait() {
  static_assert(N >= 0, "tt_cp_async_wait<N>: N is a count of groups");
  while (const tt_cpu_async_copy* copy = tt_cpu_host_functions.async_copy_retire(N)) {
    memcpy(copy->dst, copy->data, copy->size);
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

#else  // a host compiler pass outside tiletune (nvcc's host side): declarations only

__device__ void tt_cp_async_4(void* shared_dst, const void* global_src, int src_bytes);
__device__ void tt_cp_async_16(void* shared_dst, const void* global_src, int src_bytes);
__device__ void tt_cp_async_commit();
template <int N>
__device__ void tt_cp_async_wait();

#endif

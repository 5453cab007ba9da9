// <tiletune/named_barrier.h>: named barriers (bar.sync / bar.arrive with a barrier number and a
// thread count) for kernel templates whose warps do different jobs: a producer warp group copies
// a stage and arrives, the consumers wait for it there, and arrive at another barrier once they
// have read it, which the producer waits for before it overwrites the stage. On the GPU (inline
// PTX) and on tiletune's CPU backend. tiletune puts this text into every template that includes it.
//
//   tt_bar_sync(id, threads)    counts this thread's arrival at barrier `id` and waits until
//                               `threads` threads have arrived there (bar.sync id, threads)
//   tt_bar_arrive(id, threads)  counts this thread's arrival and goes on (bar.arrive id, threads)
//
// `id` is 1 to 15 (barrier 0 is __syncthreads()'s); `threads` a multiple of 32, at most the block's
// threads, the same at every arrival until the barrier completes; then it starts over. Whole warps
// arrive together (bar.sync is .aligned: every lane of a warp calls it, none diverged). What the
// GPU guarantees: shared-memory writes of the arriving threads made before their arrival are seen
// by the waiting threads after their wait; an arrival never waits. A thread that has exited never
// arrives: a barrier that waits for it never completes, which the CPU backend reports (the GPU
// hangs until the watchdog). The CPU backend resumes the waiters only once the last thread has
// arrived, and runs a thread that arrives without waiting on in its turn, so a consumer that does
// not wait for its stage reads it before it is written, and a producer that does not wait for
// the consumers overwrites a stage they have not read.
#pragma once

#if defined(__CUDA_ARCH__)

__device__ __forceinline__ void tt_bar_sync(unsigned int id, unsigned int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void tt_bar_arrive(unsigned int id, unsigned int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

#elif defined(TT_CPU_ABI_VERSION)  // tiletune's CPU backend (cuda_on_cpu.h)

inline void tt_bar_sync(unsigned int id, unsigned int threads, unsigned int line = __builtin_LINE()) {
  tt_cpu_host_functions.named_barrier(id, threads, 1, line);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

inline void tt_bar_arrive(unsigned int id, unsigned int threads,
                          unsigned int line = __builtin_LINE()) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tt_cpu_host_functions.named_barrier(id, threads, 0, line);
}

#else  // a host compiler pass outside tiletune (nvcc's host side): declarations only

__device__ void tt_bar_sync(unsigned int id, unsigned int threads);
__device__ void tt_bar_arrive(unsigned int id, unsigned int threads);

#endif

// Runs thread blocks of a CPU kernel: each CUDA thread a fiber (Boost.Context) on a stack of its
// own, all fibers of a block on the calling OS thread, resumed phase by phase.
//
// A phase resumes every fiber still running once; each runs until its next __syncthreads() or
// until it returns. A thread that returned counts as arrived at every later barrier: that is what
// `if (row >= M) return;` ahead of a barrier needs, and what GPUs do. The order within a
// phase is forward, reverse or a random permutation, chosen per block and per phase from the
// schedule seed, so that a kernel missing a barrier computes something else for some seed.
// Threads of a block waiting at different __syncthreads() calls (told apart by their source line)
// are barrier divergence, reported as a LaunchError.
//
// Warp collectives (shuffles, votes, __syncwarp, tt_mma_m16n8k8_tf32) suspend a lane until every
// lane its mask names has arrived at the same one (same call, same line); the last to arrive
// computes every lane's result and goes on, the others are resumed later in the phase or in the
// next pass. In half the blocks a pass runs one warp at a time, until none of its lanes can go on
// (runs_warp_by_warp), so that a warp may finish a phase before another starts it, as on a GPU;
// otherwise warps keep within a collective of each other. Passes repeat until no thread can go
// on: then the lanes waiting at an __activemask() get the lanes waiting at the same one, a lane
// still waiting at a collective is warp divergence (reported with where each lane of its mask is
// instead), and otherwise the barrier is released as above. The lanes of a warp are the threads
// 32w to 32w + 31 by linear thread index; a mask's lanes that the block does not have are left
// out; a lane named by a mask that has exited is an error. A thread's asynchronous copies
// (cp.async) land at a moment the GPU may choose, between the copy and the wait that retires its
// group, picked per block from the schedule seed (see CopyLanding): at the wait (they queue per
// thread until then; copies never waited for are dropped when the block ends), at once, or each
// at either. Late landings expose a missing or short wait, early ones a copy into a stage other
// threads still read. Asynchronous matrix operations (wgmma) queue per thread, in a queue of
// their own, until their wait.
//
// Named barriers (bar.sync / bar.arrive id, threads: <tiletune/named_barrier.h>) count arrivals;
// a thread that waits at one is suspended until the last of its `threads` arrives, which resumes
// the waiters later in the pass or in the next one, and a thread that only arrives runs on. Once
// no thread can go on, a thread still waiting at a named barrier is a deadlock (the barrier never
// completes: a thread it counts on exited or waits elsewhere), reported with the barrier's count.
// A barrier completed by part of a warp, or a thread that arrives twice before it completes, is
// an error too.
//
// mbarriers (<tiletune/tensor_map.h>) are kept by address, per block: the arrivals a phase
// expects, those still missing, the tensor-copy bytes still expected, the phase's parity. A tensor
// copy lands (writes shared memory and counts its bytes off) as the block's copies land: at once,
// or at the first wait on its barrier, or each at one of the two. A thread that waits for a phase
// not yet complete is suspended until it completes; once no thread can go on, the copies still
// queued land, and a thread still waiting then is a deadlock, reported with the barrier's counts.
//
// __shared__ arrays are thread_local variables of the kernel's shared object (cuda_on_cpu.h); an
// OS thread runs one block at a time, so each block in flight has its own. At the start of every
// block the object's whole thread-local block is filled with 0xff bytes (a NaN as a float), so a
// read of shared memory the block never wrote shows in the result instead of seeing the previous
// block's values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#ifndef TT_CPU_BACKEND_HOST
#define TT_CPU_BACKEND_HOST
#endif
#include "tuner/backend/cpu/cuda_on_cpu.h"
#include "tuner/backend/entry_contract.h"

namespace tiletune {

using GemmEntry = void (*)(const float* a, const float* b, float* c, int m, int n, int k, int lda,
                           int ldb, int ldc);

// What the scheduler needs of a loaded kernel object.
struct KernelModule {
  GemmEntry entry = nullptr;
  void (*enter)(const tt_cpu_thread*) = nullptr;  // the object's tt_cpu_enter
  void* handle = nullptr;                         // from dlopen: finds the thread-local block
  std::size_t thread_local_bytes = 0;             // the object's PT_TLS size
};

struct GemmArguments {
  const float* a;
  const float* b;
  float* c;
  int m, n, k, lda, ldb, ldc;
  bool takes_contract_args = false;  // the entry takes `contract_args` after any tensor map
  ContractArgs contract_args{};
  std::array<tt_tensor_map, 2> tensor_maps{};  // the first `tensor_map_count` follow the contract's
  unsigned tensor_map_count = 0;
};

struct BlockLaunch {
  const KernelModule* kernel;
  GemmArguments arguments;
  std::array<std::uint32_t, 3> grid, block;
  std::uint64_t schedule_seed;
  std::uint64_t sanitizer_reports_before;  // sanitizer_report_count() when the launch began
};

// Whether block `block` runs warp by warp under schedule seed `seed` (half the blocks): each pass
// of a phase lets one warp go on until none of its lanes can without another warp (a barrier, a
// named barrier, its end) before the next warp starts, so that warps run as far apart as a GPU
// lets them; otherwise each pass resumes every thread once, and the warps stay within one warp
// collective of each other.
bool runs_warp_by_warp(std::uint64_t seed, std::uint64_t block);

// When a block's asynchronous copies write their destination: the wait that retires them (the
// latest moment), the copy itself (the earliest), or each copy at one of the two by a coin.
enum class CopyLanding { at_wait, at_copy, mixed };

// The landing of block `block`'s copies under schedule seed `seed`: at_wait half of the time,
// at_copy and mixed a quarter each.
CopyLanding copy_landing(std::uint64_t seed, std::uint64_t block);

// The order in which a launch's blocks start under schedule seed `seed`: position i of `count`
// starts block (i * stride + offset) mod count. A GPU promises no order, and a kernel whose result
// depends on which of two blocks runs first (a stream-K share stored where it must be added) must
// fail under some seeds rather than pass by the index order: a third of the seeds keep the index
// order, a third run from the last block, a third stride through the blocks from a drawn start.
struct BlockOrder {
  std::uint64_t count = 1, stride = 1, offset = 0;
  std::uint64_t operator()(std::uint64_t position) const {
    return std::uint64_t((unsigned __int128)position * stride % count + offset) % count;
  }
};
BlockOrder block_order(std::uint64_t seed, std::uint64_t count);

// tiletune's side of the kernel interface, handed to every kernel object when it is loaded.
const tt_cpu_host& cpu_host_functions();

// The CUDA thread whose fiber runs on the calling OS thread, "block (0, 0, 0), thread (5, 3, 0)",
// or empty outside a kernel: names the culprit of a sanitizer report.
std::string running_cuda_thread();

// Fiber resumes by every BlockRunner of the process so far, counted when each block ends: what
// the scheduler spent on a launch, the same on any machine and under any load (a kernel's
// barriers and collectives cost resumes, not arithmetic).
std::uint64_t fiber_resume_count();

struct CudaThreadFiber;  // defined in block_scheduler.cpp

// The fiber stacks and states of one OS thread, reused from block to block.
class BlockRunner {
 public:
  BlockRunner();
  ~BlockRunner();
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Runs block number `linear` of the grid (x varies fastest) on the calling thread. Throws
  // LaunchError when a thread traps, the block's threads wait at different barriers, or a
  // sanitizer has reported since the launch began (sanitizer_runtime.h).
  void run(const BlockLaunch& launch, std::uint64_t linear);

  static constexpr std::size_t kStackBytes = 64 * 1024;

 private:
  class Stack;
  struct Warp;
  friend const tt_cpu_host& cpu_host_functions();

  void run_phases(const BlockLaunch& launch, std::uint64_t linear, std::uint32_t count);
  // The lanes waiting at an __activemask() go on; false when there are none.
  bool release_activemask_waiters(std::uint32_t count);
  // Throws LaunchError describing the collective a lane still waits at, when one does.
  void check_warp_collectives(std::uint32_t count) const;
  // Throws LaunchError describing the named barrier a thread still waits at, when one does.
  void check_named_barriers(std::uint32_t count) const;

  // tiletune's side of the warp built-ins and asynchronous copies (cuda_on_cpu.h), for the fiber
  // running on this OS thread.
  static void warp_collective(tt_cpu_warp_call* call);
  static unsigned int activemask(unsigned int line);
  static void* async_copy_issue(void* dst, unsigned int size);
  static void async_copy_commit();
  static const tt_cpu_async_copy* async_copy_retire(unsigned int pending);
  static void async_mma_issue(const tt_cpu_async_mma* operation);
  static void async_mma_commit();
  static const tt_cpu_async_mma* async_mma_retire(unsigned int pending);
  static void named_barrier(unsigned int id, unsigned int threads, int wait, unsigned int line);
  static void mbarrier_init(void* barrier, unsigned int count, unsigned int line);
  static void mbarrier_arrive(void* barrier, unsigned int tx_bytes, unsigned int line);
  static void tensor_copy(void* barrier, void* dst, const void* data, unsigned int bytes,
                          unsigned int line);
  static void mbarrier_wait(void* barrier, unsigned int parity, unsigned int line);

  // Whether the asynchronous copy being issued (cp.async or a tensor copy) lands at once: by the
  // block's landing, a coin for each copy where it is mixed.
  bool copy_lands_now();

  struct Mbarrier;
  // The block's mbarrier at `address`; a trap when it was never initialised.
  Mbarrier& mbarrier_at(const void* address, const char* what, unsigned int line);
  // Lands the copies queued on `barrier`; completes its phase when nothing is missing.
  void land_tensor_copies(Mbarrier& barrier);
  void complete_if_done(Mbarrier& barrier);
  // Lands every queued tensor copy; true when that let a waiting thread go on.
  bool land_all_tensor_copies();
  // Throws LaunchError describing the mbarrier a thread still waits at, when one does.
  void check_mbarriers(std::uint32_t count) const;

  struct NamedBarrier;
  std::vector<Stack> stacks_;
  std::vector<CudaThreadFiber> fibers_;
  std::vector<Warp> warps_;
  std::vector<std::uint32_t> order_;
  std::vector<NamedBarrier> named_barriers_;  // 16, by number; 0 (__syncthreads()'s) unused
  std::vector<Mbarrier> mbarriers_;           // the running block's, in the order initialised
  std::uint32_t threads_ = 0;  // of the running block (fibers_ may hold more: a larger block's)
  std::uint32_t ready_ = 0;    // fibers that can be resumed
  CopyLanding landing_ = CopyLanding::at_wait;  // of the running block's copies
  std::uint64_t landing_coins_ = 0;             // state of the mixed landing's coins
};

}  // namespace tiletune

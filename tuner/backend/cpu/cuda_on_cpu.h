// The CUDA built-ins a kernel template uses, for the CPU backend: the template's source is
// compiled unchanged by the host C++ compiler with this file force-included (-include) in front of
// it, into a shared object that tiletune loads and runs, each CUDA thread a fiber.
//
// Part one is the interface between that shared object and tiletune; tiletune itself includes only
// that part (TT_CPU_BACKEND_HOST). Part two emulates CUDA for the kernel and defines the functions
// the shared object exports: it is meant for exactly one translation unit, the kernel's.
//
// Warp-level built-ins (__shfl*_sync, votes, __syncwarp, __activemask) are warp collectives: each
// lane waits at the call until every lane its mask names has arrived (block_scheduler.h). The
// device library (kernels_src/include/tiletune/: tensor cores, asynchronous copies, named
// barriers) builds on the same calls. What the CPU cannot emulate (inline assembly, CUDA's own
// tensor core fragments and asynchronous copies, warp reductions and matches, cooperative
// groups) is not declared here: tiletune rejects such a template by scanning its preprocessed
// source before compiling (source_scan.cpp).
#pragma once

extern "C" {

struct tt_cpu_dim3 {
  unsigned int x, y, z;
};

// What the built-in variables of the running CUDA thread read.
struct tt_cpu_thread {
  tt_cpu_dim3 thread_idx, block_idx, block_dim, grid_dim;
};

// One lane's part in a warp collective. The lanes of a warp are the block's threads 32w to 32w + 31
// by linear thread index; a call is told apart from others by its `what`, `line` and `combine`.
struct tt_cpu_warp_call {
  const char* what;   // "__shfl_sync": names it in error messages
  unsigned int line;  // the call site's line
  unsigned int mask;  // the lanes taking part; tiletune leaves out those the block does not have
  const void* in;     // this lane's contribution
  void* out;          // this lane's result
  // Runs once, on the last lane to arrive, with lanes[l] the call of lane l (null where `mask`
  // leaves l out): reads every `in`, writes every `out`.
  void (*combine)(struct tt_cpu_warp_call* const* lanes, unsigned int mask);
};

// An asynchronous copy, its source read when it was issued.
struct tt_cpu_async_copy {
  void* dst;
  unsigned int size;
  unsigned char data[16];
};

// An asynchronous warpgroup matrix multiply-accumulate (wgmma) of one lane: its operands as they
// were when it was issued, except shared memory, which it reads when a wait retires it.
struct tt_cpu_async_mma {
  float* d;           // the lane's accumulators, updated when the operation is retired
  const void* b;      // the shared-memory operand, as its descriptor names it
  float a[4];         // the lane's fragment of the register operand
  const void* a_rows; // or, in the shared form, the first of its warp's 16 rows of A (else null)
  unsigned int n;     // the instruction's N
  unsigned int line;  // where it was issued
};

// A tensor map (<tiletune/tensor_map.h>): 128 bytes, 64-byte aligned, as CUDA's CUtensorMap. On
// the CPU backend tiletune writes a tt_cpu_tensor_map into it.
struct __attribute__((aligned(64))) tt_tensor_map {
  unsigned long long opaque[16];
};

// What a tensor map says on the CPU backend: a two-dimensional array of floats (dims[0] of them
// contiguous in a row, dims[1] rows, row_bytes apart) and the box a copy brings.
struct tt_cpu_tensor_map {
  const void* base;
  unsigned long long dims[2];
  unsigned long long row_bytes;
  unsigned int box[2];     // inner (along a row) and outer extent, in elements
  unsigned int tf32;       // the copy rounds to TF32, to nearest even
  unsigned int swizzle128; // the 128-byte swizzle of 128-byte rows
};

// tiletune's functions that kernel code calls.
struct tt_cpu_host {
  // Suspends the calling fiber until every thread of its block has reached a barrier or returned;
  // `line` tells the barriers apart, so that threads waiting at different ones are reported.
  void (*syncthreads)(unsigned int line);
  // Ends the kernel with an error; does not return (it unwinds the fiber by throwing).
  void (*trap)(const char* what);
  // Suspends the calling lane until every lane of call->mask has arrived at the same collective,
  // then returns with call->out written. Lanes that wait at different ones, or a lane named by
  // the mask that has exited, end the kernel with an error naming the lanes.
  void (*warp_collective)(struct tt_cpu_warp_call* call);
  // The lanes of the caller's warp waiting at the __activemask() of `line` once no thread of the
  // block can go on without another: those that run together with it.
  unsigned int (*activemask)(unsigned int line);
  // Queues a copy of `size` (4 or 16) bytes to `dst` in the calling thread's open group of
  // asynchronous copies; returns where the source's bytes go now.
  void* (*async_copy_issue)(void* dst, unsigned int size);
  // Closes the calling thread's open group (cp.async.commit_group).
  void (*async_copy_commit)(void);
  // The next copy, oldest first, of the groups that cp.async.wait_group `pending` retires (all
  // but the newest `pending` committed ones), removed from the queue; null when there is none.
  // Valid until the next call.
  const struct tt_cpu_async_copy* (*async_copy_retire)(unsigned int pending);
  // The same three for the calling thread's asynchronous matrix operations (wgmma.mma_async,
  // wgmma.commit_group, wgmma.wait_group), which tiletune keeps in a queue apart.
  void (*async_mma_issue)(const struct tt_cpu_async_mma* operation);
  void (*async_mma_commit)(void);
  const struct tt_cpu_async_mma* (*async_mma_retire)(unsigned int pending);
  // Counts the caller's arrival at named barrier `id` (bar.sync / bar.arrive id, threads); once
  // `threads` threads have arrived it completes: its waiters go on and it starts over. With
  // `wait`, the caller waits for that (suspended). `line` names the call site in errors.
  void (*named_barrier)(unsigned int id, unsigned int threads, int wait, unsigned int line);
  // An mbarrier in shared memory (<tiletune/tensor_map.h>): set up to expect `count` arrivals a
  // phase (mbarrier.init); an arrival that also expects `tx_bytes` more bytes of tensor copies
  // (mbarrier.arrive.expect_tx); a tensor copy of `bytes` bytes (`data`, read when it was issued)
  // into `dst` that counts them off the barrier when it lands (cp.async.bulk.tensor ...
  // complete_tx); a wait until the phase of parity `parity` has completed (try_wait.parity, in a
  // loop). Landing: at once or at a wait on the barrier, as the block's copies land.
  void (*mbarrier_init)(void* barrier, unsigned int count, unsigned int line);
  void (*mbarrier_arrive)(void* barrier, unsigned int tx_bytes, unsigned int line);
  void (*tensor_copy)(void* barrier, void* dst, const void* data, unsigned int bytes,
                      unsigned int line);
  void (*mbarrier_wait)(void* barrier, unsigned int parity, unsigned int line);
};

}  // extern "C"

// Bumped whenever the structures above or the exported functions below change.
#define TT_CPU_ABI_VERSION 9

#ifndef TT_CPU_BACKEND_HOST

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the shared object's exports ------------------------------------------------------------

// The running fiber's CUDA thread. Every fiber of a block runs on the same OS thread, so the
// scheduler sets this before each resume (tt_cpu_enter). It lives in the same thread-local block
// as the __shared__ arrays, which tiletune poisons at the start of every block: the scheduler sets
// it again afterwards. Exported, the object's one thread-local symbol: tiletune looks it up to
// find that block on a thread, whatever TLS model the object was built with.
extern "C" thread_local const tt_cpu_thread* tt_cpu_current = nullptr;
static tt_cpu_host tt_cpu_host_functions;

extern "C" unsigned int tt_cpu_abi_version(void) { return TT_CPU_ABI_VERSION; }
extern "C" void tt_cpu_bind(const tt_cpu_host* host) { tt_cpu_host_functions = *host; }
// A volatile store, so that the store is made even in a kernel that never reads a built-in variable.
extern "C" void tt_cpu_enter(const tt_cpu_thread* thread) {
  *(const tt_cpu_thread* volatile*)&tt_cpu_current = thread;
}

// The entry's type: tiletune appends TT_CPU_ENTRY_CONTRACT(entry) to the kernel's source
// (kernel_build.cpp), so that the object tells whether its entry's type is the contract's and
// prints that type as the compiler sees it (tt_cpu_entry_type). An entry taking other parameters
// is then refused when the object is loaded, before it runs (cpu_kernel.cpp).
// The contract's nine parameters; then one or two tensor maps (`// tiletune: tensor_map`), then a
// tt_gemm_args where the template declares a part of the BLAS contract
// (<tiletune/gemm_contract.h>: a class of 56 bytes, passed by value).
#define TT_CPU_CONTRACT_PARAMETERS const float*, const float*, float*, int, int, int, int, int, int
template <class T>
struct tt_cpu_without_noexcept {
  typedef T type;
};
template <class... P>
struct tt_cpu_without_noexcept<void(P...) noexcept> {
  typedef void type(P...);
};
template <class G>
struct tt_cpu_is_gemm_args {
  static const bool value = __is_class(G) && sizeof(G) == 56;
};
// form: the tensor maps after the contract's parameters, -1 for a type none of the contract's;
// args: whether a tt_gemm_args comes last.
template <class T>
struct tt_cpu_entry_form {
  static const int form = -1, args = 0;
};
template <>
struct tt_cpu_entry_form<void(TT_CPU_CONTRACT_PARAMETERS)> {
  static const int form = 0, args = 0;
};
template <>
struct tt_cpu_entry_form<void(TT_CPU_CONTRACT_PARAMETERS, tt_tensor_map)> {
  static const int form = 1, args = 0;
};
template <>
struct tt_cpu_entry_form<void(TT_CPU_CONTRACT_PARAMETERS, tt_tensor_map, tt_tensor_map)> {
  static const int form = 2, args = 0;
};
template <class G>
struct tt_cpu_entry_form<void(TT_CPU_CONTRACT_PARAMETERS, G)> {
  static const int form = tt_cpu_is_gemm_args<G>::value ? 0 : -1, args = 1;
};
template <class G>
struct tt_cpu_entry_form<void(TT_CPU_CONTRACT_PARAMETERS, tt_tensor_map, G)> {
  static const int form = tt_cpu_is_gemm_args<G>::value ? 1 : -1, args = 1;
};
template <class G>
struct tt_cpu_entry_form<void(TT_CPU_CONTRACT_PARAMETERS, tt_tensor_map, tt_tensor_map, G)> {
  static const int form = tt_cpu_is_gemm_args<G>::value ? 2 : -1, args = 1;
};
// "const char* tt_cpu_type_text() [with T = void(int, int)]" (Clang: "[T = void (int, int)]").
template <class T>
const char* tt_cpu_type_text() { return __PRETTY_FUNCTION__; }
// tt_cpu_entry_tensor_maps: how many tensor maps the entry takes after the contract's
// parameters, -1 when its type is none of the contract's; tt_cpu_entry_contract_args: whether a
// tt_gemm_args comes after them.
#define TT_CPU_ENTRY_CONTRACT(entry)                                                          \
  extern "C" int tt_cpu_entry_tensor_maps(void) {                                             \
    return tt_cpu_entry_form<tt_cpu_without_noexcept<decltype(entry)>::type>::form;           \
  }                                                                                           \
  extern "C" int tt_cpu_entry_contract_args(void) {                                           \
    return tt_cpu_entry_form<tt_cpu_without_noexcept<decltype(entry)>::type>::args;           \
  }                                                                                           \
  extern "C" const char* tt_cpu_entry_type(void) { return tt_cpu_type_text<decltype(entry)>(); }

// ---- qualifiers -----------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ __attribute__((always_inline)) inline
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
// Block-scope thread_local implies static: one array per OS thread, and an OS thread runs one
// block at a time, so each block in flight has its own. `extern __shared__` (dynamic shared
// memory) becomes an extern thread_local array that tiletune defines after the kernel's source.
#define __shared__ thread_local

// ---- built-in variables ---------------------------------------------------------------------

typedef tt_cpu_dim3 uint3;
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define threadIdx (tt_cpu_current->thread_idx)
#define blockIdx (tt_cpu_current->block_idx)
#define blockDim (tt_cpu_current->block_dim)
#define gridDim (tt_cpu_current->grid_dim)
static const int warpSize = 32;

// ---- vector types ---------------------------------------------------------------------------

#define TT_CPU_VECTOR1(T, V)                                            \
  struct __attribute__((aligned(sizeof(T)))) V##1 { T x; };             \
  inline V##1 make_##V##1(T x) { return V##1{x}; }
#define TT_CPU_VECTOR2(T, V)                                            \
  struct __attribute__((aligned(2 * sizeof(T)))) V##2 { T x, y; };      \
  inline V##2 make_##V##2(T x, T y) { return V##2{x, y}; }
#define TT_CPU_VECTOR3(T, V)                                            \
  struct V##3 { T x, y, z; };                                           \
  inline V##3 make_##V##3(T x, T y, T z) { return V##3{x, y, z}; }
#define TT_CPU_VECTOR4(T, V)                                                                 \
  struct __attribute__((aligned(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)))) V##4 { T x, y, z, w; }; \
  inline V##4 make_##V##4(T x, T y, T z, T w) { return V##4{x, y, z, w}; }
#define TT_CPU_VECTORS(T, V) TT_CPU_VECTOR1(T, V) TT_CPU_VECTOR2(T, V) TT_CPU_VECTOR3(T, V) \
  TT_CPU_VECTOR4(T, V)

TT_CPU_VECTORS(signed char, char)
TT_CPU_VECTORS(unsigned char, uchar)
TT_CPU_VECTORS(short, short)
TT_CPU_VECTORS(unsigned short, ushort)
TT_CPU_VECTORS(int, int)
TT_CPU_VECTOR1(unsigned int, uint)  // uint3 is the built-in variables' type, above
TT_CPU_VECTOR2(unsigned int, uint)
TT_CPU_VECTOR4(unsigned int, uint)
TT_CPU_VECTORS(long, long)
TT_CPU_VECTORS(unsigned long, ulong)
TT_CPU_VECTORS(long long, longlong)
TT_CPU_VECTORS(unsigned long long, ulonglong)
TT_CPU_VECTORS(float, float)
TT_CPU_VECTORS(double, double)

// ---- synchronisation ------------------------------------------------------------------------

// The signal fences keep the compiler from moving shared-memory accesses across the switch to
// other fibers.
inline void __syncthreads(unsigned int line = __builtin_LINE()) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tt_cpu_host_functions.syncthreads(line);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// ---- warp collectives -------------------------------------------------------------------------

inline void tt_cpu_warp_collective(tt_cpu_warp_call* call) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tt_cpu_host_functions.warp_collective(call);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

inline void tt_cpu_syncwarp_combine(tt_cpu_warp_call* const*, unsigned int) {}

inline void __syncwarp(unsigned int mask = 0xffffffffu, unsigned int line = __builtin_LINE()) {
  tt_cpu_warp_call call = {"__syncwarp", line, mask, nullptr, nullptr, &tt_cpu_syncwarp_combine};
  tt_cpu_warp_collective(&call);
}

inline unsigned int __activemask(unsigned int line = __builtin_LINE()) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  const unsigned int mask = tt_cpu_host_functions.activemask(line);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return mask;
}

// Votes: every lane gets the ballot of the lanes taking part, and which lanes those are.
struct tt_cpu_vote {
  unsigned int ballot, mask;
};
inline void tt_cpu_vote_combine(tt_cpu_warp_call* const* lanes, unsigned int mask) {
  unsigned int ballot = 0;
  for (int lane = 0; lane < 32; ++lane) {
    if ((mask >> lane & 1u) && *(const int*)lanes[lane]->in != 0) ballot |= 1u << lane;
  }
  for (int lane = 0; lane < 32; ++lane) {
    if (mask >> lane & 1u) *(tt_cpu_vote*)lanes[lane]->out = tt_cpu_vote{ballot, mask};
  }
}
inline tt_cpu_vote tt_cpu_vote_of(const char* what, unsigned int mask, int predicate,
                                  unsigned int line) {
  tt_cpu_vote vote;
  tt_cpu_warp_call call = {what, line, mask, &predicate, &vote, &tt_cpu_vote_combine};
  tt_cpu_warp_collective(&call);
  return vote;
}
inline unsigned int __ballot_sync(unsigned int mask, int predicate,
                                  unsigned int line = __builtin_LINE()) {
  return tt_cpu_vote_of("__ballot_sync", mask, predicate, line).ballot;
}
inline int __any_sync(unsigned int mask, int predicate, unsigned int line = __builtin_LINE()) {
  return tt_cpu_vote_of("__any_sync", mask, predicate, line).ballot != 0;
}
inline int __all_sync(unsigned int mask, int predicate, unsigned int line = __builtin_LINE()) {
  const tt_cpu_vote vote = tt_cpu_vote_of("__all_sync", mask, predicate, line);
  return vote.ballot == vote.mask;
}

// Shuffles, as shfl.sync's semantics in the PTX ISA: the source lane j of lane l, within l's
// segment of `width` lanes, is (idx) the segment's lane b % width, (up) l - b, (down) l + b,
// (xor) l ^ b, with b's low 5 bits; where j falls outside the segment (below it for up, above it
// for the others), l gets its own value. A source lane that does not take part gives 0xff bytes,
// like shared memory never written (the GPU gives an undefined value).
enum tt_cpu_shuffle_mode { tt_cpu_shuffle_idx, tt_cpu_shuffle_up, tt_cpu_shuffle_down,
                           tt_cpu_shuffle_xor };
struct tt_cpu_shuffle_in {
  unsigned long long value;
  int b, width;
};
template <int Mode>
inline void tt_cpu_shuffle_combine(tt_cpu_warp_call* const* lanes, unsigned int mask) {
  for (int lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    const tt_cpu_shuffle_in& in = *(const tt_cpu_shuffle_in*)lanes[lane]->in;
    if (in.width < 1 || in.width > 32 || (in.width & (in.width - 1)) != 0) {
      tt_cpu_host_functions.trap("a warp shuffle's width is not a power of 2 from 1 to 32");
    }
    const int b = in.b & 31, first = lane & ~(in.width - 1), last = first + in.width - 1;
    int source = lane;
    if (Mode == tt_cpu_shuffle_idx) source = first | (b & (in.width - 1));
    if (Mode == tt_cpu_shuffle_up) source = lane - b >= first ? lane - b : lane;
    if (Mode == tt_cpu_shuffle_down) source = lane + b <= last ? lane + b : lane;
    if (Mode == tt_cpu_shuffle_xor) source = (lane ^ b) <= last ? lane ^ b : lane;
    *(unsigned long long*)lanes[lane]->out =
        mask >> source & 1u ? ((const tt_cpu_shuffle_in*)lanes[source]->in)->value : ~0ull;
  }
}
template <int Mode, class T>
inline T tt_cpu_shuffle(const char* what, unsigned int mask, T var, int b, int width,
                        unsigned int line) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffle moves 8 bytes at most");
  tt_cpu_shuffle_in in = {0, b, width};
  memcpy(&in.value, &var, sizeof(T));
  unsigned long long out;
  tt_cpu_warp_call call = {what, line, mask, &in, &out, &tt_cpu_shuffle_combine<Mode>};
  tt_cpu_warp_collective(&call);
  T result;
  memcpy(&result, &out, sizeof(T));
  return result;
}
#define TT_CPU_SHUFFLES(T)                                                                        \
  inline T __shfl_sync(unsigned int mask, T var, int src_lane, int width = warpSize,             \
                       unsigned int line = __builtin_LINE()) {                                    \
    return tt_cpu_shuffle<tt_cpu_shuffle_idx>("__shfl_sync", mask, var, src_lane, width, line);   \
  }                                                                                               \
  inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize,    \
                          unsigned int line = __builtin_LINE()) {                                 \
    return tt_cpu_shuffle<tt_cpu_shuffle_up>("__shfl_up_sync", mask, var, (int)delta, width,     \
                                             line);                                               \
  }                                                                                               \
  inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize,  \
                            unsigned int line = __builtin_LINE()) {                               \
    return tt_cpu_shuffle<tt_cpu_shuffle_down>("__shfl_down_sync", mask, var, (int)delta, width, \
                                               line);                                             \
  }                                                                                               \
  inline T __shfl_xor_sync(unsigned int mask, T var, int lane_mask, int width = warpSize,        \
                           unsigned int line = __builtin_LINE()) {                                \
    return tt_cpu_shuffle<tt_cpu_shuffle_xor>("__shfl_xor_sync", mask, var, lane_mask, width,    \
                                              line);                                              \
  }
TT_CPU_SHUFFLES(int)
TT_CPU_SHUFFLES(unsigned int)
TT_CPU_SHUFFLES(long)
TT_CPU_SHUFFLES(unsigned long)
TT_CPU_SHUFFLES(long long)
TT_CPU_SHUFFLES(unsigned long long)
TT_CPU_SHUFFLES(float)
TT_CPU_SHUFFLES(double)
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

[[noreturn]] inline void __trap() {
  tt_cpu_host_functions.trap("__trap()");
  __builtin_unreachable();
}
[[noreturn]] inline void __brkpt() {
  tt_cpu_host_functions.trap("__brkpt()");
  __builtin_unreachable();
}

// ---- atomics (blocks run on several OS threads at once) ----------------------------------------

template <class T, class Update>
inline T tt_cpu_atomic_update(T* address, Update update) {
  T old;
  __atomic_load(address, &old, __ATOMIC_RELAXED);
  T desired = update(old);
  while (!__atomic_compare_exchange(address, &old, &desired, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
    desired = update(old);
  }
  return old;
}

#define TT_CPU_INTEGER_ATOMICS(T)                                                             \
  inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }       \
  inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }       \
  inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }     \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }       \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }         \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }       \
  inline T atomicMin(T* p, T v) {                                                            \
    return tt_cpu_atomic_update(p, [v](T old) { return old < v ? old : v; });                \
  }                                                                                          \
  inline T atomicMax(T* p, T v) {                                                            \
    return tt_cpu_atomic_update(p, [v](T old) { return old > v ? old : v; });                \
  }                                                                                          \
  inline T atomicCAS(T* p, T compare, T v) {                                                 \
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);  \
    return compare;                                                                          \
  }

TT_CPU_INTEGER_ATOMICS(int)
TT_CPU_INTEGER_ATOMICS(unsigned int)
TT_CPU_INTEGER_ATOMICS(unsigned long long)

inline float atomicAdd(float* p, float v) {
  return tt_cpu_atomic_update(p, [v](float old) { return old + v; });
}
inline double atomicAdd(double* p, double v) {
  return tt_cpu_atomic_update(p, [v](double old) { return old + v; });
}
inline float atomicExch(float* p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}

// ---- arithmetic -----------------------------------------------------------------------------

#define TT_CPU_MIN_MAX(T)                                 \
  inline T min(T a, T b) { return b < a ? b : a; }        \
  inline T max(T a, T b) { return a < b ? b : a; }
TT_CPU_MIN_MAX(int)
TT_CPU_MIN_MAX(unsigned int)
TT_CPU_MIN_MAX(long)
TT_CPU_MIN_MAX(unsigned long)
TT_CPU_MIN_MAX(long long)
TT_CPU_MIN_MAX(unsigned long long)
// Mixed signedness compares as unsigned, as CUDA's overloads do.
inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

template <class T>
inline T __ldg(const T* p) { return *p; }

inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __expf(float a) { return expf(a); }
inline float __logf(float a) { return logf(a); }
inline float __sinf(float a) { return sinf(a); }
inline float __cosf(float a) { return cosf(a); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __saturatef(float a) { return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a); }
inline int __float2int_rn(float a) { return (int)nearbyintf(a); }
inline int __float2int_rz(float a) { return (int)a; }
inline float __int2float_rn(int a) { return (float)a; }
inline int __float_as_int(float a) { int r; memcpy(&r, &a, sizeof r); return r; }
inline unsigned int __float_as_uint(float a) { unsigned int r; memcpy(&r, &a, sizeof r); return r; }
inline float __int_as_float(int a) { float r; memcpy(&r, &a, sizeof r); return r; }
inline float __uint_as_float(unsigned int a) { float r; memcpy(&r, &a, sizeof r); return r; }
inline int __popc(unsigned int a) { return __builtin_popcount(a); }
inline int __popcll(unsigned long long a) { return __builtin_popcountll(a); }
inline int __clz(int a) { return a == 0 ? 32 : __builtin_clz((unsigned int)a); }
inline int __ffs(int a) { return __builtin_ffs(a); }
inline unsigned int __brev(unsigned int a) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline unsigned int __umul24(unsigned int a, unsigned int b) { return a * b; }


// ---- uninstrumented emulation ------------------------------------------------------------------

// The arithmetic of tiletune's tensor-core emulation (<tiletune/tensor_core.h>, which defines it),
// declared here so that a sanitized build does not instrument it: it reads and writes only its
// argument and its locals, and instrumented it took most of a sanitized tensor-core case. The
// operands' loads from shared memory, in its callers, stay checked.
__attribute__((no_sanitize("address", "undefined"))) inline float tt_cpu_fused_dot8(
    const double (&products)[8], float c);

#endif  // TT_CPU_BACKEND_HOST

#include "tuner/backend/cpu/block_scheduler.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <utility>

#include <boost/context/fiber.hpp>
#include <fmt/format.h>

#include "tuner/backend/backend_errors.h"
#include "tuner/backend/cpu/sanitizer_runtime.h"
#include "tuner/core/splitmix64.h"

namespace tiletune {
namespace context = boost::context;

// One thread's asynchronous operations (cp.async copies, wgmma) in commit groups: issued into the
// open group, retired oldest first by a wait that leaves the newest `pending` committed groups.
template <class Operation>
class AsyncGroups {
 public:
  Operation& issue(const Operation& operation) {
    queue_.emplace_back(operation, commits_);
    return queue_.back().first;
  }
  void commit() { ++commits_; }
  // The oldest operation such a wait retires, removed from the queue (valid until the next call);
  // null when there is none.
  const Operation* retire(unsigned int pending) {
    if (queue_.empty() || queue_.front().second + pending >= commits_) return nullptr;
    retired_ = queue_.front().first;
    queue_.pop_front();
    return &retired_;
  }
  void clear() {
    queue_.clear();
    commits_ = 0;
  }

 private:
  std::deque<std::pair<Operation, std::uint64_t>> queue_;  // each with the commits before it
  std::uint64_t commits_ = 0;
  Operation retired_{};
};

struct CudaThreadFiber {
  // waiting: at a barrier; at_collective: at a warp collective; at_activemask: at __activemask();
  // at_named_barrier: at a tt_bar_sync; at_mbarrier: at a tt_mbarrier_wait.
  enum class State {
    ready, waiting, at_collective, at_activemask, at_named_barrier, at_mbarrier, returned, trapped
  };

  tt_cpu_thread thread{};
  std::uint32_t index = 0;   // the linear thread index; its warp is index / 32, its lane index % 32
  context::fiber suspended;  // held by the scheduler while the fiber does not run
  context::fiber scheduler;  // held by the fiber while it runs: where __syncthreads() goes back to
  State state = State::returned;
  unsigned int line = 0;                   // of the barrier or __activemask() it waits at
  unsigned int named_barrier = 0;          // the number of the named barrier it waits at
  const void* mbarrier = nullptr;          // the mbarrier it waits at, for the phase of `parity`
  unsigned int parity = 0;
  tt_cpu_warp_call* collective = nullptr;  // the collective it waits at
  unsigned int activemask = 0;             // what its __activemask() returns
  std::string trap;
  bool trap_names_thread = false;  // the message says where, so the thread is not appended
  AsyncGroups<tt_cpu_async_copy> copies;  // not yet retired
  AsyncGroups<tt_cpu_async_mma> mmas;
};

// The lanes of one warp: those the block has, those waiting at a collective, those that exited.
struct BlockRunner::Warp {
  std::uint32_t lanes = 0, at_collective = 0, returned = 0;
};

// A named barrier between completions: the count it was given, and who has arrived.
struct BlockRunner::NamedBarrier {
  unsigned int threads = 0, arrived = 0;
  unsigned int line = 0;                   // of its first arrival
  std::vector<std::uint32_t> warp_lanes;   // the lanes of each warp that have arrived
};

// An mbarrier of the running block: the arrivals a phase expects and those still missing, the
// tensor-copy bytes it still expects (negative while copies landed before their expect_tx), the
// running phase's parity, and the copies queued until a wait lands them.
struct BlockRunner::Mbarrier {
  struct Copy {
    void* dst;
    std::vector<unsigned char> data;
  };
  const void* address = nullptr;
  unsigned int count = 0, missing = 0, parity = 0;
  long long tx = 0;
  unsigned int line = 0;  // of its initialisation
  std::vector<Copy> queued;
};

namespace {
constexpr unsigned int kNamedBarriers = 16;
constexpr unsigned int kMbarrierMaxCount = (1u << 20) - 1;  // PTX: mbarrier.init's count
}  // namespace

namespace {

// Thrown by __trap() and the warp built-ins through the kernel's frames, caught at the fiber's
// entry.
struct KernelTrap {
  std::string what;
  bool names_thread = false;
};

// The fiber being resumed on this OS thread, and the runner of its block.
thread_local CudaThreadFiber* running_fiber = nullptr;
thread_local BlockRunner* running_runner = nullptr;

std::atomic<std::uint64_t> fiber_resumes{0};

void syncthreads(unsigned int line) {
  CudaThreadFiber* self = running_fiber;
  self->state = CudaThreadFiber::State::waiting;
  self->line = line;
  self->scheduler = std::move(self->scheduler).resume();
}

[[noreturn]] void trap(const char* what) { throw KernelTrap{what}; }

// "lane 3", "lanes 0-15, 17".
std::string lanes_text(std::uint32_t lanes) {
  std::string ranges;
  int count = 0;
  for (int lane = 0; lane < 32; ++lane) {
    if (!(lanes >> lane & 1u)) continue;
    int last = lane;
    while (last + 1 < 32 && (lanes >> (last + 1) & 1u)) ++last;
    ranges += (ranges.empty() ? "" : ", ") +
              (last == lane ? std::to_string(lane) : fmt::format("{}-{}", lane, last));
    count += last - lane + 1;
    lane = last;
  }
  return (count == 1 ? "lane " : "lanes ") + ranges;
}

bool same_collective(const tt_cpu_warp_call& a, const tt_cpu_warp_call& b) {
  return a.line == b.line && a.combine == b.combine && a.mask == b.mask &&
         std::strcmp(a.what, b.what) == 0;
}

// Hands Boost.Context a stack that already exists: the fibers of every block reuse the same ones.
struct BorrowedStack {
  context::stack_context stack;
  context::stack_context allocate() const { return stack; }
  void deallocate(context::stack_context&) const noexcept {}
};

// The order in which a phase resumes the block's fibers: a function of seed, block and phase.
void choose_order(std::vector<std::uint32_t>& order, std::uint32_t count, std::uint64_t seed,
                  std::uint64_t block, std::uint64_t phase) {
  order.resize(count);
  std::iota(order.begin(), order.end(), 0u);
  std::uint64_t state = seed;
  state = splitmix64_next(state) ^ block;
  state = splitmix64_next(state) ^ phase;
  switch (splitmix64_next(state) % 4) {
    case 0:
      break;
    case 1:
      std::reverse(order.begin(), order.end());
      break;
    default:
      for (std::uint32_t i = count; i > 1; --i) {
        std::swap(order[i - 1], order[splitmix64_next(state) % i]);
      }
  }
}

// A number for block `block` drawn from schedule seed `seed`; `salt` keeps each choice's draws
// apart from the others'.
std::uint64_t block_draw(std::uint64_t seed, std::uint64_t salt, std::uint64_t block) {
  std::uint64_t state = seed ^ salt;
  state = splitmix64_next(state) ^ block;
  return splitmix64_next(state);
}

}  // namespace

bool runs_warp_by_warp(std::uint64_t seed, std::uint64_t block) {
  return block_draw(seed, 0x7761727062797770ull, block) % 2 == 1;
}

CopyLanding copy_landing(std::uint64_t seed, std::uint64_t block) {
  switch (block_draw(seed, 0x636f70796c616e64ull, block) % 4) {
    case 0:
      return CopyLanding::at_copy;
    case 1:
      return CopyLanding::mixed;
    default:
      return CopyLanding::at_wait;
  }
}

BlockOrder block_order(std::uint64_t seed, std::uint64_t count) {
  if (count < 2) return {};
  std::uint64_t state = seed ^ 0x626c6f636b6f7264ull;
  switch (splitmix64_next(state) % 3) {
    case 0:
      return {count, 1, 0};
    case 1:
      return {count, count - 1, count - 1};  // (n - 1) i + n - 1 = n - 1 - i (mod n)
    default: {
      std::uint64_t stride = 1 + splitmix64_next(state) % (count - 1);
      while (std::gcd(stride, count) != 1) stride = stride + 1 == count ? 1 : stride + 1;
      return {count, stride, splitmix64_next(state) % count};
    }
  }
}

namespace {

// Fills the kernel object's thread-local block on this OS thread (its __shared__ arrays) with 0xff.
void poison_shared_memory(const KernelModule& kernel) {
  if (kernel.thread_local_bytes == 0) return;
  // Looking up the object's thread-local symbol allocates the block on this thread and registers
  // it where dlinfo finds it. An access alone may not: a sanitized build's TLS descriptors can
  // place the block in static TLS, which glibc registers on a thread's first __tls_get_addr.
  void* block = nullptr;
  if (dlsym(kernel.handle, "tt_cpu_current") == nullptr ||
      dlinfo(kernel.handle, RTLD_DI_TLS_DATA, &block) != 0 || block == nullptr) {
    throw LaunchError("cannot find the kernel's shared memory on this thread");
  }
  std::memset(block, 0xff, kernel.thread_local_bytes);
}

// The life of one CUDA thread on its fiber: the kernel, then back to the scheduler for good.
context::fiber run_thread(CudaThreadFiber& fiber, const BlockLaunch& launch,
                          context::fiber&& scheduler) {
  using State = CudaThreadFiber::State;
  fiber.scheduler = std::move(scheduler);
  try {
    const GemmArguments& g = launch.arguments;
    const auto& maps = g.tensor_maps;
    // The entry's type has as many tensor maps as its template declares (cpu_kernel.cpp checked).
    const auto entry = reinterpret_cast<void (*)()>(launch.kernel->entry);
    using F = const float*;
    using Maps0 = void (*)(F, F, float*, int, int, int, int, int, int);
    using Maps1 = void (*)(F, F, float*, int, int, int, int, int, int, tt_tensor_map);
    using Maps2 = void (*)(F, F, float*, int, int, int, int, int, int, tt_tensor_map, tt_tensor_map);
    using Args0 = void (*)(F, F, float*, int, int, int, int, int, int, ContractArgs);
    using Args1 = void (*)(F, F, float*, int, int, int, int, int, int, tt_tensor_map, ContractArgs);
    using Args2 = void (*)(F, F, float*, int, int, int, int, int, int, tt_tensor_map, tt_tensor_map,
                           ContractArgs);
    const auto run = [&](auto typed, auto... extra) {
      reinterpret_cast<decltype(typed)>(entry)(g.a, g.b, g.c, g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
                                               extra...);
    };
    // A tt_gemm_args goes by value as ContractArgs, its layout (entry_contract.h).
    if (!g.takes_contract_args) {
      switch (g.tensor_map_count) {
        case 0: run(Maps0{}); break;
        case 1: run(Maps1{}, maps[0]); break;
        default: run(Maps2{}, maps[0], maps[1]);
      }
    } else {
      switch (g.tensor_map_count) {
        case 0: run(Args0{}, g.contract_args); break;
        case 1: run(Args1{}, maps[0], g.contract_args); break;
        default: run(Args2{}, maps[0], maps[1], g.contract_args);
      }
    }
    fiber.state = State::returned;
  } catch (const KernelTrap& trap) {
    fiber.state = State::trapped;
    fiber.trap = trap.what;
    fiber.trap_names_thread = trap.names_thread;
  }
  return std::move(fiber.scheduler);
}

std::string coordinates(const tt_cpu_dim3& d) { return fmt::format("({}, {}, {})", d.x, d.y, d.z); }

}  // namespace

const tt_cpu_host& cpu_host_functions() {
  static const tt_cpu_host host{&syncthreads,
                                &trap,
                                &BlockRunner::warp_collective,
                                &BlockRunner::activemask,
                                &BlockRunner::async_copy_issue,
                                &BlockRunner::async_copy_commit,
                                &BlockRunner::async_copy_retire,
                                &BlockRunner::async_mma_issue,
                                &BlockRunner::async_mma_commit,
                                &BlockRunner::async_mma_retire,
                                &BlockRunner::named_barrier,
                                &BlockRunner::mbarrier_init,
                                &BlockRunner::mbarrier_arrive,
                                &BlockRunner::tensor_copy,
                                &BlockRunner::mbarrier_wait};
  return host;
}

std::uint64_t fiber_resume_count() { return fiber_resumes.load(std::memory_order_relaxed); }

std::string running_cuda_thread() {
  const CudaThreadFiber* fiber = running_fiber;
  if (fiber == nullptr) return {};
  return fmt::format("block {}, thread {}", coordinates(fiber->thread.block_idx),
                     coordinates(fiber->thread.thread_idx));
}

// A fiber stack above a guard page, so that an overflow faults instead of corrupting a neighbour.
class BlockRunner::Stack {
 public:
  Stack() : mapped_(kStackBytes + std::size_t(sysconf(_SC_PAGESIZE))) {
    base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                 -1, 0);
    if (base_ == MAP_FAILED || mprotect(base_, mapped_ - kStackBytes, PROT_NONE) != 0) {
      const int error = errno;
      if (base_ != MAP_FAILED) munmap(base_, mapped_);
      base_ = nullptr;
      throw LaunchError(
          fmt::format("cannot map a fiber stack: {} (each stack takes two of the "
                      "process's memory mappings, see vm.max_map_count)",
                      std::strerror(error)));
    }
  }
  ~Stack() {
    if (base_ != nullptr) munmap(base_, mapped_);
  }
  Stack(Stack&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), mapped_(other.mapped_) {}
  Stack& operator=(Stack&&) = delete;

  context::stack_context top() const {
    context::stack_context stack;
    stack.size = kStackBytes;
    stack.sp = static_cast<char*>(base_) + mapped_;
    return stack;
  }

  // With AddressSanitizer in the process: the redzones of frames that an exception unwound stay
  // poisoned (the sanitizer does not know where a fiber's stack lies), and would be reported
  // against whatever frames the next kernel lays there.
  void forget_poison() const {
    using Unpoison = void (*)(const volatile void*, std::size_t);
    static const auto unpoison =
        reinterpret_cast<Unpoison>(dlsym(RTLD_DEFAULT, "__asan_unpoison_memory_region"));
    if (unpoison != nullptr)
      unpoison(static_cast<char*>(base_) + mapped_ - kStackBytes, kStackBytes);
  }

 private:
  void* base_;
  std::size_t mapped_;
};

BlockRunner::BlockRunner() = default;
BlockRunner::~BlockRunner() = default;

void BlockRunner::run(const BlockLaunch& launch, std::uint64_t linear) {
  using State = CudaThreadFiber::State;
  const auto [gx, gy, gz] = launch.grid;
  const auto [bx, by, bz] = launch.block;
  const tt_cpu_dim3 block_idx{std::uint32_t(linear % gx), std::uint32_t(linear / gx % gy),
                              std::uint32_t(linear / gx / gy)};
  const std::uint32_t count = bx * by * bz;
  while (stacks_.size() < count) stacks_.emplace_back();
  if (fibers_.size() < count) fibers_.resize(count);
  warps_.assign((count + 31) / 32, Warp{});
  for (std::uint32_t w = 0; w < warps_.size(); ++w) {
    const std::uint32_t lanes = std::min<std::uint32_t>(32, count - 32 * w);
    warps_[w].lanes = lanes == 32 ? ~0u : (1u << lanes) - 1;
  }
  ready_ = count;
  threads_ = count;
  landing_ = copy_landing(launch.schedule_seed, linear);
  landing_coins_ = launch.schedule_seed ^ linear;
  named_barriers_.assign(kNamedBarriers, NamedBarrier{});
  mbarriers_.clear();  // the last block's copies never waited for are dropped
  running_runner = this;

  poison_shared_memory(*launch.kernel);
  for (std::uint32_t i = 0; i < count; ++i) {
    CudaThreadFiber& fiber = fibers_[i];
    fiber.thread = {{i % bx, i / bx % by, i / bx / by}, block_idx, {bx, by, bz}, {gx, gy, gz}};
    fiber.index = i;
    fiber.state = State::ready;
    fiber.collective = nullptr;
    fiber.copies.clear();  // the last block's operations never waited for are dropped
    fiber.mmas.clear();
    fiber.suspended = context::fiber(std::allocator_arg, BorrowedStack{stacks_[i].top()},
                                     [&fiber, &launch](context::fiber&& scheduler) {
                                       return run_thread(fiber, launch, std::move(scheduler));
                                     });
  }
  try {
    run_phases(launch, linear, count);
  } catch (...) {
    // Fibers still suspended at a barrier are unwound (Boost.Context throws through their frames)
    // before their stacks serve the next block.
    for (std::uint32_t i = 0; i < count; ++i) fibers_[i].suspended = context::fiber();
    for (std::uint32_t i = 0; i < count; ++i) stacks_[i].forget_poison();
    running_fiber = nullptr;
    running_runner = nullptr;
    throw;
  }
  running_fiber = nullptr;
  running_runner = nullptr;
}

void BlockRunner::run_phases(const BlockLaunch& launch, std::uint64_t linear, std::uint32_t count) {
  using State = CudaThreadFiber::State;
  // Added once per block, however it ends: one atomic add per resume would be the cost measured.
  struct ResumeTally {
    std::uint64_t resumes = 0;
    ~ResumeTally() { fiber_resumes.fetch_add(resumes, std::memory_order_relaxed); }
  } tally;
  // Resumes thread i if it can go on; true when it did.
  const auto resume = [&](std::uint32_t i) {
    CudaThreadFiber& fiber = fibers_[i];
    if (fiber.state != State::ready) return false;
    running_fiber = &fiber;
    launch.kernel->enter(&fiber.thread);
    fiber.suspended = std::move(fiber.suspended).resume();
    ++tally.resumes;
    --ready_;  // it runs until it waits, returns or traps
    if (fiber.state == State::trapped) {
      if (fiber.trap_names_thread) throw LaunchError(fiber.trap);
      throw LaunchError(fmt::format("{} in block {}, thread {}", fiber.trap,
                                    coordinates(fiber.thread.block_idx),
                                    coordinates(fiber.thread.thread_idx)));
    }
    if (fiber.state == State::returned) warps_[i / 32].returned |= 1u << (i % 32);
    // The launch ends at the first sanitizer report, on any worker, like a GPU kernel at a fault.
    if (sanitizer_report_count() != launch.sanitizer_reports_before) {
      throw LaunchError("the launch was stopped after a sanitizer report");
    }
    return true;
  };
  const bool warp_by_warp = runs_warp_by_warp(launch.schedule_seed, linear);
  std::vector<std::vector<std::uint32_t>> lanes_in_order(warp_by_warp ? warps_.size() : 0);
  for (std::uint64_t phase = 0;; ++phase) {
    choose_order(order_, count, launch.schedule_seed, linear, phase);
    if (!warp_by_warp) {
      for (const std::uint32_t i : order_) resume(i);
    } else {
      // Each warp in turn (in the order its first lane comes) runs until none of its lanes can go
      // on without another warp: as far ahead of the next warp as a GPU may let it run.
      for (auto& lanes : lanes_in_order) lanes.clear();
      for (const std::uint32_t i : order_) lanes_in_order[i / 32].push_back(i);
      for (const std::uint32_t first : order_) {
        std::vector<std::uint32_t>& lanes = lanes_in_order[first / 32];
        if (lanes.empty() || lanes.front() != first) continue;  // not the warp's first lane
        for (bool went_on = true; went_on;) {
          went_on = false;
          for (const std::uint32_t i : lanes) went_on = resume(i) || went_on;
        }
      }
    }
    // No thread can go on without another.
    if (ready_ > 0) continue;  // lanes released by a collective after their turn in the pass
    if (release_activemask_waiters(count)) continue;
    if (land_all_tensor_copies()) continue;
    check_warp_collectives(count);
    check_named_barriers(count);
    check_mbarriers(count);
    const CudaThreadFiber* first = nullptr;
    for (std::uint32_t i = 0; i < count; ++i) {
      CudaThreadFiber& fiber = fibers_[i];
      if (fiber.state != State::waiting) continue;
      if (first == nullptr) {
        first = &fiber;
      } else if (fiber.line != first->line) {
        throw LaunchError(fmt::format(
            "barrier divergence in block {}: thread {} waits at the __syncthreads() of line {}, "
            "thread {} at the one of line {}",
            coordinates(fiber.thread.block_idx), coordinates(first->thread.thread_idx),
            first->line, coordinates(fiber.thread.thread_idx), fiber.line));
      }
      fiber.state = State::ready;
      ++ready_;
    }
    if (first == nullptr) return;
  }
}

bool BlockRunner::release_activemask_waiters(std::uint32_t count) {
  using State = CudaThreadFiber::State;
  bool any = false;
  for (std::uint32_t i = 0; i < count; ++i) {
    CudaThreadFiber& fiber = fibers_[i];
    if (fiber.state != State::at_activemask) continue;
    any = true;
    fiber.activemask = 0;
    const std::uint32_t warp = i / 32 * 32;
    for (std::uint32_t lane = 0; lane < 32 && warp + lane < count; ++lane) {
      const CudaThreadFiber& other = fibers_[warp + lane];
      if (other.state == State::at_activemask && other.line == fiber.line) {
        fiber.activemask |= 1u << lane;
      }
    }
  }
  if (!any) return false;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (fibers_[i].state != State::at_activemask) continue;
    fibers_[i].state = State::ready;
    ++ready_;
  }
  return true;
}

void BlockRunner::check_warp_collectives(std::uint32_t count) const {
  using State = CudaThreadFiber::State;
  for (std::uint32_t i = 0; i < count; ++i) {
    const CudaThreadFiber& fiber = fibers_[i];
    if (fiber.state != State::at_collective) continue;
    const tt_cpu_warp_call& call = *fiber.collective;
    const std::uint32_t warp = i / 32;
    // Where each lane of the mask is, lanes at the same place together.
    std::map<std::string, std::uint32_t> places;
    std::string first_place;
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
      if (!(call.mask >> lane & 1u)) continue;
      const CudaThreadFiber& other = fibers_[32 * warp + lane];
      std::string place;
      if (other.state == State::at_collective) {
        place = fmt::format("at the {} of line {}", other.collective->what, other.collective->line);
        if (!same_collective(*other.collective, call)) {
          place += fmt::format(" (mask {:#010x})", other.collective->mask);
        }
      } else if (other.state == State::waiting) {
        place = fmt::format("at the __syncthreads() of line {}", other.line);
      } else if (other.state == State::at_named_barrier) {
        place = fmt::format("at the tt_bar_sync({}) of line {}", other.named_barrier, other.line);
      } else if (other.state == State::at_mbarrier) {
        place = fmt::format("at the tt_mbarrier_wait of line {}", other.line);
      } else {
        place = "exited";
      }
      places[place] |= 1u << lane;
    }
    const std::string here = fmt::format("at the {} of line {}", call.what, call.line);
    std::string text = fmt::format("{} wait {} (mask {:#010x})", lanes_text(places[here]), here,
                                   call.mask);
    places.erase(here);
    for (const auto& [place, lanes] : places) {
      text += fmt::format(", {} {}", lanes_text(lanes), place);
    }
    throw LaunchError(fmt::format("warp divergence in block {}, warp {}: {}",
                                  coordinates(fiber.thread.block_idx), warp, text));
  }
}

void BlockRunner::check_named_barriers(std::uint32_t count) const {
  using State = CudaThreadFiber::State;
  for (std::uint32_t i = 0; i < count; ++i) {
    const CudaThreadFiber& fiber = fibers_[i];
    if (fiber.state != State::at_named_barrier) continue;
    const NamedBarrier& barrier = named_barriers_[fiber.named_barrier];
    std::uint32_t at_barrier = 0, at_syncthreads = 0, exited = 0;
    for (std::uint32_t j = 0; j < count; ++j) {
      const State state = fibers_[j].state;
      at_barrier += state == State::at_named_barrier;
      at_syncthreads += state == State::waiting;
      exited += state == State::returned;
    }
    throw LaunchError(fmt::format(
        "named barrier {} never completes in block {}: thread {} waits at the tt_bar_sync of "
        "line {} for {} threads, {} arrived; of the block's {} threads, {} wait at named "
        "barriers, {} at a __syncthreads(), {} exited",
        fiber.named_barrier, coordinates(fiber.thread.block_idx),
        coordinates(fiber.thread.thread_idx), fiber.line, barrier.threads, barrier.arrived, count,
        at_barrier, at_syncthreads, exited));
  }
}

void BlockRunner::named_barrier(unsigned int id, unsigned int threads, int wait, unsigned int line) {
  using State = CudaThreadFiber::State;
  CudaThreadFiber* self = running_fiber;
  BlockRunner& runner = *running_runner;
  const std::uint32_t block_threads = runner.threads_;
  const auto fail = [&](const std::string& why) {
    throw KernelTrap{fmt::format("the {}({}, {}) of line {}: {}", wait ? "tt_bar_sync" : "tt_bar_arrive",
                                 id, threads, line, why)};
  };
  if (id == 0 || id >= kNamedBarriers) fail("named barriers are 1 to 15 (0 is __syncthreads()'s)");
  if (threads == 0 || threads % 32 != 0) fail("the thread count is not a positive multiple of 32");
  if (threads > block_threads) fail(fmt::format("the block has {} threads", block_threads));
  NamedBarrier& barrier = runner.named_barriers_[id];
  const std::uint32_t w = self->index / 32, lane_bit = 1u << (self->index % 32);
  if (barrier.arrived == 0) {
    barrier.threads = threads;
    barrier.line = line;
    barrier.warp_lanes.assign(runner.warps_.size(), 0);
  } else if (barrier.threads != threads) {
    fail(fmt::format("barrier {} is counting to {} since line {}", id, barrier.threads, barrier.line));
  } else if (barrier.warp_lanes[w] & lane_bit) {
    fail(fmt::format("this thread arrived at barrier {} before, and it has not completed since", id));
  }
  barrier.warp_lanes[w] |= lane_bit;
  if (++barrier.arrived == barrier.threads) {
    // bar.sync is .aligned: a warp arrives whole, every lane of it that has not exited.
    for (std::uint32_t v = 0; v < runner.warps_.size(); ++v) {
      const Warp& warp = runner.warps_[v];
      const std::uint32_t arrived = barrier.warp_lanes[v];
      if (arrived != 0 && (warp.lanes & ~arrived & ~warp.returned) != 0) {
        fail(fmt::format("barrier {} completed with {} of warp {} arrived, not the whole warp", id,
                         lanes_text(arrived), v));
      }
    }
    for (std::uint32_t i = 0; i < block_threads; ++i) {
      CudaThreadFiber& other = runner.fibers_[i];
      if (other.state != State::at_named_barrier || other.named_barrier != id) continue;
      other.state = State::ready;
      ++runner.ready_;
    }
    barrier = NamedBarrier{};
    return;
  }
  if (!wait) return;
  self->state = State::at_named_barrier;
  self->named_barrier = id;
  self->line = line;
  self->scheduler = std::move(self->scheduler).resume();
}

bool BlockRunner::copy_lands_now() {
  return landing_ == CopyLanding::at_copy ||
         (landing_ == CopyLanding::mixed && splitmix64_next(landing_coins_) % 2);
}

BlockRunner::Mbarrier& BlockRunner::mbarrier_at(const void* address, const char* what,
                                                unsigned int line) {
  for (Mbarrier& barrier : mbarriers_) {
    if (barrier.address == address) return barrier;
  }
  throw KernelTrap{fmt::format("the {} of line {}: no mbarrier was initialised there "
                               "(tt_mbarrier_init)",
                               what, line)};
}

void BlockRunner::complete_if_done(Mbarrier& barrier) {
  using State = CudaThreadFiber::State;
  if (barrier.missing != 0 || barrier.tx != 0) return;
  barrier.parity ^= 1u;
  barrier.missing = barrier.count;
  for (std::uint32_t i = 0; i < threads_; ++i) {
    CudaThreadFiber& fiber = fibers_[i];
    if (fiber.state != State::at_mbarrier || fiber.mbarrier != barrier.address) continue;
    fiber.state = State::ready;
    ++ready_;
  }
}

void BlockRunner::land_tensor_copies(Mbarrier& barrier) {
  for (Mbarrier::Copy& copy : barrier.queued) {
    std::memcpy(copy.dst, copy.data.data(), copy.data.size());
    barrier.tx -= static_cast<long long>(copy.data.size());
  }
  barrier.queued.clear();
  complete_if_done(barrier);
}

bool BlockRunner::land_all_tensor_copies() {
  const std::uint32_t ready_before = ready_;
  for (Mbarrier& barrier : mbarriers_) {
    if (!barrier.queued.empty()) land_tensor_copies(barrier);
  }
  return ready_ > ready_before;
}

void BlockRunner::check_mbarriers(std::uint32_t count) const {
  using State = CudaThreadFiber::State;
  for (std::uint32_t i = 0; i < count; ++i) {
    const CudaThreadFiber& fiber = fibers_[i];
    if (fiber.state != State::at_mbarrier) continue;
    for (const Mbarrier& barrier : mbarriers_) {
      if (barrier.address != fiber.mbarrier) continue;
      throw LaunchError(fmt::format(
          "the mbarrier initialised on line {} never completes its phase of parity {} in block "
          "{}: thread {} waits for it at line {}; of the {} arrivals a phase expects {} are "
          "missing, and {} bytes of tensor copies",
          barrier.line, fiber.parity, coordinates(fiber.thread.block_idx),
          coordinates(fiber.thread.thread_idx), fiber.line, barrier.count, barrier.missing,
          barrier.tx));
    }
  }
}

void BlockRunner::mbarrier_init(void* barrier, unsigned int count, unsigned int line) {
  BlockRunner& runner = *running_runner;
  if (reinterpret_cast<std::uintptr_t>(barrier) % 8 != 0) {
    throw KernelTrap{fmt::format("the tt_mbarrier_init of line {}: the mbarrier is not 8-byte "
                                 "aligned",
                                 line)};
  }
  if (count == 0 || count > kMbarrierMaxCount) {
    throw KernelTrap{fmt::format("the tt_mbarrier_init of line {}: a count of {} (1 to {})", line,
                                 count, kMbarrierMaxCount)};
  }
  Mbarrier fresh;
  fresh.address = barrier;
  fresh.count = fresh.missing = count;
  fresh.line = line;
  for (Mbarrier& existing : runner.mbarriers_) {
    if (existing.address == barrier) {
      existing = std::move(fresh);
      return;
    }
  }
  runner.mbarriers_.push_back(std::move(fresh));
}

void BlockRunner::mbarrier_arrive(void* barrier, unsigned int tx_bytes, unsigned int line) {
  BlockRunner& runner = *running_runner;
  Mbarrier& b = runner.mbarrier_at(barrier, "tt_mbarrier_arrive", line);
  if (b.missing == 0) {
    throw KernelTrap{fmt::format("the tt_mbarrier_arrive of line {}: more arrivals than the {} "
                                 "a phase of the mbarrier of line {} expects",
                                 line, b.count, b.line)};
  }
  b.tx += tx_bytes;
  --b.missing;
  runner.complete_if_done(b);
}

void BlockRunner::tensor_copy(void* barrier, void* dst, const void* data, unsigned int bytes,
                              unsigned int line) {
  BlockRunner& runner = *running_runner;
  Mbarrier& b = runner.mbarrier_at(barrier, "tt_tensor_copy_2d", line);
  const bool now = runner.copy_lands_now();
  const auto* bytes_in = static_cast<const unsigned char*>(data);
  if (!now) {
    b.queued.push_back({dst, std::vector<unsigned char>(bytes_in, bytes_in + bytes)});
    return;
  }
  std::memcpy(dst, data, bytes);
  b.tx -= bytes;
  runner.complete_if_done(b);
}

void BlockRunner::mbarrier_wait(void* barrier, unsigned int parity, unsigned int line) {
  CudaThreadFiber* self = running_fiber;
  BlockRunner& runner = *running_runner;
  for (;;) {
    Mbarrier& b = runner.mbarrier_at(barrier, "tt_mbarrier_wait", line);
    runner.land_tensor_copies(b);
    // The phase of `parity` has completed once the running phase's parity is the other one.
    if (b.parity != (parity & 1u)) return;
    self->state = CudaThreadFiber::State::at_mbarrier;
    self->mbarrier = barrier;
    self->parity = parity & 1u;
    self->line = line;
    self->scheduler = std::move(self->scheduler).resume();
  }
}

void BlockRunner::warp_collective(tt_cpu_warp_call* call) {
  using State = CudaThreadFiber::State;
  CudaThreadFiber* self = running_fiber;
  BlockRunner& runner = *running_runner;
  const std::uint32_t w = self->index / 32, lane = self->index % 32;
  Warp& warp = runner.warps_[w];
  const std::uint32_t mask = call->mask & warp.lanes;
  const auto where = [&] {
    return fmt::format("in block {}, warp {}", coordinates(self->thread.block_idx), w);
  };
  if (!(mask >> lane & 1u)) {
    throw KernelTrap{fmt::format("the {} of line {} {}: its mask {:#010x} leaves out the calling "
                                 "lane {}",
                                 call->what, call->line, where(), call->mask, lane),
                     true};
  }
  if ((mask & warp.returned) != 0) {
    throw KernelTrap{fmt::format("the {} of line {} {}: its mask {:#010x} names {}, which "
                                 "exited before it",
                                 call->what, call->line, where(), call->mask,
                                 lanes_text(mask & warp.returned)),
                     true};
  }
  call->mask = mask;
  self->collective = call;
  self->state = State::at_collective;
  warp.at_collective |= 1u << lane;
  if ((warp.at_collective & mask) == mask) {
    tt_cpu_warp_call* lanes[32] = {};
    bool complete = true;
    for (std::uint32_t l = 0; l < 32 && complete; ++l) {
      if (!(mask >> l & 1u)) continue;
      lanes[l] = runner.fibers_[32 * w + l].collective;
      complete = same_collective(*lanes[l], *call);
    }
    if (complete) {
      call->combine(lanes, mask);
      for (std::uint32_t l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        CudaThreadFiber& other = runner.fibers_[32 * w + l];
        other.state = State::ready;
        other.collective = nullptr;
      }
      warp.at_collective &= ~mask;
      runner.ready_ += std::popcount(mask) - 1;  // the caller was counted: it runs on
      return;
    }
  }
  self->scheduler = std::move(self->scheduler).resume();
}

unsigned int BlockRunner::activemask(unsigned int line) {
  CudaThreadFiber* self = running_fiber;
  self->state = CudaThreadFiber::State::at_activemask;
  self->line = line;
  self->scheduler = std::move(self->scheduler).resume();
  return self->activemask;
}

void* BlockRunner::async_copy_issue(void* dst, unsigned int size) {
  BlockRunner& runner = *running_runner;
  const bool now = runner.copy_lands_now();
  // Landing at once: the kernel writes the bytes straight into the destination, and no wait has
  // anything of this copy left to write.
  if (now) return dst;
  return running_fiber->copies.issue(tt_cpu_async_copy{dst, size, {}}).data;
}

void BlockRunner::async_copy_commit() { running_fiber->copies.commit(); }

const tt_cpu_async_copy* BlockRunner::async_copy_retire(unsigned int pending) {
  return running_fiber->copies.retire(pending);
}

void BlockRunner::async_mma_issue(const tt_cpu_async_mma* operation) {
  running_fiber->mmas.issue(*operation);
}

void BlockRunner::async_mma_commit() { running_fiber->mmas.commit(); }

const tt_cpu_async_mma* BlockRunner::async_mma_retire(unsigned int pending) {
  return running_fiber->mmas.retire(pending);
}

}  // namespace tiletune

#include "fuzz/cpu_backend/block_scheduler.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <utility>

#include <boost/context/fiber.hpp>
#include <fmt/format.h>

#include "fuzz/cpu_backend/sanitizer_runtime.h"
#include "fuzz/gemm_executor.h"

namespace tiletune {
namespace context = boost::context;

struct CudaThreadFiber {
  enum class State { ready, waiting, returned, trapped };

  tt_cpu_thread thread{};
  context::fiber suspended;  // held by the scheduler while the fiber does not run
  context::fiber scheduler;  // held by the fiber while it runs: where __syncthreads() goes back to
  State state = State::returned;
  unsigned int barrier_line = 0;
  const char* trap = nullptr;
};

namespace {

// Thrown by __trap() through the kernel's frames, caught at the fiber's entry.
struct KernelTrap {
  const char* what;
};

// The fiber being resumed on this OS thread.
thread_local CudaThreadFiber* running_fiber = nullptr;

void syncthreads(unsigned int line) {
  CudaThreadFiber* self = running_fiber;
  self->state = CudaThreadFiber::State::waiting;
  self->barrier_line = line;
  self->scheduler = std::move(self->scheduler).resume();
}

[[noreturn]] void trap(const char* what) { throw KernelTrap{what}; }

// Hands Boost.Context a stack that already exists: the fibers of every block reuse the same ones.
struct BorrowedStack {
  context::stack_context stack;
  context::stack_context allocate() const { return stack; }
  void deallocate(context::stack_context&) const noexcept {}
};

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The order in which a phase resumes the block's fibers: a function of seed, block and phase.
void choose_order(std::vector<std::uint32_t>& order, std::uint32_t count, std::uint64_t seed,
                  std::uint64_t block, std::uint64_t phase) {
  order.resize(count);
  std::iota(order.begin(), order.end(), 0u);
  std::uint64_t state = seed;
  state = splitmix64(state) ^ block;
  state = splitmix64(state) ^ phase;
  switch (splitmix64(state) % 4) {
    case 0:
      break;
    case 1:
      std::reverse(order.begin(), order.end());
      break;
    default:
      for (std::uint32_t i = count; i > 1; --i) {
        std::swap(order[i - 1], order[splitmix64(state) % i]);
      }
  }
}

// Fills the kernel object's thread-local block on this OS thread (its __shared__ arrays) with 0xff.
void poison_shared_memory(const KernelModule& kernel) {
  if (kernel.thread_local_bytes == 0) return;
  kernel.enter(nullptr);  // touching a thread-local variable allocates the block on this thread
  void* block = nullptr;
  if (dlinfo(kernel.handle, RTLD_DI_TLS_DATA, &block) != 0 || block == nullptr) {
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
    launch.kernel->entry(g.a, g.b, g.c, g.m, g.n, g.k, g.lda, g.ldb, g.ldc);
    fiber.state = State::returned;
  } catch (const KernelTrap& trap) {
    fiber.state = State::trapped;
    fiber.trap = trap.what;
  }
  return std::move(fiber.scheduler);
}

std::string coordinates(const tt_cpu_dim3& d) { return fmt::format("({}, {}, {})", d.x, d.y, d.z); }

}  // namespace

const tt_cpu_host& cpu_host_functions() {
  static const tt_cpu_host host{&syncthreads, &trap};
  return host;
}

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

  poison_shared_memory(*launch.kernel);
  for (std::uint32_t i = 0; i < count; ++i) {
    CudaThreadFiber& fiber = fibers_[i];
    fiber.thread = {{i % bx, i / bx % by, i / bx / by}, block_idx, {bx, by, bz}, {gx, gy, gz}};
    fiber.state = State::ready;
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
    throw;
  }
  running_fiber = nullptr;
}

void BlockRunner::run_phases(const BlockLaunch& launch, std::uint64_t linear, std::uint32_t count) {
  using State = CudaThreadFiber::State;
  for (std::uint64_t phase = 0;; ++phase) {
    choose_order(order_, count, launch.schedule_seed, linear, phase);
    for (const std::uint32_t i : order_) {
      CudaThreadFiber& fiber = fibers_[i];
      if (fiber.state != State::ready) continue;
      running_fiber = &fiber;
      launch.kernel->enter(&fiber.thread);
      fiber.suspended = std::move(fiber.suspended).resume();
      if (fiber.state == State::trapped) {
        throw LaunchError(fmt::format("{} in block {}, thread {}", fiber.trap,
                                      coordinates(fiber.thread.block_idx),
                                      coordinates(fiber.thread.thread_idx)));
      }
      // The launch ends at the first sanitizer report, on any worker, like a GPU kernel at a fault.
      if (sanitizer_report_count() != launch.sanitizer_reports_before) {
        throw LaunchError("the launch was stopped after a sanitizer report");
      }
    }
    const CudaThreadFiber* first = nullptr;
    for (std::uint32_t i = 0; i < count; ++i) {
      CudaThreadFiber& fiber = fibers_[i];
      if (fiber.state != State::waiting) continue;
      if (first == nullptr) {
        first = &fiber;
      } else if (fiber.barrier_line != first->barrier_line) {
        throw LaunchError(fmt::format(
            "barrier divergence in block {}: thread {} waits at the __syncthreads() of line {}, "
            "thread {} at the one of line {}",
            coordinates(fiber.thread.block_idx), coordinates(first->thread.thread_idx),
            first->barrier_line, coordinates(fiber.thread.thread_idx), fiber.barrier_line));
      }
      fiber.state = State::ready;
    }
    if (first == nullptr) return;
  }
}

}  // namespace tiletune

// tiletune's runtime library: the fastest correct configuration that `tiletune tune` recorded,
// called from an application.
//
//   auto lib  = tiletune::Library::open("tiletune.db");   // a database, or an exported bundle
//   auto gemm = lib.gemm("warp_tiled");                   // a template by name, its current version
//   tiletune::Problem p{M, N, K, lda, ldb, ldc};          // row-major C[MxN] = A[MxK] * B[KxN]
//   tiletune::Plan plan = gemm.plan(p);                   // what will run, and why
//   gemm.run(p, A, B, C, stream);                         // device pointers; stream may be null
//
// C++17, and no CUDA header: a stream is passed as the CUstream (or cudaStream_t) it is. Every
// failure is a tiletune::Error whose message is one line that carries its cause. Library and Gemm
// are cheap handles to shared state; they may be copied and used from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tiletune/gemm_contract.h"
#include "tiletune/precision.h"

#if defined(_WIN32)
#define TILETUNE_API
#else
#define TILETUNE_API __attribute__((visibility("default")))
#endif

namespace tiletune {

// Where a Gemm runs. The CPU backend runs the very same kernel source, compiled by the host's C++
// compiler, on host pointers, so that an application's CI can test its tuned GEMMs without a GPU.
enum class Backend { gpu, cpu };

struct Options {
  Backend backend = Backend::gpu;
  // Select as if this GPU were here ("NVIDIA H100 80GB HBM3"): for a fleet of near-identical boards
  // tuned on one, and for the CPU backend. Empty: the GPU of the current CUDA context (on the CPU
  // backend, the GPU with the most records of the template).
  std::string gpu_name;
  // A tiletune database (created when missing) where every problem without an exact record is
  // kept; `tiletune tune --missed --db PATH` tunes exactly those. Empty: nothing is recorded.
  std::string record_misses;
  // Per template name, the configuration to run when no record fits a problem
  // ("TILE=16,PAD=1,SWIZZLE=0"). Without one, such a problem is a NoConfiguration error.
  std::map<std::string, std::string> defaults;
  // The cache of compiled kernels on disk. Empty: the user's ($TILETUNE_CACHE_DIR, else
  // $XDG_CACHE_HOME/tiletune, else ~/.cache/tiletune).
  std::string cache_dir;
  // The least accurate arithmetic accepted (fp32 > tf32x3 > tf32): gemm() of a template that
  // declares a lower precision fails. The default serves FP32 templates only.
  Precision lowest_precision = Precision::fp32;
  // The first-call trial: at a problem with no record of its own shape on this GPU, where the
  // performance model chooses, `trial_candidates` of its fastest predictions (half of them the
  // fastest, the rest the fastest of launches not yet among them) are each timed once
  // (inside the first plan of the problem, on scratch operands and a stream of the library's own,
  // never the caller's) and the fastest measured serves the problem from then on. With
  // record_misses, the times are kept there: a later process serves the trial's winner without
  // timing again, and `tiletune tune --missed` shows it. 0 or 1: no trial.
  int trial_candidates = 0;
};

// One GEMM, row-major and in FP32: C[M x N] = act(alpha * op(A) * op(B) + beta * C + bias), each
// matrix a strided view with its leading dimension. op(A) is M x K: A stored M x K (lda >= K) or,
// op_a = t, stored K x M (lda >= M); op(B) is K x N: B stored K x N (ldb >= N) or, op_b = t, stored
// N x K (ldb >= K); ldc >= N. beta = 0 never reads C. A batch runs entry i on A + i * stride_a,
// B + i * stride_b, C + i * stride_c (A's and B's strides may be 0; C's entries may not overlap).
// The epilogue's bias is N floats added to every row (Gemm::run's `bias`). The defaults are the
// plain C = A * B: Problem{M, N, K, lda, ldb, ldc} means what it always has.
struct TILETUNE_API Problem {
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  Op op_a = Op::n, op_b = Op::n;
  float alpha = 1, beta = 0;
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  Epilogue epilogue = Epilogue::none;

  static Problem packed(std::int64_t M, std::int64_t N, std::int64_t K) {
    return Problem{M, N, K, K, N, N};
  }
  // "MxNxK lda=.. ldb=.. ldc=..", then what differs from the plain problem (" op=tn alpha=2 ...").
  std::string to_string() const;
};

// Whose record chose the configuration, in the order they are tried.
enum class GpuMatch {
  this_gpu,                 // the GPU the kernel runs on (or Options::gpu_name)
  same_compute_capability,  // another GPU of the same compute capability
  same_architecture,        // another GPU of the same major compute capability
  none,                     // no record fits: Options::defaults
};
TILETUNE_API const char* to_string(GpuMatch match);  // "this GPU", ...

// What gemm.run will do for a problem, and why.
struct TILETUNE_API Plan {
  std::string template_name;
  std::string template_hash;  // the template version (16 hex digits of its source)
  Precision precision = Precision::fp32;  // the arithmetic the template declares
  std::string config;         // "BM=64,BN=128,BK=16,TM=8,TN=8,STAGES=2"
  std::string gpu;            // the GPU whose record it is ("" for a default)
  GpuMatch gpu_match = GpuMatch::none;
  std::int64_t recorded_M = 0, recorded_N = 0, recorded_K = 0;  // the shape it was recorded at
  bool exact = false;         // recorded at this very shape on this very GPU
  double expected_ms = 0;     // the recorded median; at a shape not recorded, the performance
                              // model's prediction (else the median scaled by flops); 0: unknown.
                              // Of C = A * B at the shape: one entry of a batch, before epilogue
  int fuzz_cases = 0;         // random cases it passed when tuned (0: unknown)
  int trial_candidates = 0;   // configurations a first-call trial timed for it (this process or
                              // an earlier one); expected_ms is then the trial's time
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;
  bool zero_output = false;   // C is cleared before the kernel runs
  Backend backend = Backend::gpu;
  std::string why;            // one line: how the selection went

  std::string to_string() const;  // a few lines, for people
};

// Every failure of the library. The message is one line that names its cause.
class TILETUNE_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The problem cannot be run as given: a size < 1, a leading dimension too small, a null pointer, a
// bias missing for (or given without) a bias epilogue, a BLAS argument out of range.
class TILETUNE_API InvalidProblem : public Error {
 public:
  using Error::Error;
};
// No record (and no default) fits the problem, the template serves no such problem (a transposed
// operand, alpha and beta, a batch or an epilogue it does not declare), or the template is not in
// the library.
class TILETUNE_API NoConfiguration : public Error {
 public:
  using Error::Error;
};

namespace detail {
class BlasState;
class GemmState;
class LibraryState;
}  // namespace detail

class TILETUNE_API Gemm {
 public:
  const std::string& name() const;
  // The arithmetic its template declares (at least Options::lowest_precision).
  Precision precision() const;
  // The configuration chosen for the problem; the same library and problem always give the same
  // plan. Cached per problem. Throws InvalidProblem, NoConfiguration, Error.
  Plan plan(const Problem& problem) const;
  // Runs the plan's kernel. GPU backend: device pointers, enqueued on `stream` (null: the default
  // stream) of the current CUDA context (the primary context of device 0 is made current when
  // none is); errors inside the kernel surface at the next synchronisation. CPU backend: host
  // pointers, and run returns when C is written (the stream is not used).
  void run(const Problem& problem, const float* A, const float* B, float* C,
           void* stream = nullptr) const;
  // The same with the epilogue's bias (N floats, on the backend's side as A, B and C are): given
  // exactly when the problem's epilogue adds one (bias, bias_relu, bias_gelu).
  void run(const Problem& problem, const float* A, const float* B, float* C, void* stream,
           const float* bias) const;

 private:
  friend class Library;
  friend class detail::BlasState;  // which ranks the templates by expected_ms, then plans one
  explicit Gemm(std::shared_ptr<detail::GemmState> state);
  // The time the problem's plan would expect (0: unknown), found as plan finds it but without
  // loading a kernel, timing a first-call trial or recording a miss, and the pass over C after a
  // kernel that adds into C where the problem has beta or an epilogue. Throws as plan does.
  double expected_ms(const Problem& problem) const;
  std::shared_ptr<detail::GemmState> state_;
};

// A bundle compiled into the program (`tiletune export --format cpp`): its files as byte arrays.
struct EmbeddedFile {
  const char* path;  // relative to the bundle's folder: "manifest.json", "cubins/..."
  const unsigned char* data;
  std::size_t size;
};
struct EmbeddedBundle {
  const EmbeddedFile* files;
  std::size_t count;
};

class TILETUNE_API Library {
 public:
  // A tiletune database (read only, never changed), or the folder of an exported bundle. Throws
  // Error naming the path and the cause.
  static Library open(const std::string& path, const Options& options = {});
  static Library open(const EmbeddedBundle& bundle, const Options& options = {});

  // The current version of a recorded template. Throws NoConfiguration when there is none, or
  // when it declares a precision below Options::lowest_precision.
  Gemm gemm(const std::string& template_name) const;
  // The names of the templates recorded, sorted.
  std::vector<std::string> templates() const;
  // Where the records come from: "database PATH", "bundle PATH", "embedded bundle".
  std::string source() const;
  const Options& options() const;

 private:
  explicit Library(std::shared_ptr<detail::LibraryState> state);
  std::shared_ptr<detail::LibraryState> state_;
};

// cuBLAS's SGEMM on the library's templates: the same column-major arguments, checks and results
// as cublasSgemm and cublasSgemmStridedBatched (transa, transb in N, n, T, t, C, c: C is T for
// real numbers), on device pointers (host pointers on the CPU backend).
//
// Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T, so each call is the row-major
// Problem M = n, N = m, K = k of B and A swapped (ldb and lda, stride_b and stride_a with them),
// op_a from transb and op_b from transa. It runs on the template whose choice expects the least
// time (the model's prediction, else its record's time scaled: Plan::expected_ms before a trial;
// ties: the template's name) of every template of the library that its
// Options::lowest_precision accepts and that serves the problem; the choice is kept per problem.
//
// An argument out of range throws InvalidProblem naming it as cuBLAS numbers it (the handle is
// parameter 1: "sgemm: parameter number 4 (m = -1) is below 0 ..."); so do what tiletune cannot
// serve and cuBLAS leaves unchecked: a negative stride of A or B, C's entries overlapping, a size
// beyond 32 bits. m, n or batch 0: nothing is read or written. k = 0 asks C = beta * C, which no
// template computes (their K is at least 1): with beta = 1 it returns at once, as there is nothing
// to do; any other beta is NoConfiguration, on both backends alike, so that a CPU-backend test
// fails where the GPU would. alpha = 0 with k > 0 runs the kernel (A and B are read). A problem
// no template serves is NoConfiguration, naming why each could not.
//
// The first call of a problem ranks the serving templates by the time their choice expects, which
// loads no kernel, then plans the first: only its kernel is loaded, only its first-call trial
// timed (Options::trial_candidates) and only its miss recorded; should that plan fail, the next
// is planned. Later calls of a problem differing only in alpha, beta's value (not whether it is
// 0), the batch's size or strides reuse the choice.
class TILETUNE_API Blas {
 public:
  explicit Blas(const Library& library);

  void sgemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
             const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
             float* C, std::int64_t ldc, void* stream = nullptr) const;
  void sgemm_strided_batched(char transa, char transb, std::int64_t m, std::int64_t n,
                             std::int64_t k, float alpha, const float* A, std::int64_t lda,
                             std::int64_t stride_a, const float* B, std::int64_t ldb,
                             std::int64_t stride_b, float beta, float* C, std::int64_t ldc,
                             std::int64_t stride_c, std::int64_t batch,
                             void* stream = nullptr) const;
  // The plan the call would run (the row-major problem it maps to, above), for people and tests.
  Plan plan(const Problem& row_major) const;

 private:
  std::shared_ptr<detail::BlasState> state_;
};

// "0.1.0"
TILETUNE_API const char* version();

}  // namespace tiletune

// Blas (tiletune.h): cuBLAS's column-major SGEMM calls, checked as cuBLAS checks them, mapped onto
// the row-major Problem and run on the library's template that expects the least time for it.
#include <tiletune/tiletune.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "tuner/runtime/plan_cache.h"
#include "tuner/runtime/public_problem.h"

namespace tiletune {

namespace detail {

class BlasState {
 public:
  explicit BlasState(Library library) : library(std::move(library)) {}

  // The template whose choice expects the least time, among every one the library accepts that
  // serves the problem (ties: the first name), ranked without loading any kernel; the first of
  // them that plans. NoConfiguration, listing why each could not.
  Gemm choose(const Problem& problem) const {
    struct Ranked {
      double ms;  // an unknown time (0: a declared default) ranks after every known one
      Gemm gemm;
    };
    std::vector<Ranked> ranked;
    std::string refused;
    const auto refuse = [&](const std::string& name, const Error& e) {
      refused += fmt::format("{}{}: {}", refused.empty() ? "" : "; ", name, e.what());
    };
    for (const std::string& name : library.templates()) {  // sorted: ties go to the first
      try {
        Gemm gemm = library.gemm(name);
        const double ms = gemm.expected_ms(problem);
        ranked.push_back({ms > 0 ? ms : std::numeric_limits<double>::infinity(), std::move(gemm)});
      } catch (const InvalidProblem&) {
        throw;  // the problem itself, the same for every template
      } catch (const Error& e) {
        refuse(name, e);
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) { return a.ms < b.ms; });
    for (const Ranked& candidate : ranked) {
      try {
        candidate.gemm.plan(problem);  // loads its kernel, cached for the calls that run it
        return candidate.gemm;
      } catch (const InvalidProblem&) {
        throw;
      } catch (const Error& e) {
        refuse(candidate.gemm.name(), e);
      }
    }
    throw NoConfiguration(fmt::format("{}: no template serves {} ({})", library.source(),
                                      problem.to_string(), refused.empty() ? "none recorded" : refused));
  }

  Library library;
  runtime::PlanCache<Gemm> chosen;  // per problem (PlanKey: what decides which templates serve it)
};

}  // namespace detail

namespace {

// One call's parameters as cuBLAS numbers them (the handle is parameter 1), 0 where the call has
// none: its argument errors name them so.
struct Numbering {
  const char* function;
  int lda, stride_a, ldb, stride_b, ldc, stride_c, batch;
};
constexpr Numbering kSgemm{"sgemm", 9, 0, 11, 0, 14, 0, 0};
constexpr Numbering kStridedBatched{"sgemm_strided_batched", 9, 10, 12, 13, 16, 17, 18};

[[noreturn]] void refuse(const Numbering& call, int number, const char* name, std::int64_t value,
                         std::string_view why) {
  throw InvalidProblem(fmt::format("{}: parameter number {} ({} = {}) {}", call.function, number,
                                   name, value, why));
}

Op op_of(const Numbering& call, int number, const char* name, char trans) {
  switch (trans) {
    case 'N': case 'n': return Op::n;
    case 'T': case 't': case 'C': case 'c': return Op::t;  // conjugation is nothing for real numbers
  }
  throw InvalidProblem(fmt::format(
      "{}: parameter number {} ({} = {}) is none of N, n, T, t, C, c", call.function, number, name,
      std::isprint(static_cast<unsigned char>(trans)) ? fmt::format("'{}'", trans)
                                                      : fmt::format("character {}", int(trans))));
}

// What the kernels index with 32-bit integers (GemmProblem's range).
constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();

struct Call {
  char transa, transb;
  std::int64_t m, n, k;
  float alpha;
  std::int64_t lda, stride_a, ldb, stride_b;
  float beta;
  std::int64_t ldc, stride_c, batch;
};

// cuBLAS's checks, in its order, then tiletune's own limits; the row-major problem of the call.
Problem checked_problem(const Numbering& numbering, const Call& c) {
  const Op op_a = op_of(numbering, 2, "transa", c.transa);
  const Op op_b = op_of(numbering, 3, "transb", c.transb);
  const auto at_least = [&](int number, const char* name, std::int64_t value, std::int64_t least,
                            const char* what) {
    if (value < least) refuse(numbering, number, name, value, fmt::format("is below {} ({})", least, what));
    if (value > kMaxSize) refuse(numbering, number, name, value, "exceeds the kernels' 32-bit sizes");
  };
  at_least(4, "m", c.m, 0, "sizes are at least 0");
  at_least(5, "n", c.n, 0, "sizes are at least 0");
  at_least(6, "k", c.k, 0, "sizes are at least 0");
  at_least(numbering.lda, "lda", c.lda, std::max<std::int64_t>(1, op_a == Op::n ? c.m : c.k),
           op_a == Op::n ? "max(1, m), A not transposed" : "max(1, k), A transposed");
  at_least(numbering.ldb, "ldb", c.ldb, std::max<std::int64_t>(1, op_b == Op::n ? c.k : c.n),
           op_b == Op::n ? "max(1, k), B not transposed" : "max(1, n), B transposed");
  at_least(numbering.ldc, "ldc", c.ldc, std::max<std::int64_t>(1, c.m), "max(1, m)");
  if (numbering.batch != 0) {
    if (c.batch < 0) refuse(numbering, numbering.batch, "batchCount", c.batch, "is below 0");
    if (c.batch > kMaxSize) refuse(numbering, numbering.batch, "batchCount", c.batch, "exceeds the kernels' 32-bit sizes");
    // cuBLAS leaves strides unchecked; tiletune's kernels need them >= 0, and C's entries apart.
    if (c.batch > 1 && c.m > 0 && c.n > 0) {
      if (c.stride_a < 0) refuse(numbering, numbering.stride_a, "strideA", c.stride_a, "is below 0, which tiletune does not serve");
      if (c.stride_b < 0) refuse(numbering, numbering.stride_b, "strideB", c.stride_b, "is below 0, which tiletune does not serve");
      const std::int64_t c_span = (c.n - 1) * c.ldc + c.m;
      if (c.stride_c < c_span) {
        refuse(numbering, numbering.stride_c, "strideC", c.stride_c,
               fmt::format("is below the {} elements one C spans: the batch's entries of C would overlap", c_span));
      }
    }
  }
  // Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T: B and A swap places.
  Problem p{c.n, c.m, c.k, c.ldb, c.lda, c.ldc};
  p.op_a = op_b;
  p.op_b = op_a;
  p.alpha = c.alpha;
  p.beta = c.beta;
  p.batch = numbering.batch != 0 ? c.batch : 1;
  if (p.batch > 1) {
    p.stride_a = c.stride_b;
    p.stride_b = c.stride_a;
    p.stride_c = c.stride_c;
  }
  return p;
}

// The Gemm chosen for the row-major problem, from the cache or chosen now.
const Gemm& chosen(detail::BlasState& state, const Problem& problem) {
  const runtime::PlanKey key = runtime::PlanKey::of(nullptr, runtime::to_gemm_problem(problem));
  if (const auto found = state.chosen.find(key)) return *found;
  return *state.chosen.insert(key, std::make_shared<const Gemm>(state.choose(problem)));
}

void run(detail::BlasState& state, const Numbering& numbering, const Call& call, const float* A,
         const float* B, float* C, void* stream) {
  const Problem problem = checked_problem(numbering, call);
  if (call.m == 0 || call.n == 0 || problem.batch == 0) return;  // nothing to compute, as cuBLAS
  if (call.k == 0) {
    // C = beta * C: nothing to do for beta = 1; otherwise no template computes it (their K is at
    // least 1), and scaling C here would read device memory the CPU backend cannot stand in for.
    if (call.beta == 1) return;
    throw NoConfiguration(fmt::format("{}: k = 0 with beta = {} asks C = beta * C, which no tiletune "
                                      "template computes (K is at least 1): scale C outside tiletune",
                                      numbering.function, call.beta));
  }
  chosen(state, problem).run(problem, B, A, C, stream);
}

}  // namespace

Blas::Blas(const Library& library) : state_(std::make_shared<detail::BlasState>(library)) {}

Plan Blas::plan(const Problem& row_major) const { return chosen(*state_, row_major).plan(row_major); }

void Blas::sgemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
                 float* C, std::int64_t ldc, void* stream) const {
  run(*state_, kSgemm, {transa, transb, m, n, k, alpha, lda, 0, ldb, 0, beta, ldc, 0, 1}, A, B, C, stream);
}

void Blas::sgemm_strided_batched(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k,
                                 float alpha, const float* A, std::int64_t lda, std::int64_t stride_a,
                                 const float* B, std::int64_t ldb, std::int64_t stride_b, float beta,
                                 float* C, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch,
                                 void* stream) const {
  run(*state_, kStridedBatched, {transa, transb, m, n, k, alpha, lda, stride_a, ldb, stride_b, beta, ldc, stride_c, batch},
      A, B, C, stream);
}

}  // namespace tiletune

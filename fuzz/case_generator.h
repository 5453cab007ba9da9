// RapidCheck generators of property cases built to hit a kernel's edges: every size is either
// q * T + r with T one of the configuration's tile sizes and r in [1, T) (a partial last tile),
// a tiny size (1), a small arbitrary size, or for K now and then a long one; leading dimensions
// are often wider than the matrix. Where races can show (a GPU), some cases are crowded: M and N
// and K of many tiles, so that many blocks share each SM, each passing many barriers, and a
// missing barrier gets caught in the act.
// Shrinking goes toward fewer whole tiles, smaller remainders, packed strides and seed 0, and for a
// template that serves the BLAS contract toward the plain problem.
//
// A configuration's requirements on the problem (`require M % 8 == 0`, `require lda % 4 == 0`)
// hold for every case drawn: each draw is moved to the nearest admissible problem inside the
// generator, so that the shrunk cases meet them too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "fuzz/gemm_case.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// The moduli to build remainders against: the configuration's parameter values >= 2 (tile
// sizes, block sizes, per-thread tile sizes), or 16 and 32 when it has none.
std::vector<std::int64_t> remainder_moduli(const Configuration& config);

struct CaseLimits {
  std::int64_t max_whole_tiles = 4;  // q in [0, max_whole_tiles]
  std::int64_t max_long_k = 2048;    // K of the occasional long case
  std::int64_t max_extra_ld = 40;    // lda - K, ldb - N, ldc - N
  // Crowded cases, about one in eight (the CPU needs none: it finds races by reordering).
  bool crowded_cases = false;
  // M, N and K of a crowded case, each q * T + r: its CPU reference costs M * N * K.
  std::int64_t min_crowded_size = 192, max_crowded_size = 512;
};

// What a configuration's requirements ask of a problem: the template's requirements with the
// configuration's parameters bound. Empty (the default): every valid problem is admissible.
class CaseRequirements {
 public:
  CaseRequirements() = default;
  // `build`: the build of the configuration the cases run on, whose specialized parts
  // (KernelTemplate::specializes) every case has; the template's other parts are drawn.
  CaseRequirements(const KernelTemplate& tmpl, const Configuration& config,
                   const Specialization& build = {});

  bool empty() const { return conjuncts_.empty(); }
  // The text of the first requirement the problem does not meet, or nothing.
  std::optional<std::string> violated(const GemmProblem& problem) const;
  // Moves M, N, K, then lda, ldb, ldc, each to its nearest value that meets more of the
  // requirements, by whole tile periods where that works (so that a partial tile stays partial),
  // else one by one (a dimension's leading dimension moves with it), for a few rounds. True when the
  // problem now meets them all; false leaves it valid but not admissible.
  bool repair(GemmProblem& problem) const;
  // Brings M and N down by whole periods, within the requirements, while M * N * K is above
  // `multiply_adds` (or until neither can come down).
  void fit_volume(GemmProblem& problem, std::int64_t multiply_adds) const;
  // An admissible problem found by repairing a fixed set of starting problems, or nothing.
  std::optional<GemmProblem> find_admissible() const;
  // Why find_admissible() found nothing: "no problem meets requirement 'lda < 0' (...)".
  std::string why_none() const;
  // The parts of the BLAS contract the template serves, which its cases draw: transposes, alpha
  // and beta (0, 1, -1 or any), batches of 1 to 3 with gaps between entries or a broadcast A or B,
  // epilogues with a bias. Each shrinks toward the plain problem.
  const ContractSupport& contract() const { return contract_; }
  // The parts fixed by the build, and their values.
  const ContractSupport& specialized() const { return specialized_; }
  const Specialization& build() const { return build_; }

 private:
  struct Conjunct {
    Expression expression;    // one operand of a requirement's top-level '&&'
    std::size_t requirement;  // index into requirements_
  };
  int unmet(const GemmProblem& problem, std::size_t* first = nullptr) const;

  Bindings parameters_;
  ContractSupport contract_;
  ContractSupport specialized_;
  Specialization build_;
  std::int64_t period_ = 1;  // the tile sizes' least common multiple: a move by it keeps a partial tile
  std::vector<Expression> requirements_;
  std::vector<Conjunct> conjuncts_;
};

rc::Gen<std::int64_t> gen_dimension(const std::vector<std::int64_t>& moduli, std::int64_t max_whole_tiles);
// With requirements, `admissible` (from requirements.find_admissible()) stands in for a draw that
// cannot be repaired after a few tries.
rc::Gen<GemmCase> gen_gemm_case(const std::vector<std::int64_t>& moduli, const CaseLimits& limits = {},
                                const CaseRequirements& requirements = {},
                                const std::optional<GemmProblem>& admissible = std::nullopt);

}  // namespace tiletune

#include "fuzz/case_generator.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace tiletune {
namespace {

// How far a size moves one by one to meet the requirements (a multiple of 1024 is in reach of any
// size) and by doubling steps (a bound such as `K >= 4 * BK * SPLIT_K`), how many whole periods
// one by one before doubling, the largest period (the tile sizes' least common multiple), how
// many rounds over the six sizes, and how many fresh draws before the known admissible problem.
constexpr std::int64_t kReach = 1024;
constexpr std::int64_t kFarthest = std::int64_t(1) << 16;
constexpr std::int64_t kLinearPeriods = 8;
constexpr std::int64_t kLargestPeriod = 4096;
constexpr int kRepairRounds = 4;
constexpr int kDraws = 8;
// The most multiply-adds a repaired case keeps beyond its draw's, about those of 160 x 160 x 160:
// its reference and its CPU run cost that much, and a split-K case of K >= 4096 runs every
// slice's steps.
constexpr std::int64_t kMaxRepairedVolume = std::int64_t(1) << 22;
constexpr std::int64_t kLargestSize = std::numeric_limits<int>::max();

struct Size {
  const char* name;
  std::int64_t GemmProblem::*ld;     // for a leading dimension
  std::int64_t GemmShape::*dimension;  // for M, N, K
};

// The sizes in the order they are repaired; each dimension with the leading dimensions that must
// stay at least as large (lda >= K, ldb >= N, ldc >= N).
constexpr std::array<Size, 6> kSizes = {{{"M", nullptr, &GemmShape::m},
                                         {"N", nullptr, &GemmShape::n},
                                         {"K", nullptr, &GemmShape::k},
                                         {"lda", &GemmProblem::lda, nullptr},
                                         {"ldb", &GemmProblem::ldb, nullptr},
                                         {"ldc", &GemmProblem::ldc, nullptr}}};

std::int64_t lowest(const GemmProblem& p, const Size& size) {
  if (size.dimension != nullptr) return 1;
  if (size.ld == &GemmProblem::lda) return p.shape.k;
  return p.shape.n;
}

// Sets one size; a dimension carries its leading dimensions along, keeping their padding.
void set_size(GemmProblem& p, const Size& size, std::int64_t value) {
  if (size.ld != nullptr) {
    p.*size.ld = value;
    return;
  }
  const std::int64_t delta = value - p.shape.*size.dimension;
  p.shape.*size.dimension = value;
  if (size.dimension == &GemmShape::k) p.lda += delta;
  if (size.dimension == &GemmShape::n) {
    p.ldb += delta;
    p.ldc += delta;
  }
}

std::int64_t get_size(const GemmProblem& p, const Size& size) {
  return size.ld != nullptr ? p.*size.ld : p.shape.*size.dimension;
}

}  // namespace

CaseRequirements::CaseRequirements(const KernelTemplate& tmpl, const Configuration& config,
                                   const Specialization& build)
    : parameters_(tmpl.bindings(config)), contract_(tmpl.supports), specialized_(tmpl.specializes),
      build_(build), requirements_(tmpl.requirements) {
  for (const std::int64_t modulus : remainder_moduli(config)) {
    const std::int64_t multiple = std::lcm(period_, modulus);
    period_ = multiple <= kLargestPeriod ? multiple : std::max(period_, modulus);
  }
  for (std::size_t i = 0; i < requirements_.size(); ++i) {
    for (Expression& part : requirements_[i].conjuncts()) conjuncts_.push_back({std::move(part), i});
  }
}

int CaseRequirements::unmet(const GemmProblem& p, std::size_t* first) const {
  Bindings values = parameters_;
  values["M"] = p.shape.m;
  values["N"] = p.shape.n;
  values["K"] = p.shape.k;
  values["lda"] = p.lda;
  values["ldb"] = p.ldb;
  values["ldc"] = p.ldc;
  int count = 0;
  for (const Conjunct& conjunct : conjuncts_) {
    bool met = false;
    try {
      met = conjunct.expression.evaluate(values) != 0;
    } catch (const ExpressionError&) {
      // e.g. a division by zero: not met
    }
    if (!met && count++ == 0 && first != nullptr) *first = conjunct.requirement;
  }
  return count;
}

std::optional<std::string> CaseRequirements::violated(const GemmProblem& problem) const {
  std::size_t first = 0;
  if (unmet(problem, &first) == 0) return std::nullopt;
  return requirements_[first].text();
}

bool CaseRequirements::repair(GemmProblem& p) const {
  int unmet_now = unmet(p);
  // Moves `size` by `step`, the smaller value first, when that meets more requirements.
  const auto moved_by = [&](const Size& size, std::int64_t step, GemmProblem& moved) {
    const std::int64_t from = get_size(p, size);
    for (const std::int64_t to : {from - step, from + step}) {
      if (to < lowest(p, size) || to > kLargestSize) continue;
      moved = p;
      set_size(moved, size, to);
      if (moved.valid() && unmet(moved) < unmet_now) return true;
    }
    return false;
  };
  // The smallest multiple of `unit` by which `size` moves to meet more requirements: `linear`
  // multiples one by one, then doubling ones, the smallest that helps searched between the last
  // two (exact for a bound).
  const auto search = [&](const Size& size, std::int64_t unit, std::int64_t linear, GemmProblem& moved) {
    for (std::int64_t k = 1; k <= linear; ++k) {
      if (moved_by(size, k * unit, moved)) return true;
    }
    for (std::int64_t k = 2 * linear; k * unit <= kFarthest; k *= 2) {
      if (!moved_by(size, k * unit, moved)) continue;
      std::int64_t fails = k / 2, works = k;
      GemmProblem closer;
      while (works - fails > 1) {
        const std::int64_t middle = fails + (works - fails) / 2;
        if (moved_by(size, middle * unit, closer)) {
          works = middle;
          moved = closer;
        } else {
          fails = middle;
        }
      }
      return true;
    }
    return false;
  };
  for (int round = 0; round < kRepairRounds && unmet_now > 0; ++round) {
    const int unmet_before = unmet_now;
    for (const Size& size : kSizes) {
      if (unmet_now == 0) break;
      // Only a size that some requirement reads can help.
      const bool read = std::any_of(conjuncts_.begin(), conjuncts_.end(), [&](const Conjunct& c) {
        return c.expression.references(size.name);
      });
      if (!read) continue;
      // Whole periods first, which keep the partial tile the draw aimed at (`K >= 4096` from
      // K = 70 gives 70 + k * period); then one by one (`M % 8 == 0`).
      GemmProblem moved;
      bool found = period_ > 1 && search(size, period_, kLinearPeriods, moved);
      if (!found) found = search(size, 1, kReach, moved);
      if (found) {
        p = moved;
        unmet_now = unmet(p);
      }
    }
    if (unmet_now == unmet_before) break;  // no size could help: more rounds would not either
  }
  return unmet_now == 0;
}

void CaseRequirements::fit_volume(GemmProblem& p, std::int64_t multiply_adds) const {
  const auto volume = [](const GemmProblem& q) { return q.shape.m * q.shape.n * q.shape.k; };
  while (volume(p) > multiply_adds) {
    bool smaller = false;
    // The larger of M and N first.
    const bool m_first = p.shape.m >= p.shape.n;
    for (const Size& size : {kSizes[m_first ? 0 : 1], kSizes[m_first ? 1 : 0]}) {
      if (get_size(p, size) - period_ < 1) continue;
      GemmProblem down = p;
      set_size(down, size, get_size(p, size) - period_);
      if (down.valid() && unmet(down) == 0) {
        p = down;
        smaller = true;
        break;
      }
    }
    if (!smaller) return;
  }
}

std::optional<GemmProblem> CaseRequirements::find_admissible() const {
  for (const std::int64_t size : {1, 7, 64, 100, 1000, 4096}) {
    for (const std::int64_t padding : {0, 3}) {
      GemmProblem p = GemmProblem::packed({size, size, size});
      p.lda += padding;
      p.ldb += padding;
      p.ldc += padding;
      if (repair(p)) return p;
    }
  }
  return std::nullopt;
}

std::string CaseRequirements::why_none() const {
  GemmProblem p = GemmProblem::packed({64, 64, 64});
  repair(p);
  std::size_t first = 0;
  if (unmet(p, &first) == 0) return "";
  return fmt::format("no case meets requirement '{}' (each size moved up to {} from several "
                     "starting problems)",
                     requirements_[first].text(), kReach);
}

std::vector<std::int64_t> remainder_moduli(const Configuration& config) {
  std::vector<std::int64_t> moduli;
  for (const auto& [name, value] : config.values) {
    if (value >= 2 && std::find(moduli.begin(), moduli.end(), value) == moduli.end()) {
      moduli.push_back(value);
    }
  }
  if (moduli.empty()) moduli = {16, 32};
  return moduli;
}

rc::Gen<std::int64_t> gen_dimension(const std::vector<std::int64_t>& moduli,
                                    std::int64_t max_whole_tiles) {
  auto partial_tile = rc::gen::exec([moduli, max_whole_tiles] {
    const std::int64_t tile = *rc::gen::elementOf(moduli);
    const std::int64_t whole = *rc::gen::inRange<std::int64_t>(0, max_whole_tiles + 1);
    const std::int64_t rest = *rc::gen::inRange<std::int64_t>(1, tile);
    return whole * tile + rest;
  });
  return rc::gen::weightedOneOf<std::int64_t>({
      {6, partial_tile},
      {1, rc::gen::just<std::int64_t>(1)},
      {2, rc::gen::inRange<std::int64_t>(1, 70)},
  });
}

namespace {

GemmProblem draw_problem(const std::vector<std::int64_t>& moduli, const CaseLimits& limits) {
  GemmProblem problem;
  GemmShape& s = problem.shape;
  // About one case in eight. Bools shrink to false, so a crowded failure shrinks on toward the
  // ordinary sizes when it still fails there.
  const bool crowded = limits.crowded_cases && *rc::gen::arbitrary<bool>() &&
                       *rc::gen::arbitrary<bool>() && *rc::gen::arbitrary<bool>();
  if (crowded) {
    // By value: RapidCheck shrinks lazily, after this call has returned.
    const auto many_tiles = rc::gen::exec([moduli, limits] {
      const std::int64_t tile = *rc::gen::elementOf(moduli);
      const std::int64_t fewest = std::max<std::int64_t>(1, (limits.min_crowded_size + tile - 1) / tile);
      const std::int64_t most = std::max(fewest, (limits.max_crowded_size - tile + 1) / tile);
      const std::int64_t whole = *rc::gen::inRange<std::int64_t>(fewest, most + 1);
      return whole * tile + *rc::gen::inRange<std::int64_t>(1, tile);
    });
    s.m = *many_tiles;
    s.n = *many_tiles;
    s.k = *many_tiles;  // many K tiles: many windows for a race between load and use
  } else {
    s.m = *gen_dimension(moduli, limits.max_whole_tiles);
    s.n = *gen_dimension(moduli, limits.max_whole_tiles);
    s.k = *rc::gen::weightedOneOf<std::int64_t>({
        {8, gen_dimension(moduli, limits.max_whole_tiles)},
        {1, rc::gen::inRange<std::int64_t>(1, limits.max_long_k + 1)},
    });
  }
  // Half the strides are wider than the matrix, from the first case on (inRange would favour
  // packed while RapidCheck's size is small). A bool shrinks to false, so failures shrink to
  // packed strides; a branch of weightedOneOf would never shrink across branches.
  const auto extra = [&limits] {
    const bool wider = limits.max_extra_ld > 0 && *rc::gen::arbitrary<bool>();
    return wider ? *rc::gen::inRange<std::int64_t>(1, limits.max_extra_ld + 1) : 0;
  };
  problem.lda = s.k + extra();
  problem.ldb = s.n + extra();
  problem.ldc = s.n + extra();
  return problem;
}

// The contract's choices of a case, drawn before its sizes are repaired; the batch strides follow
// from the repaired sizes (batch_strides).
struct ContractDraw {
  std::int64_t a_gap = 0, b_gap = 0, c_gap = 0;  // rows between entries; -1: a broadcast operand
};

// An index that shrinks to 0, for a choice among `count` (a gen::element does not shrink).
int choice(int count) { return *rc::gen::inRange(0, count); }

// A scale of the plain problem's value `plain` or, where the build specializes it as not plain,
// one of the others: 1, 0 and -1 keep small-integer sums exact; the fourth choice draws a scale
// in [-2, 2]. The first is where shrinking goes.
float draw_scale(float plain, const std::array<float, 2>& others, bool specialized, bool built) {
  if (specialized && !built) return plain;
  const std::array<float, 3> units = {plain, others[0], others[1]};
  const int skip = specialized ? 1 : 0;  // a build that specializes it never sees the plain value
  const int which = skip + choice(4 - skip);
  if (which < 3) return units[which];
  const float drawn = float(*rc::gen::inRange(-2000, 2001)) / 1000.0f;
  return specialized && drawn == plain ? others[0] : drawn;
}

ContractDraw draw_contract(GemmProblem& p, const CaseRequirements& requirements) {
  const ContractSupport& supports = requirements.contract();
  const ContractSupport& specialized = requirements.specialized();
  const Specialization& build = requirements.build();
  ContractDraw draw;
  const std::int64_t extra_a = p.lda - p.shape.k, extra_b = p.ldb - p.shape.n;
  const auto op = [](bool served, bool fixed, Op built) {
    if (!served) return Op::n;
    return fixed ? built : *rc::gen::arbitrary<bool>() ? Op::t : Op::n;
  };
  p.op_a = op(supports.op_a, specialized.op_a, build.op_a);
  p.op_b = op(supports.op_b, specialized.op_b, build.op_b);
  p.lda = p.a_columns() + extra_a;
  p.ldb = p.b_columns() + extra_b;
  if (supports.alpha) p.alpha = draw_scale(1, {-1, 0}, specialized.alpha, build.alpha);
  if (supports.beta) p.beta = draw_scale(0, {1, -1}, specialized.beta, build.beta);
  if (supports.epilogue) {
    p.epilogue = specialized.epilogue ? build.epilogue : Epilogue(choice(6));
  }
  if (supports.batch) {
    // A build that specializes the batch has one of 2 or 3 entries, or one.
    p.batch = !specialized.batch ? *rc::gen::inRange<std::int64_t>(1, 4)
              : build.batch      ? *rc::gen::inRange<std::int64_t>(2, 4)
                                 : 1;
    if (p.batch > 1) {
      const auto gap = [](bool may_broadcast) -> std::int64_t {
        const int kind = choice(may_broadcast ? 3 : 2);  // packed, a gap, a broadcast
        return kind == 0 ? 0 : kind == 1 ? *rc::gen::inRange<std::int64_t>(1, 3) : -1;
      };
      draw.a_gap = gap(true);
      draw.b_gap = gap(true);
      draw.c_gap = gap(false);
    }
  }
  return draw;
}

// Strides of whole rows (what make_operands lays out): each entry's rows plus the gap.
void batch_strides(GemmProblem& p, const ContractDraw& draw) {
  if (p.batch == 1) return;
  const auto stride = [](std::int64_t gap, std::int64_t rows, std::int64_t ld) -> std::int64_t {
    return gap < 0 ? 0 : (rows + gap) * ld;
  };
  p.stride_a = stride(draw.a_gap, p.a_rows(), p.lda);
  p.stride_b = stride(draw.b_gap, p.b_rows(), p.ldb);
  p.stride_c = stride(draw.c_gap, p.shape.m, p.ldc);
}

}  // namespace

rc::Gen<GemmCase> gen_gemm_case(const std::vector<std::int64_t>& moduli, const CaseLimits& limits,
                                const CaseRequirements& requirements,
                                const std::optional<GemmProblem>& admissible) {
  return rc::gen::exec([moduli, limits, requirements, admissible] {
    GemmCase c;
    c.problem = draw_problem(moduli, limits);
    ContractDraw contract;
    if (requirements.contract().any()) contract = draw_contract(c.problem, requirements);
    // Repaired here, inside the generator, so that every shrunk case is repaired too.
    const GemmProblem drawn = c.problem;
    for (int draw = 1; !requirements.empty() && !requirements.repair(c.problem); ++draw) {
      if (draw == kDraws && admissible) {
        c.problem = *admissible;
        break;
      }
      if (draw == kDraws) break;  // no known admissible problem: the runner refuses to get here
      c.problem = draw_problem(moduli, limits);
      if (requirements.contract().any()) contract = draw_contract(c.problem, requirements);
    }
    // A bound such as K >= 4096 can make a case far larger than its draw; its reference costs
    // M * N * K, so M and N come down within the requirements.
    const std::int64_t drawn_volume = drawn.shape.m * drawn.shape.n * drawn.shape.k;
    if (!(c.problem == drawn)) {
      requirements.fit_volume(c.problem, std::max(drawn_volume, kMaxRepairedVolume));
    }
    batch_strides(c.problem, contract);
    // An index, not gen::element (which does not shrink): a failure shrinks towards the plainest
    // inputs that still show it, sparse to dense reals to small integers.
    constexpr InputKind kKinds[] = {InputKind::small_integers, InputKind::real,
                                    InputKind::sparse_real};
    c.inputs = kKinds[*rc::gen::inRange(0, 3)];
    c.data_seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    c.schedule_seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    return c;
  });
}

}  // namespace tiletune

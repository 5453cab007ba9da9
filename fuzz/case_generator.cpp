#include "fuzz/case_generator.h"

#include <algorithm>

namespace tiletune {

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

rc::Gen<GemmCase> gen_gemm_case(const std::vector<std::int64_t>& moduli, const CaseLimits& limits) {
  return rc::gen::exec([moduli, limits] {
    GemmCase c;
    GemmShape& s = c.problem.shape;
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
    c.problem.lda = s.k + extra();
    c.problem.ldb = s.n + extra();
    c.problem.ldc = s.n + extra();
    c.inputs = *rc::gen::element(InputKind::small_integers, InputKind::real);
    c.data_seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    c.schedule_seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    return c;
  });
}

}  // namespace tiletune

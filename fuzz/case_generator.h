// RapidCheck generators of property cases built to hit a kernel's edges: every size is either
// q * T + r with T one of the configuration's tile sizes and r in [1, T) (a partial last tile),
// a tiny size (1), a small arbitrary size, or for K now and then a long one; leading dimensions
// are often wider than the matrix. Where races can show (a GPU), some cases are crowded: M and N
// and K of many tiles, so that many blocks share each SM, each passing many barriers, and a
// missing barrier gets caught in the act.
// Shrinking goes toward fewer whole tiles, smaller remainders, packed strides and seed 0.
#pragma once

#include <cstdint>
#include <vector>

#include <rapidcheck.h>

#include "fuzz/gemm_case.h"
#include "tuner/kernel_template.h"

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

rc::Gen<std::int64_t> gen_dimension(const std::vector<std::int64_t>& moduli, std::int64_t max_whole_tiles);
rc::Gen<GemmCase> gen_gemm_case(const std::vector<std::int64_t>& moduli, const CaseLimits& limits = {});

}  // namespace tiletune

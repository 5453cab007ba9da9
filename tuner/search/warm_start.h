// A warm start for a guided search: the configurations that were fastest at the recorded shapes
// nearest to the one being tuned (same GPU, same template), evaluated first. A kernel's best
// choices change slowly with the shape (on an H100, 1000^3 and 1024^3 share their winner, which
// stands alone at 1000^3: every configuration within two steps of it is 5% slower), so they are
// better first guesses than a spread-out sample; a spread-out sample still fills the rest of the
// first batch, so a shape unlike any recorded one loses little.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// From how many recorded shapes, and how many configurations of each, a warm start is drawn.
inline constexpr std::size_t kWarmStartShapes = 3;
inline constexpr std::size_t kWarmStartPerShape = 3;

// A recorded shape's correct configurations, fastest first.
struct RecordedRanking {
  GemmShape shape;
  std::vector<std::string> fastest;
};

// The `count` shapes of `recorded` nearest to `shape` (log_distance; equally near ones in shape
// order), nearest first, `shape` itself left out.
std::vector<GemmShape> nearest_shapes(const GemmShape& shape, std::vector<GemmShape> recorded,
                                      std::size_t count = kWarmStartShapes);

// Indices into `space`: from each ranking in turn, its first `per_shape` configurations that are
// in the space (valid at the shape being tuned), each index once.
std::vector<std::size_t> warm_start_points(const std::vector<Configuration>& space,
                                           const std::vector<RecordedRanking>& rankings,
                                           std::size_t per_shape = kWarmStartPerShape);

}  // namespace tiletune

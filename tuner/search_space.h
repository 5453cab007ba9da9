// The configurations of a template worth compiling: the cartesian product of the parameters'
// candidate values, filtered by the template's requirements.
#pragma once

#include <vector>

#include "tuner/kernel_template.h"

namespace tiletune {

// In a stable order: the first parameter varies slowest, values in declared order.
// With a shape, requirements that read M, N, K, lda, ldb or ldc are applied too, to the shape's
// packed problem (lda = K, ldb = ldc = N: how the tuner verifies and times it).
std::vector<Configuration> enumerate_configurations(const KernelTemplate& tmpl,
                                                    const GemmShape* shape = nullptr);

// A random sample of `count` configurations (all of them when there are no more), in their
// original order; the same seed draws the same sample. For fuzzing spaces too large to cover.
std::vector<Configuration> sample_configurations(std::vector<Configuration> configs,
                                                 std::size_t count, std::uint64_t seed);

}  // namespace tiletune

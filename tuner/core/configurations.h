// The configurations of a template worth compiling: the cartesian product of the parameters'
// candidate values, filtered by the template's requirements.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "tuner/core/kernel_template.h"

namespace tiletune {

// The most configurations, before requirements, that tiletune lists one by one (for tune,
// compile, fuzz and mutants without --sample): a million configurations take about a gigabyte.
constexpr std::uint64_t kMaxEnumeratedConfigurations = 1'000'000;

// A space larger than kMaxEnumeratedConfigurations was to be enumerated: bad input (exit 2).
class SpaceTooLarge : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// No configuration of a template meets its requirements: there is nothing to compile, fuzz or
// tune, which is never a pass (exit 2).
class EmptySpace : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// Throws EmptySpace naming the template when `configs`, its configurations, are none.
void check_not_empty(const KernelTemplate& tmpl, const std::vector<Configuration>& configs);

// The product of the parameters' value counts (the grid before requirements); nullopt when it
// does not fit in 64 bits.
std::optional<std::uint64_t> grid_size(const KernelTemplate& tmpl);

// Throws SpaceTooLarge, naming the grid's size and the limit, when the template's grid is larger
// than kMaxEnumeratedConfigurations.
void check_enumerable(const KernelTemplate& tmpl);

// In a stable order: the first parameter varies slowest, values in declared order.
// With a shape, requirements that read M, N, K, lda, ldb or ldc are applied too, to the shape's
// packed problem (lda = K, ldb = ldc = N: how the tuner verifies and times it), and so are the
// tuning limits (`tune_if`); for a tune of transposes or a batch (`kind`), only configurations
// with a build that serves it (KernelTemplate::unsupported). Throws SpaceTooLarge first
// (check_enumerable).
std::vector<Configuration> enumerate_configurations(const KernelTemplate& tmpl,
                                                    const GemmShape* shape = nullptr,
                                                    TunedFor kind = {});

// A random sample of `count` configurations (all of them when there are no more), in their
// original order; the same seed draws the same sample. For fuzzing spaces too large to cover.
std::vector<Configuration> sample_configurations(std::vector<Configuration> configs,
                                                 std::size_t count, std::uint64_t seed);

// A random sample of `count` of the template's valid configurations that `keep` accepts (every
// valid one without it), in the space's order; the same seed draws the same sample. A space
// that can be enumerated is, and sampled as above; a larger one is never listed: random points
// of the grid are drawn and checked until `count` are found, and a SpaceTooLarge names the
// requirements when too few of a bounded number of draws pass them.
std::vector<Configuration> sample_configurations(
    const KernelTemplate& tmpl, std::size_t count, std::uint64_t seed,
    const std::function<bool(const Configuration&)>& keep = {});

// A small random sample of the template's valid configurations that together take every
// combination of `strength` parameters' values that some valid configuration takes (strength 1:
// every value of every parameter; 2: every pair of two parameters' values; ...), in the space's
// order: the configuration that adds the most combinations not yet taken is chosen next, ties
// broken by the seed, so different seeds cover the space with different configurations. A bug that
// needs a particular value of each of `strength` parameters to show is in some configuration of
// the sample. Throws SpaceTooLarge when the space cannot be listed, std::invalid_argument for a
// strength below 1.
std::vector<Configuration> covering_sample(const KernelTemplate& tmpl, std::uint64_t seed, int strength = 1);

}  // namespace tiletune

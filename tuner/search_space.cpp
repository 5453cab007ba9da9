#include "tuner/search_space.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <optional>
#include <random>

namespace tiletune {

std::vector<Configuration> enumerate_configurations(const KernelTemplate& tmpl,
                                                    const GemmShape* shape) {
  const std::vector<Parameter>& parameters = tmpl.parameters;
  std::vector<Configuration> configurations;
  if (std::any_of(parameters.begin(), parameters.end(),
                  [](const Parameter& p) { return p.values.empty(); })) {
    return configurations;  // an empty factor empties the product
  }

  // The tuner verifies and times a shape with packed leading dimensions: requirements on lda,
  // ldb, ldc are checked there.
  const std::optional<GemmProblem> packed =
      shape ? std::optional(GemmProblem::packed(*shape)) : std::nullopt;
  // An odometer over the candidate indices: the last parameter turns fastest.
  std::vector<std::size_t> index(parameters.size(), 0);
  for (;;) {
    Configuration config;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      config.values.emplace_back(parameters[i].name, parameters[i].values[index[i]]);
    }
    const bool admissible = packed ? tmpl.satisfies_requirements(config, *packed)
                                   : tmpl.satisfies_requirements(config);
    if (admissible) configurations.push_back(std::move(config));

    std::size_t digit = parameters.size();
    while (digit > 0 && ++index[digit - 1] == parameters[digit - 1].values.size()) {
      index[--digit] = 0;
    }
    if (digit == 0) return configurations;
  }
}

std::vector<Configuration> sample_configurations(std::vector<Configuration> configs,
                                                 std::size_t count, std::uint64_t seed) {
  if (count >= configs.size()) return configs;
  std::vector<std::size_t> picks(configs.size());
  std::iota(picks.begin(), picks.end(), 0);
  std::mt19937_64 random(seed);
  std::shuffle(picks.begin(), picks.end(), random);
  picks.resize(count);
  std::sort(picks.begin(), picks.end());
  std::vector<Configuration> sample;
  sample.reserve(count);
  for (std::size_t i : picks) sample.push_back(std::move(configs[i]));
  return sample;
}

}  // namespace tiletune

#include "tuner/search_space.h"

#include <algorithm>
#include <cstddef>

namespace tiletune {

std::vector<Configuration> enumerate_configurations(const KernelTemplate& tmpl,
                                                    const GemmShape* shape) {
  const std::vector<Parameter>& parameters = tmpl.parameters;
  std::vector<Configuration> configurations;
  if (std::any_of(parameters.begin(), parameters.end(),
                  [](const Parameter& p) { return p.values.empty(); })) {
    return configurations;  // an empty factor empties the product
  }

  // An odometer over the candidate indices: the last parameter turns fastest.
  std::vector<std::size_t> index(parameters.size(), 0);
  for (;;) {
    Configuration config;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      config.values.emplace_back(parameters[i].name, parameters[i].values[index[i]]);
    }
    if (tmpl.satisfies_requirements(config, shape)) configurations.push_back(std::move(config));

    std::size_t digit = parameters.size();
    while (digit > 0 && ++index[digit - 1] == parameters[digit - 1].values.size()) {
      index[--digit] = 0;
    }
    if (digit == 0) return configurations;
  }
}

}  // namespace tiletune

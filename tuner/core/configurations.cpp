#include "tuner/core/configurations.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {
namespace {

// Random draws of the grid a lazy sample tries per configuration asked for, at the least.
constexpr std::size_t kDrawsPerSample = 1000;
constexpr std::size_t kMinimumDraws = 100'000;

std::string where(const KernelTemplate& tmpl) {
  return tmpl.path.empty() ? tmpl.name : tmpl.path.string();
}

Configuration configuration_at(const KernelTemplate& tmpl, const std::vector<std::size_t>& index) {
  Configuration config;
  for (std::size_t i = 0; i < tmpl.parameters.size(); ++i) {
    config.values.emplace_back(tmpl.parameters[i].name, tmpl.parameters[i].values[index[i]]);
  }
  return config;
}

}  // namespace

std::optional<std::uint64_t> grid_size(const KernelTemplate& tmpl) {
  std::uint64_t size = 1;
  for (const Parameter& parameter : tmpl.parameters) {
    if (__builtin_mul_overflow(size, std::uint64_t(parameter.values.size()), &size)) return std::nullopt;
  }
  return size;
}

void check_enumerable(const KernelTemplate& tmpl) {
  const std::optional<std::uint64_t> size = grid_size(tmpl);
  if (size && *size <= kMaxEnumeratedConfigurations) return;
  throw SpaceTooLarge(fmt::format(
      "{}: {} has {} configurations before requirements (the product of its parameters' value "
      "counts), more than the {} tiletune enumerates: declare fewer candidate values (fuzz "
      "--sample N samples larger spaces)",
      where(tmpl), tmpl.name, size ? std::to_string(*size) : "more than 2^64",
      kMaxEnumeratedConfigurations));
}

void check_not_empty(const KernelTemplate& tmpl, const std::vector<Configuration>& configs) {
  if (configs.empty()) {
    throw EmptySpace(fmt::format("{}: no configuration of {} meets its requirements: there is "
                                 "nothing to run", where(tmpl), tmpl.name));
  }
}

std::vector<Configuration> enumerate_configurations(const KernelTemplate& tmpl,
                                                    const GemmShape* shape, TunedFor kind) {
  check_enumerable(tmpl);
  const std::vector<Parameter>& parameters = tmpl.parameters;
  std::vector<Configuration> configurations;
  if (std::any_of(parameters.begin(), parameters.end(),
                  [](const Parameter& p) { return p.values.empty(); })) {
    return configurations;  // an empty factor empties the product
  }

  // The tuner verifies and times a shape with packed leading dimensions: requirements on lda,
  // ldb, ldc are checked there.
  const std::optional<GemmProblem> packed =
      shape ? std::optional(GemmProblem::packed(*shape, kind)) : std::nullopt;
  // An odometer over the candidate indices: the last parameter turns fastest.
  std::vector<std::size_t> index(parameters.size(), 0);
  for (;;) {
    Configuration config;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      config.values.emplace_back(parameters[i].name, parameters[i].values[index[i]]);
    }
    const bool admissible = packed ? tmpl.satisfies_requirements(config, *packed) &&
                                         tmpl.worth_tuning(config, *shape) &&
                                         (kind.plain() || !tmpl.unsupported(*packed, config))
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

std::vector<Configuration> sample_configurations(const KernelTemplate& tmpl, std::size_t count,
                                                 std::uint64_t seed,
                                                 const std::function<bool(const Configuration&)>& keep) {
  const std::optional<std::uint64_t> size = grid_size(tmpl);
  if (size && *size <= kMaxEnumeratedConfigurations) {
    std::vector<Configuration> configs = enumerate_configurations(tmpl);
    if (keep) std::erase_if(configs, [&](const Configuration& config) { return !keep(config); });
    return sample_configurations(std::move(configs), count, seed);
  }
  if (count > kMaxEnumeratedConfigurations) {
    throw SpaceTooLarge(fmt::format("{}: a sample of {} configurations of {} is more than the {} "
                                    "tiletune lists", where(tmpl), count, tmpl.name,
                                    kMaxEnumeratedConfigurations));
  }
  // Too many to list: draw points of the grid until `count` distinct valid ones are found. The
  // set keeps them in the grid's order, the enumeration's.
  std::mt19937_64 random(seed);
  std::set<std::vector<std::size_t>> chosen;
  const std::size_t draws = std::max(kMinimumDraws, count * kDrawsPerSample);
  std::vector<std::size_t> index(tmpl.parameters.size());
  for (std::size_t draw = 0; draw < draws && chosen.size() < count; ++draw) {
    for (std::size_t i = 0; i < index.size(); ++i) {
      index[i] = std::uniform_int_distribution<std::size_t>(0, tmpl.parameters[i].values.size() - 1)(random);
    }
    if (chosen.contains(index)) continue;
    const Configuration config = configuration_at(tmpl, index);
    if (tmpl.satisfies_requirements(config) && (!keep || keep(config))) chosen.insert(index);
  }
  if (chosen.size() < count) {
    throw SpaceTooLarge(fmt::format(
        "{}: {} random draws from the {} configurations of {} found only {} valid ones, fewer than "
        "the {} asked for (its requirements reject nearly all): declare fewer candidate values",
        where(tmpl), draws, size ? std::to_string(*size) : "more than 2^64", tmpl.name,
        chosen.size(), count));
  }
  std::vector<Configuration> sample;
  for (const std::vector<std::size_t>& point : chosen) sample.push_back(configuration_at(tmpl, point));
  return sample;
}

std::vector<Configuration> covering_sample(const KernelTemplate& tmpl, std::uint64_t seed, int strength) {
  if (strength < 1) throw std::invalid_argument(fmt::format("a covering sample's strength is 1 or more, not {}", strength));
  std::vector<Configuration> configs = enumerate_configurations(tmpl);
  // Each combination of `strength` parameters' values some configuration takes, numbered; a
  // configuration's are listed once, so that a pick's gain is a count of flags.
  std::map<std::vector<std::pair<std::size_t, std::int64_t>>, std::size_t> tuple_ids;
  std::vector<std::vector<std::size_t>> tuples_of(configs.size());
  const std::size_t parameters = tmpl.parameters.size();
  const std::size_t width = std::min<std::size_t>(std::size_t(strength), parameters);
  for (std::size_t c = 0; c < configs.size(); ++c) {
    std::vector<bool> chosen(parameters, false);  // the parameters of a tuple, in each combination
    std::fill(chosen.begin(), chosen.begin() + std::ptrdiff_t(width), true);
    do {
      std::vector<std::pair<std::size_t, std::int64_t>> tuple;
      for (std::size_t p = 0; p < parameters; ++p) {
        if (chosen[p]) tuple.emplace_back(p, configs[c].values[p].second);
      }
      tuples_of[c].push_back(tuple_ids.try_emplace(std::move(tuple), tuple_ids.size()).first->second);
    } while (std::prev_permutation(chosen.begin(), chosen.end()));
  }
  std::vector<bool> untaken(tuple_ids.size(), true);
  std::size_t left = tuple_ids.size();
  const auto gain = [&](std::size_t c) {
    return std::count_if(tuples_of[c].begin(), tuples_of[c].end(), [&](std::size_t id) { return untaken[id]; });
  };
  std::vector<std::size_t> order(configs.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(seed);
  std::shuffle(order.begin(), order.end(), random);
  std::vector<std::size_t> picks;
  while (left > 0) {
    // The first of the shuffled order among those adding the most.
    const std::size_t best = *std::max_element(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return gain(a) < gain(b);
    });
    picks.push_back(best);
    for (std::size_t id : tuples_of[best]) {
      left -= untaken[id];
      untaken[id] = false;
    }
  }
  std::sort(picks.begin(), picks.end());
  std::vector<Configuration> sample;
  for (std::size_t i : picks) sample.push_back(configs[i]);
  return sample;
}

}  // namespace tiletune

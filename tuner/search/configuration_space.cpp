#include "tuner/search/configuration_space.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {
namespace {

ValueIndices value_indices(const KernelTemplate& tmpl, const Configuration& config) {
  ValueIndices point;
  point.reserve(tmpl.parameters.size());
  for (const Parameter& parameter : tmpl.parameters) {
    std::int64_t value = 0;
    try {
      value = config.at(parameter.name);
    } catch (const std::out_of_range&) {
      throw std::invalid_argument(fmt::format("configuration {} of template {} has no {}",
                                              config.to_string(), tmpl.name, parameter.name));
    }
    const auto found = std::find(parameter.values.begin(), parameter.values.end(), value);
    if (found == parameter.values.end()) {
      throw std::invalid_argument(fmt::format("configuration {} of template {}: {} is not a candidate of {}",
                                              config.to_string(), tmpl.name, value, parameter.name));
    }
    point.push_back(std::size_t(found - parameter.values.begin()));
  }
  return point;
}

}  // namespace

ConfigurationSpace::ConfigurationSpace(const KernelTemplate& tmpl,
                                       const std::vector<Configuration>& space) {
  for (const Parameter& parameter : tmpl.parameters) value_counts_.push_back(parameter.values.size());
  points_.reserve(space.size());
  for (const Configuration& config : space) {
    points_.push_back(value_indices(tmpl, config));
    positions_.emplace(points_.back(), points_.size() - 1);
  }
}

std::optional<std::size_t> ConfigurationSpace::find(const ValueIndices& point) const {
  const auto found = positions_.find(point);
  if (found == positions_.end()) return std::nullopt;
  return found->second;
}

std::vector<std::size_t> ConfigurationSpace::neighbours(std::size_t index) const {
  struct Move {
    std::size_t steps, parameter, position;
  };
  std::vector<Move> moves;
  ValueIndices moved = points_[index];
  for (std::size_t parameter = 0; parameter < parameter_count(); ++parameter) {
    const std::size_t own = moved[parameter];
    for (std::size_t value = 0; value < value_counts_[parameter]; ++value) {
      if (value == own) continue;
      moved[parameter] = value;
      if (const std::optional<std::size_t> position = find(moved)) {
        moves.push_back({value > own ? value - own : own - value, parameter, *position});
      }
    }
    moved[parameter] = own;
  }
  // Stable, so that equal steps keep parameter order and, within a parameter, lower values first.
  std::stable_sort(moves.begin(), moves.end(),
                   [](const Move& a, const Move& b) { return a.steps < b.steps; });
  std::vector<std::size_t> positions;
  positions.reserve(moves.size());
  for (const Move& move : moves) positions.push_back(move.position);
  return positions;
}

std::vector<std::size_t> ConfigurationSpace::pair_moves(std::size_t index) const {
  std::vector<std::size_t> positions;
  ValueIndices moved = points_[index];
  const auto adjacent_values = [&](std::size_t parameter) {
    std::vector<std::size_t> values;
    if (moved[parameter] > 0) values.push_back(moved[parameter] - 1);
    if (moved[parameter] + 1 < value_counts_[parameter]) values.push_back(moved[parameter] + 1);
    return values;
  };
  for (std::size_t first = 0; first < parameter_count(); ++first) {
    const std::size_t first_own = moved[first];
    for (const std::size_t first_value : adjacent_values(first)) {
      moved[first] = first_value;
      for (std::size_t second = first + 1; second < parameter_count(); ++second) {
        const std::size_t second_own = moved[second];
        for (const std::size_t second_value : adjacent_values(second)) {
          moved[second] = second_value;
          if (const std::optional<std::size_t> position = find(moved)) positions.push_back(*position);
        }
        moved[second] = second_own;
      }
      moved[first] = first_own;
    }
  }
  return positions;
}

std::size_t ConfigurationSpace::distance(const ValueIndices& a, const ValueIndices& b) {
  std::size_t steps = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) steps += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
  return steps;
}

std::vector<std::size_t> ConfigurationSpace::nearest(
    const ValueIndices& point, const std::function<bool(std::size_t)>& allowed) const {
  std::vector<std::size_t> closest;
  std::size_t least = std::numeric_limits<std::size_t>::max();
  for (std::size_t index = 0; index < points_.size(); ++index) {
    const std::size_t steps = distance(point, points_[index]);
    if (steps > least || (allowed && !allowed(index))) continue;
    if (steps < least) {
      least = steps;
      closest.clear();
    }
    closest.push_back(index);
  }
  return closest;
}

std::vector<std::size_t> ConfigurationSpace::farthest(
    const std::vector<std::size_t>& chosen, const std::function<bool(std::size_t)>& allowed) const {
  std::vector<std::size_t> farthest;
  std::size_t greatest = 0;
  for (std::size_t index = 0; index < points_.size(); ++index) {
    if (!allowed(index)) continue;
    std::size_t least = std::numeric_limits<std::size_t>::max();
    for (const std::size_t other : chosen) least = std::min(least, distance(points_[index], points_[other]));
    if (!farthest.empty() && least < greatest) continue;
    if (farthest.empty() || least > greatest) {
      greatest = least;
      farthest.clear();
    }
    farthest.push_back(index);
  }
  return farthest;
}

}  // namespace tiletune

// A template's search space as points on the grid of its parameters, for the guided strategies.
//
// A point is a vector of value indices: for each parameter (in declared order), the index of the
// configuration's value in that parameter's candidate list. The space holds the valid
// configurations only (requirements prune the cartesian product), so many points of the grid are
// not in it: neighbours and repairs look for the nearest ones that are.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "tuner/core/kernel_template.h"

namespace tiletune {

using ValueIndices = std::vector<std::size_t>;

class ConfigurationSpace {
 public:
  // Throws std::invalid_argument when a configuration does not give every parameter of the
  // template one of its candidate values.
  ConfigurationSpace(const KernelTemplate& tmpl, const std::vector<Configuration>& space);

  std::size_t size() const { return points_.size(); }
  std::size_t parameter_count() const { return value_counts_.size(); }
  std::size_t value_count(std::size_t parameter) const { return value_counts_[parameter]; }

  const ValueIndices& point(std::size_t index) const { return points_[index]; }
  // The position of a point in the space; nullopt when the point is not a valid configuration.
  std::optional<std::size_t> find(const ValueIndices& point) const;

  // The configurations that differ from `index` in exactly one parameter: by increasing distance
  // (adjacent values first), then in parameter order.
  std::vector<std::size_t> neighbours(std::size_t index) const;

  // The configurations that differ from `index` in exactly two parameters, each moved to an
  // adjacent value: the moves that cross a trap single steps cannot, where both configurations
  // between them are slower or invalid (BM=64,BN=128 to BM=128,BN=64). In parameter order, lower
  // values first.
  std::vector<std::size_t> pair_moves(std::size_t index) const;

  // Steps between two points: the sum over parameters of how far apart their value indices are.
  static std::size_t distance(const ValueIndices& a, const ValueIndices& b);

  // The configurations nearest to `point` (which need not be valid), all at the same least
  // distance, in space order; only those `allowed` accepts when it is given. Empty when none is.
  std::vector<std::size_t> nearest(const ValueIndices& point,
                                   const std::function<bool(std::size_t)>& allowed = {}) const;

  // The configurations farthest from all of `chosen` (the greatest least distance to any of
  // them), in space order; only those `allowed` accepts. For spreading a first sample out.
  std::vector<std::size_t> farthest(const std::vector<std::size_t>& chosen,
                                    const std::function<bool(std::size_t)>& allowed) const;

 private:
  std::vector<std::size_t> value_counts_;
  std::vector<ValueIndices> points_;
  std::map<ValueIndices, std::size_t> positions_;
};

}  // namespace tiletune

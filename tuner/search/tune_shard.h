// A share of one tune (`tiletune tune --shard I/N`): N processes, each with its own database, that
// together do exactly the work of the one tune, and whose databases `tiletune merge` joins.
//
// What is shared out depends on the strategy:
//   exhaustive, random  the configurations of each template version: a configuration belongs to
//                       one shard at every shape (a stable hash of the template's source hash and
//                       the configuration's text), so that each is compiled and fuzzed by one
//                       shard only, as one process compiles and fuzzes it once. A count or share
//                       budget is the whole tune's: a shard does those of the one process's first
//                       B configurations (in its fixed order) that it owns.
//   annealing, genetic, bayes  the (template version, shape) pairs: a guided search learns from
//                       its own outcomes and cannot be split; the pairs, ordered by template name,
//                       source hash and shape, are dealt round-robin, and each is searched whole,
//                       its budget as given (its warm start reads only its shard's database).
// Neither depends on the order the files and shapes are given in, on the machine, or on what the
// databases hold. A time budget applies to each shard's searches as given.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/search/search_strategy.h"

namespace tiletune {

class TuneShard {
 public:
  TuneShard() = default;  // the whole tune: 0/1
  // "I/N" with 0 <= I < N; throws std::invalid_argument with one line naming the text otherwise.
  static TuneShard parse(std::string_view text);

  unsigned index() const { return index_; }
  unsigned count() const { return count_; }
  bool whole() const { return count_ == 1; }
  std::string to_string() const;  // "I/N"

  // Exhaustive and random: whether this shard evaluates the configuration of the template version
  // (at every shape).
  bool owns_configuration(std::string_view template_hash, std::string_view config) const;

  // Guided strategies: for each pair (template name, source hash, shape), whether this shard
  // searches it. Equal pairs have one owner.
  struct Pair {
    std::string template_name, template_hash;
    GemmShape shape;
  };
  std::vector<bool> owned_pairs(const std::vector<Pair>& pairs) const;

  // Exhaustive and random: `whole` is the one-process search over `space` (nothing proposed yet)
  // and `limit` how many configurations it settles; returns a search that proposes, in the same
  // order, those of them that this shard owns, and sets `limit` to how many those are.
  std::unique_ptr<SearchStrategy> cut(std::unique_ptr<SearchStrategy> whole, std::size_t& limit,
                                      std::string_view template_hash,
                                      const std::vector<Configuration>& space) const;

 private:
  TuneShard(unsigned index, unsigned count) : index_(index), count_(count) {}
  unsigned index_ = 0, count_ = 1;
};

}  // namespace tiletune

#include "tuner/search/tune_shard.h"

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "tuner/core/splitmix64.h"

namespace tiletune {
namespace {

// FNV-1a over the bytes, then SplitMix64's finalizer to spread them over every bit: the same on
// every machine and build (std::hash is neither).
std::uint64_t stable_hash(std::string_view a, std::string_view b) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](std::string_view bytes) {
    for (const unsigned char c : bytes) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  };
  mix(a);
  mix(std::string_view("\0", 1));  // "ab"+"c" and "a"+"bc" differ
  mix(b);
  return splitmix64_mix(h);
}

// Proposes a fixed list of indices, in order: the shard's part of an exhaustive or random search.
class CutSearch final : public SearchStrategy {
 public:
  CutSearch(std::unique_ptr<SearchStrategy> whole, std::vector<std::size_t> order)
      : whole_(std::move(whole)), order_(std::move(order)) {}

  std::string_view name() const override { return whole_->name(); }

  std::vector<std::size_t> propose(std::size_t max_count) override {
    std::vector<std::size_t> batch;
    for (; next_ < order_.size() && batch.size() < max_count; ++next_) batch.push_back(order_[next_]);
    return batch;
  }

  // Exhaustive and random learn nothing; the whole search is told for its history's sake.
  void observe(std::size_t index, std::optional<double> time_ms) override {
    whole_->observe(index, time_ms);
  }

 private:
  std::unique_ptr<SearchStrategy> whole_;
  std::vector<std::size_t> order_;
  std::size_t next_ = 0;
};

// A whole number of digits alone, or nullopt.
std::optional<unsigned> parse_number(std::string_view text) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

TuneShard TuneShard::parse(std::string_view text) {
  const std::size_t slash = text.find('/');
  const auto index = parse_number(text.substr(0, slash));
  const auto count = slash == std::string_view::npos ? std::nullopt : parse_number(text.substr(slash + 1));
  if (!index || !count) {
    throw std::invalid_argument(fmt::format("--shard '{}': expected I/N, shard I of N (0 <= I < N), "
                                            "e.g. 0/4", text));
  }
  if (*count < 1) throw std::invalid_argument(fmt::format("--shard '{}': N must be at least 1", text));
  if (*index >= *count) {
    throw std::invalid_argument(fmt::format("--shard '{}': I must be below N (the shards of {} are "
                                            "0/{} to {}/{})", text, *count, *count, *count - 1, *count));
  }
  return TuneShard(*index, *count);
}

std::string TuneShard::to_string() const { return fmt::format("{}/{}", index_, count_); }

bool TuneShard::owns_configuration(std::string_view template_hash, std::string_view config) const {
  return stable_hash(template_hash, config) % count_ == index_;
}

std::vector<bool> TuneShard::owned_pairs(const std::vector<Pair>& pairs) const {
  using Key = std::tuple<std::string, std::string, GemmShape>;
  std::map<Key, std::size_t> rank;
  for (const Pair& pair : pairs) rank.emplace(Key{pair.template_name, pair.template_hash, pair.shape}, 0);
  std::size_t next = 0;
  for (auto& [key, r] : rank) r = next++;
  std::vector<bool> owned;
  for (const Pair& pair : pairs) {
    owned.push_back(rank.at(Key{pair.template_name, pair.template_hash, pair.shape}) % count_ == index_);
  }
  return owned;
}

std::unique_ptr<SearchStrategy> TuneShard::cut(std::unique_ptr<SearchStrategy> whole, std::size_t& limit,
                                               std::string_view template_hash,
                                               const std::vector<Configuration>& space) const {
  std::vector<std::size_t> owned;
  if (limit > 0) {
    for (const std::size_t index : whole->propose(limit)) {
      if (owns_configuration(template_hash, space.at(index).to_string())) owned.push_back(index);
    }
  }
  limit = owned.size();
  return std::make_unique<CutSearch>(std::move(whole), std::move(owned));
}

}  // namespace tiletune

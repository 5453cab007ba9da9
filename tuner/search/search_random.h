// The random numbers of the search strategies: a seeded 64-bit Mersenne Twister with its own
// integer and real draws and shuffle, because the standard distributions and std::shuffle may
// differ between standard libraries, and a strategy must propose the same configurations for the
// same seed wherever tiletune was built (a resumed tune replays its run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace tiletune {

class SearchRandom {
 public:
  explicit SearchRandom(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, count); count >= 1. Rejection keeps it unbiased.
  std::size_t below(std::size_t count) {
    const std::uint64_t n = count;
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t draw = engine_();
    while (draw >= limit) draw = engine_();
    return std::size_t(draw % n);
  }

  // Uniform in [0, 1), from the top 53 bits.
  double unit() { return double(engine_() >> 11) * 0x1.0p-53; }

  bool chance(double probability) { return unit() < probability; }

  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace tiletune

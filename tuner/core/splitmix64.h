// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014): a
// stateless 64-bit mix and the generator built on it. The same numbers on every machine and
// build, which std's engines and std::hash do not promise for distributions and hashes alike.
#pragma once

#include <cstdint>

namespace tiletune {

// The increment between states: 2^64 over the golden ratio, odd.
inline constexpr std::uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ull;

// The finalizer: spreads every input bit over every output bit.
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The next number of the sequence whose state is `state` (advanced).
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  return splitmix64_mix(state += kSplitMix64Gamma);
}

}  // namespace tiletune

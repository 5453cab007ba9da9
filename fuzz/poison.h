// The value every byte a kernel must not touch is filled with: a quiet NaN with a payload of its
// own, so a NaN that arithmetic produced (the canonical 0x7fffffff) is told apart from an untouched
// poison value by its bits.
#pragma once

#include <bit>
#include <cstdint>

namespace tiletune {

inline constexpr std::uint32_t kPoisonBits = 0x7fc0dead;

inline float poison_value() { return std::bit_cast<float>(kPoisonBits); }
inline bool is_poison(float value) { return std::bit_cast<std::uint32_t>(value) == kPoisonBits; }

}  // namespace tiletune

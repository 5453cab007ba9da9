// The value every byte a kernel must not touch is filled with: a quiet NaN with a payload of its
// own. On the GPU arithmetic turns any NaN into the canonical 0x7fffffff, so poison bits in C mean
// "never written"; on x86 a NaN keeps its payload through arithmetic, so there they may also mean
// "computed from poisoned memory". Either way the element fails.
#pragma once

#include <bit>
#include <cstdint>

namespace tiletune {

inline constexpr std::uint32_t kPoisonBits = 0x7fc0dead;

inline float poison_value() { return std::bit_cast<float>(kPoisonBits); }
inline bool is_poison(float value) { return std::bit_cast<std::uint32_t>(value) == kPoisonBits; }

}  // namespace tiletune

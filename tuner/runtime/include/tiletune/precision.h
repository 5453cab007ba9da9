// The arithmetic a kernel template declares (`// tiletune: precision fp32 | tf32 | tf32x3`), part
// of tiletune's public API (tiletune.h): the library serves a caller no template less accurate
// than it accepts. From the most accurate: fp32, tf32x3, tf32.
#pragma once

namespace tiletune {

enum class Precision {
  fp32,    // FP32 products and sums (FFMA)
  tf32,    // inputs rounded to TF32 (10 mantissa bits) on the tensor cores, FP32 accumulation
  tf32x3,  // each input split into a TF32 high and low part, three of the four products kept
};

}  // namespace tiletune

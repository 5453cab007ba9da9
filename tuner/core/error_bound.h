// How far an element of C = A * B computed in a declared precision may be from the exact product:
//
//     |c_ij - ref_ij| <= relative_error_bound(precision, K) * sum_k |a_ik| |b_kj|
//
// with ref in double. Every place that judges a result (the fuzz oracle on both backends, the
// full-shape verification on the GPU, bench) uses this one bound, so a template is held to the
// arithmetic it declares, no looser. The derivation is beside the code (error_bound.cpp).
//
// Small-integer inputs are judged bit-exactly whatever the precision: integers in [-8, 8] are
// exact in TF32, so their TF32 low parts are 0 and every partial sum is an exact FP32 integer.
#pragma once

#include <cstdint>

#include "tuner/core/precision.h"

namespace tiletune {

double relative_error_bound(Precision precision, std::int64_t k);

// The relative error of carrying one FP32 input in the precision, the unit errors are quoted in:
// fp32 2^-24 (its sums' unit roundoff), tf32 2^-11 (10 explicit mantissa bits, rounded to
// nearest), tf32x3 2^-22 (what a TF32 high and low part leave of an FP32 value).
double unit_roundoff(Precision precision);

// How far a computed C is from the exact product, in the bound's own terms: what bench prints for
// a template and for cuBLAS on the same inputs.
struct ResultError {
  double max_relative = 0;  // max over elements of |c - ref| / sum_k |a_ik||b_kj|
  double max_absolute = 0;  // max over elements of |c - ref|
};
// Over the m x n elements of C (leading dimension ldc) against the reference and the magnitudes
// sum_k |a_ik||b_kj|, both packed m x n. NaN or Inf in C makes both infinite; an element whose
// magnitude is 0 counts as relative error 0 when exact, else infinite.
ResultError result_error(const float* c, std::int64_t ldc, const double* reference,
                         const double* magnitude, std::int64_t m, std::int64_t n);

// FP32 to TF32 as cvt.rna.tf32.f32 does it: to nearest, ties away from zero, the low 13 mantissa
// bits cleared. NaN and Inf pass unchanged; a value that rounds past FP32's largest becomes Inf.
float round_to_tf32(float value);

}  // namespace tiletune

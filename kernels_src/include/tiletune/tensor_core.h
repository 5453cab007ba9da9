// <tiletune/tensor_core.h>: TF32 tensor-core operations for kernel templates, on the GPU (inline
// PTX, sm_80 and newer) and on tiletune's CPU backend (plain C++ over cuda_on_cpu.h's warp
// collectives). tiletune puts this text into every template that includes it (local_includes.h),
// so both compilers see it and a change to it is a new version of the template.
//
//   tt_tf32_round(x)               x rounded to TF32 as cvt.rna.tf32.f32 gives it
//   tt_mma_m16n8k8_tf32(d, a, b, c) D = A * B + C for one 16x8x8 tile, by a whole warp
//   tt_ldmatrix_x4(d, row)         four 8x4 matrices of 32-bit words from shared memory, by a
//                                  whole warp: lanes 8i to 8i + 7 name rows 0 to 7 of matrix i
//                                  (16 bytes each, 16-byte aligned), and lane l gets word l % 4 of
//                                  row l / 4 of matrix i in d[i] (ldmatrix .x4 .b16, whose two
//                                  16-bit halves per thread are one TF32 value here): with the
//                                  rows of A's fragment quadrants, d is that lane's a[0] to a[3]
#pragma once

// Fragment layouts of mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (PTX ISA, "Matrix
// Fragments for mma.m16n8k8"), with g = lane >> 2 and t = lane & 3:
//   a[0] = A[g][t], a[1] = A[g+8][t], a[2] = A[g][t+4], a[3] = A[g+8][t+4]      (A is 16 x 8)
//   b[0] = B[t][g], b[1] = B[t+4][g]                                           (B is 8 x 8)
//   c[0], d[0] = C[g][2t], [1] = C[g][2t+1], [2] = C[g+8][2t], [3] = C[g+8][2t+1]  (C is 16 x 8)

#if defined(__CUDA_ARCH__)

#if __CUDA_ARCH__ < 800
#error "<tiletune/tensor_core.h> needs sm_80 or newer: mma.sync m16n8k8 .tf32 and cvt.rna.tf32.f32"
#endif

// Rounds to TF32: to nearest, ties away from zero, the low 13 bits of the result zero.
__device__ __forceinline__ float tt_tf32_round(float x) {
  unsigned int r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

// Called by all 32 lanes of a warp together, converged. The tensor core reads the top 19 bits of
// each A and B element (sign, exponent, 10 mantissa bits): round them first with tt_tf32_round
// for round-to-nearest, or pass them as they are for truncation.
__device__ __forceinline__ void tt_mma_m16n8k8_tf32(float (&d)[4], const float (&a)[4],
                                                    const float (&b)[2], const float (&c)[4]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
        "r"(__float_as_uint(a[3])), "r"(__float_as_uint(b[0])), "r"(__float_as_uint(b[1])),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// Called by all 32 lanes of a warp together, converged; `row` points into shared memory.
__device__ __forceinline__ void tt_ldmatrix_x4(float (&d)[4], const float* row) {
  const unsigned int address = static_cast<unsigned int>(__cvta_generic_to_shared(row));
  unsigned int r[4];
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
  for (int i = 0; i < 4; ++i) d[i] = __uint_as_float(r[i]);
}

#elif defined(TT_CPU_ABI_VERSION)  // tiletune's CPU backend (cuda_on_cpu.h)

// cvt.rna.tf32.f32 as ptxas lowers it (FSETP.GEU |x|, +INF; @!P IADD x, 0x1000; LOP3 & 0xffffe000):
// a finite x gets half a TF32 ulp added to its bits, which carries into the exponent where it
// must (the largest floats become infinity), then the low 13 bits are cleared; infinity and NaN
// are only cleared, so a NaN whose payload lies in the low 13 bits alone becomes infinity.
inline float tt_tf32_round(float x) {
  unsigned int bits = __float_as_uint(x);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits += 0x1000u;
  return __uint_as_float(bits & 0xffffe000u);
}

struct tt_cpu_mma_fragments {
  float a[4], b[2], c[4];
};

// The TF32 value the tensor core reads from a float it is given: its top 19 bits (the low 13
// mantissa bits are ignored, which truncates a value that was not rounded).
inline double tt_cpu_tf32_operand(float x) {
  return (double)__uint_as_float(__float_as_uint(x) & 0xffffe000u);
}

// c + the 8 products of one element of D, as measured on Ampere tensor cores (Fasi, Higham,
// Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021): the products of
// TF32 values are exact (11 x 11 significand bits), all 9 terms are added in one fused operation
// without intermediate rounding, each term's bits below the largest term's exponent minus 26 (24
// bits of FP32 and 3 more) are truncated when it is aligned, and the sum is rounded toward zero
// to FP32. With small integer inputs every step is exact and this equals the GPU bit for bit;
// otherwise the GPU test reports the largest difference it sees.
// 2^e for a normal double's exponent (-1022 to 1023), without a call to ldexp.
inline double tt_cpu_power_of_two(int e) {
  const unsigned long long b = (unsigned long long)(e + 1023) << 52;
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

inline float tt_cpu_fused_dot8(const double (&products)[8], float c) {
  // Every term is 0 or a normal double (a product of two floats is): its exponent field tells all.
  double terms[9];
  bool nan = false, positive_inf = false, negative_inf = false, all_negative = true;
  int largest = -100000;  // frexp's exponent of the largest term
  for (int i = 0; i < 9; ++i) {
    terms[i] = i < 8 ? products[i] : (double)c;
    unsigned long long b;
    memcpy(&b, &terms[i], sizeof b);
    const int field = (int)(b >> 52 & 0x7ff);
    all_negative &= (b >> 63) != 0;
    if (field == 0x7ff) {
      nan |= (b & 0xfffffffffffffull) != 0;
      ((b >> 63) ? negative_inf : positive_inf) = true;
    } else if (field != 0 && field - 1022 > largest) {
      largest = field - 1022;
    }
  }
  if (nan || (positive_inf && negative_inf)) return __uint_as_float(0x7fffffffu);
  if (positive_inf) return INFINITY;
  if (negative_inf) return -INFINITY;
  if (largest == -100000) return all_negative ? -0.0f : 0.0f;  // as IEEE addition of zeros
  // Terms in units of 2^(largest - 27) (scaling by a power of 2 is exact): each truncated toward
  // zero by the conversion, the sum exact in 64 bits.
  const double scale = tt_cpu_power_of_two(27 - largest);
  long long sum = 0;
  for (int i = 0; i < 9; ++i) sum += (long long)(terms[i] * scale);
  if (sum == 0) return 0.0f;
  // Rounded toward zero to FP32, subnormals included (the exponent of the sum's top bit decides).
  const bool negative = sum < 0;
  unsigned long long magnitude =
      negative ? 0ull - (unsigned long long)sum : (unsigned long long)sum;
  const int top = 63 - __builtin_clzll(magnitude);  // the sum is magnitude * 2^(largest - 27)
  const int exponent = top + largest - 27;           // of its top bit
  int keep = 24;
  if (exponent < -126) keep = 24 - (-126 - exponent);  // subnormal: fewer bits
  if (keep <= 0) return negative ? -0.0f : 0.0f;
  if (top + 1 > keep) magnitude = (magnitude >> (top + 1 - keep)) << (top + 1 - keep);
  const double value = (double)magnitude * tt_cpu_power_of_two(largest - 27);
  const double largest_float = 3.4028234663852886e38;  // rounding toward zero never overflows
  const float result = value > largest_float ? (float)largest_float : (float)value;
  return negative ? -result : result;
}

// Runs once per warp-wide call, on the last lane to arrive, with every lane's fragments.
inline void tt_cpu_mma_m16n8k8_tf32_combine(tt_cpu_warp_call* const* lanes, unsigned int mask) {
  if (mask != 0xffffffffu) {
    tt_cpu_host_functions.trap("tt_mma_m16n8k8_tf32 needs all 32 lanes of the warp");
  }
  double A[16][8], B[8][8];
  float C[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const tt_cpu_mma_fragments& f = *(const tt_cpu_mma_fragments*)lanes[lane]->in;
    const int g = lane >> 2, t = lane & 3;
    A[g][t] = tt_cpu_tf32_operand(f.a[0]);
    A[g + 8][t] = tt_cpu_tf32_operand(f.a[1]);
    A[g][t + 4] = tt_cpu_tf32_operand(f.a[2]);
    A[g + 8][t + 4] = tt_cpu_tf32_operand(f.a[3]);
    B[t][g] = tt_cpu_tf32_operand(f.b[0]);
    B[t + 4][g] = tt_cpu_tf32_operand(f.b[1]);
    C[g][2 * t] = f.c[0];
    C[g][2 * t + 1] = f.c[1];
    C[g + 8][2 * t] = f.c[2];
    C[g + 8][2 * t + 1] = f.c[3];
  }
  for (int lane = 0; lane < 32; ++lane) {
    float* d = (float*)lanes[lane]->out;
    const int g = lane >> 2, t = lane & 3;
    const int rows[4] = {g, g, g + 8, g + 8}, columns[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; ++i) {
      double products[8];
      for (int k = 0; k < 8; ++k) products[k] = A[rows[i]][k] * B[k][columns[i]];
      d[i] = tt_cpu_fused_dot8(products, C[rows[i]][columns[i]]);
    }
  }
}

// A warp collective: every lane deposits its fragments, and once all 32 have arrived (at this
// call, told apart from others by its line) each gets its part of D.
inline void tt_mma_m16n8k8_tf32(float (&d)[4], const float (&a)[4], const float (&b)[2],
                                const float (&c)[4], unsigned int line = __builtin_LINE()) {
  const tt_cpu_mma_fragments in = {
      {a[0], a[1], a[2], a[3]}, {b[0], b[1]}, {c[0], c[1], c[2], c[3]}};
  float out[4];
  tt_cpu_warp_call call = {"tt_mma_m16n8k8_tf32", line, 0xffffffffu, &in, out,
                           &tt_cpu_mma_m16n8k8_tf32_combine};
  tt_cpu_warp_collective(&call);
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

// Runs once per warp-wide call, on the last lane to arrive, with every lane's row address.
inline void tt_cpu_ldmatrix_x4_combine(tt_cpu_warp_call* const* lanes, unsigned int mask) {
  if (mask != 0xffffffffu) {
    tt_cpu_host_functions.trap("tt_ldmatrix_x4 needs all 32 lanes of the warp");
  }
  for (int lane = 0; lane < 32; ++lane) {
    const float* row = *(const float* const*)lanes[lane]->in;
    if ((size_t)row % 16 != 0) {
      tt_cpu_host_functions.trap("tt_ldmatrix_x4: a lane names a row that is not 16-byte aligned");
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    float* d = (float*)lanes[lane]->out;
    for (int i = 0; i < 4; ++i) {
      const float* row = *(const float* const*)lanes[8 * i + lane / 4]->in;
      d[i] = row[lane % 4];
    }
  }
}

// A warp collective: every lane names its row, and once all 32 have arrived each gets its words.
inline void tt_ldmatrix_x4(float (&d)[4], const float* row, unsigned int line = __builtin_LINE()) {
  float out[4];
  tt_cpu_warp_call call = {"tt_ldmatrix_x4", line, 0xffffffffu, &row, out,
                           &tt_cpu_ldmatrix_x4_combine};
  tt_cpu_warp_collective(&call);
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

#else  // a host compiler pass outside tiletune (nvcc's host side): declarations only

__device__ float tt_tf32_round(float x);
__device__ void tt_mma_m16n8k8_tf32(float (&d)[4], const float (&a)[4], const float (&b)[2],
                                    const float (&c)[4]);
__device__ void tt_ldmatrix_x4(float (&d)[4], const float* row);

#endif

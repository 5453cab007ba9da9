// <tiletune/gemm_contract.h>: the BLAS contract beyond C = A * B, for templates that declare
// `// tiletune: supports ...` (README, "Writing a template"). Their entry takes one more parameter
// after ldc and after any tensor map (a template's maps keep their offsets):
//
//   extern "C" __global__ void NAME(const float* A, const float* B, float* C, int M, int N, int K,
//                                   int lda, int ldb, int ldc, const tt_gemm_args args)
//
// and computes, row-major, C = act(alpha * op(A) * op(B) + beta * C + bias) for each entry of a
// batch. op(A) is M x K: A as stored (M x K, lda apart) or, with op_a, transposed (stored K x M).
// op(B) is K x N: as stored (K x N) or, with op_b, transposed (stored N x K). tiletune launches
// the template's grid `batch` times over in z (gridDim.z = the grid's z * batch).
//
//   tt_batch_index(args)        this block's entry of the batch
//   tt_grid_z_index(args)       blockIdx.z within the template's own grid (a split-K slice)
//   tt_batch_a(A, args)         A, B and C of this block's entry
//   tt_op_a(A, lda, row, k, args)   element (row, k) of op(A), (k, col) of op(B): for kernels
//   tt_op_b(B, ldb, k, col, args)   whose transposes are a runtime choice
//   tt_epilogue(acc, c, col, args)  what to store at C's element *c of column col for the product
//                                   acc: beta = 0 never reads *c (C may hold NaN there)
//   tt_scale(acc, c, args)          tt_epilogue's two parts: alpha * acc + beta * C0, then
//   tt_activate(v, col, args)       the bias and the activation
//
// A template that compiles parts in (`// tiletune: specializes op_a op_b alpha beta batch epilogue`) is
// built once per combination a problem asks for, each build with the problem's values as macros:
//
//   TT_OP_A, TT_OP_B   1: op(A) / op(B) is transposed
//   TT_ALPHA           1: alpha != 1 (else the build never multiplies by it)
//   TT_BETA            1: beta != 0 (else the build never reads C)
//   TT_BATCH           1: batch != 1 (else the build has one entry: no strides to apply)
//   TT_EPILOGUE        the epilogue's code (TT_EPILOGUE_*)
//
// The plain build defines none of them, and they default to the plain problem's values here, so
// that the build tiletune tunes and records is the template's code without any of it. Branch on
// them with `if` (the compiler drops the dead side) and use tt_built_epilogue for what the build
// stores; the parts a template serves but does not specialize it reads from args as above.
#pragma once

// The epilogue's codes (tiletune::Epilogue): bit 0 adds the bias, the rest is the activation.
#define TT_EPILOGUE_NONE 0
#define TT_EPILOGUE_BIAS 1
#define TT_EPILOGUE_RELU 2
#define TT_EPILOGUE_BIAS_RELU 3
#define TT_EPILOGUE_GELU 4
#define TT_EPILOGUE_BIAS_GELU 5

#ifndef TT_OP_A
#define TT_OP_A 0
#endif
#ifndef TT_OP_B
#define TT_OP_B 0
#endif
#ifndef TT_ALPHA
#define TT_ALPHA 0
#endif
#ifndef TT_BETA
#define TT_BETA 0
#endif
#ifndef TT_BATCH
#define TT_BATCH 0
#endif
#ifndef TT_EPILOGUE
#define TT_EPILOGUE TT_EPILOGUE_NONE
#endif

// 56 bytes, 8-byte aligned, the same on the GPU and on the CPU backend (tiletune checks the
// entry's parameter layout against it).
struct tt_gemm_args {
  float alpha;
  float beta;
  const float* bias;  // N floats, added to every row of C; read only by a bias epilogue
  long long stride_a, stride_b, stride_c;  // elements between the entries of a batch
  int batch;
  int op_a, op_b;  // 0: as stored, 1: transposed
  int epilogue;    // TT_EPILOGUE_*
};

__device__ __forceinline__ int tt_batch_index(const tt_gemm_args& args) {
  return (int)(blockIdx.z / (gridDim.z / (unsigned)args.batch));
}
__device__ __forceinline__ int tt_grid_z_index(const tt_gemm_args& args) {
  return (int)(blockIdx.z % (gridDim.z / (unsigned)args.batch));
}
__device__ __forceinline__ const float* tt_batch_a(const float* A, const tt_gemm_args& args) {
  return A + (long long)tt_batch_index(args) * args.stride_a;
}
__device__ __forceinline__ const float* tt_batch_b(const float* B, const tt_gemm_args& args) {
  return B + (long long)tt_batch_index(args) * args.stride_b;
}
__device__ __forceinline__ float* tt_batch_c(float* C, const tt_gemm_args& args) {
  return C + (long long)tt_batch_index(args) * args.stride_c;
}

__device__ __forceinline__ float tt_op_a(const float* A, int lda, int row, int k,
                                         const tt_gemm_args& args) {
  return args.op_a ? A[(size_t)k * lda + row] : A[(size_t)row * lda + k];
}
__device__ __forceinline__ float tt_op_b(const float* B, int ldb, int k, int col,
                                         const tt_gemm_args& args) {
  return args.op_b ? B[(size_t)col * ldb + k] : B[(size_t)k * ldb + col];
}

// GELU in its tanh form, as cuBLASLt's epilogue: x/2 * (1 + tanh(y)), y = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x / (1 + 2^(-2y log2 e)), the same function: exp2f (2 units in the last place) and an
// approximate division (2 units; 0 where the divisor passes 2^126, where GELU is below 2^-126 |x|),
// fewer instructions than tanhf's. A store applies it to each element of a block's tile in
// unrolled code: with tanhf, tf32_wgmma_tma's bias_gelu build of 256 x 128 tiles was 139 KB of
// code (90 KB now), and on an H200 its GELU store took longer than its product (PERFORMANCE.md).
__device__ __forceinline__ float tt_gelu(float x) {
  // -2 log2(e) sqrt(2/pi), and that times 0.044715.
  const float t = x * (-2.302208198144325f + -0.10294324f * x * x);
  return __fdividef(x, 1.0f + exp2f(t));
}

// alpha * acc + beta * C0, reading C only where beta is not 0.
__device__ __forceinline__ float tt_scale(float acc, const float* c, const tt_gemm_args& args) {
  float v = args.alpha * acc;
  if (args.beta != 0.0f) v += args.beta * *c;
  return v;
}

// The bias, then the activation, of an element of column col.
__device__ __forceinline__ float tt_activate(float v, int col, const tt_gemm_args& args) {
  if (args.epilogue & TT_EPILOGUE_BIAS) v += args.bias[col];
  const int activation = args.epilogue >> 1;
  if (activation == 1) v = v > 0.0f ? v : 0.0f;
  if (activation == 2) v = tt_gelu(v);
  return v;
}

__device__ __forceinline__ float tt_epilogue(float acc, const float* c, int col,
                                             const tt_gemm_args& args) {
  return tt_activate(tt_scale(acc, c, args), col, args);
}

// The bias of column col in a build that adds one (else 0, and nothing read). A store that reads
// each of its columns' bias once, for all the rows it stores of the column, passes it to
// tt_built_epilogue_with_bias: C's stores might alias the bias, so the compiler cannot keep
// tt_built_epilogue's read of it from one element to the next.
__device__ __forceinline__ float tt_built_bias(int col, const tt_gemm_args& args) {
  return (TT_EPILOGUE & TT_EPILOGUE_BIAS) ? args.bias[col] : 0.0f;
}

// tt_built_epilogue with the element's column's bias already read (tt_built_bias).
__device__ __forceinline__ float tt_built_epilogue_with_bias(float acc, const float* c, float bias,
                                                             const tt_gemm_args& args) {
  float v = TT_ALPHA ? args.alpha * acc : acc;
  if (TT_BETA) v += args.beta * *c;
  if (TT_EPILOGUE & TT_EPILOGUE_BIAS) v += bias;
  if ((TT_EPILOGUE >> 1) == 1) v = v > 0.0f ? v : 0.0f;
  if ((TT_EPILOGUE >> 1) == 2) v = tt_gelu(v);
  return v;
}

// tt_epilogue as a build that specializes alpha, beta and the epilogue computes it: only what the
// build's macros ask for, the rest compiled away (the plain build stores acc).
__device__ __forceinline__ float tt_built_epilogue(float acc, const float* c, int col,
                                                   const tt_gemm_args& args) {
  return tt_built_epilogue_with_bias(acc, c, tt_built_bias(col, args), args);
}

/* tiletune's runtime library for C and other languages: the C++ API of <tiletune/tiletune.h>
 * behind opaque handles and status codes.
 *
 *   tiletune_library* lib;  tiletune_gemm* gemm;
 *   tiletune_problem p = {M, N, K, lda, ldb, ldc};     row-major C[MxN] = A[MxK] * B[KxN]
 *   if (tiletune_library_open("tiletune.db", TILETUNE_BACKEND_GPU, NULL, &lib) != TILETUNE_OK ||
 *       tiletune_gemm_get(lib, "warp_tiled", &gemm) != TILETUNE_OK ||
 *       tiletune_gemm_run(gemm, &p, A, B, C, stream) != TILETUNE_OK)
 *     fprintf(stderr, "%s\n", tiletune_last_error());
 *
 * The BLAS contract (transposes, alpha and beta, strided batches, epilogues) through
 * tiletune_contract_problem and tiletune_gemm_*_contract; cuBLAS's column-major SGEMM through
 * tiletune_blas_sgemm and tiletune_blas_sgemm_strided_batched (tiletune::Blas).
 *
 * C89 apart from <stdint.h>. Every function returns its status; nothing is thrown across it. On
 * failure tiletune_last_error() gives the one-line cause. Handles may be used from any thread.
 */
#ifndef TILETUNE_TILETUNE_C_H
#define TILETUNE_TILETUNE_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TILETUNE_C_API
#else
#define TILETUNE_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tiletune_status {
  TILETUNE_OK = 0,
  TILETUNE_INVALID_PROBLEM = 1,   /* a size < 1, a leading dimension too small, a null pointer */
  TILETUNE_NO_CONFIGURATION = 2,  /* no record (and no default) fits, or no such template */
  TILETUNE_ERROR = 3              /* anything else: a path, the GPU, a bad argument */
} tiletune_status;

typedef enum tiletune_backend {
  TILETUNE_BACKEND_GPU = 0,  /* device pointers, on a CUDA stream */
  TILETUNE_BACKEND_CPU = 1   /* host pointers: the same kernels on the CPU, for an application's CI */
} tiletune_backend;

/* Whose record chose the configuration (tiletune::GpuMatch). */
typedef enum tiletune_gpu_match {
  TILETUNE_GPU_MATCH_THIS_GPU = 0,
  TILETUNE_GPU_MATCH_SAME_COMPUTE_CAPABILITY = 1,
  TILETUNE_GPU_MATCH_SAME_ARCHITECTURE = 2,
  TILETUNE_GPU_MATCH_NONE = 3  /* a declared default */
} tiletune_gpu_match;

/* The arithmetic a template declares (tiletune::Precision), from the most accurate: FP32, 3xTF32,
 * TF32. */
typedef enum tiletune_precision {
  TILETUNE_PRECISION_FP32 = 0,   /* FP32 products and sums */
  TILETUNE_PRECISION_TF32 = 1,   /* inputs rounded to TF32 on the tensor cores, FP32 sums */
  TILETUNE_PRECISION_TF32X3 = 2  /* each input a TF32 high and low part, three products kept */
} tiletune_precision;

/* Opaque handles. A gemm keeps what it needs: it stays valid after its library is closed. */
typedef struct tiletune_library tiletune_library;
typedef struct tiletune_gemm tiletune_gemm;

/* Row-major C[M x N] = A[M x K] * B[K x N] in FP32; lda >= K, ldb >= N, ldc >= N. */
typedef struct tiletune_problem {
  int64_t M, N, K;
  int64_t lda, ldb, ldc;
} tiletune_problem;

/* op(X): X as stored, or its transpose (tiletune::Op). */
typedef enum tiletune_op { TILETUNE_OP_N = 0, TILETUNE_OP_T = 1 } tiletune_op;

/* What is applied to each element of C after alpha * op(A) * op(B) + beta * C (tiletune::Epilogue):
 * a bias (N floats added to every row), ReLU, GELU (tanh form), or a bias and then either. */
typedef enum tiletune_epilogue {
  TILETUNE_EPILOGUE_NONE = 0,
  TILETUNE_EPILOGUE_BIAS = 1,
  TILETUNE_EPILOGUE_RELU = 2,
  TILETUNE_EPILOGUE_BIAS_RELU = 3,
  TILETUNE_EPILOGUE_GELU = 4,
  TILETUNE_EPILOGUE_BIAS_GELU = 5
} tiletune_epilogue;

/* A problem of the whole BLAS contract (tiletune::Problem): row-major
 * C[M x N] = act(alpha * op(A) * op(B) + beta * C + bias), batch times over matrices stride_*
 * elements apart. op_a = T: A is stored K x M (lda >= M); op_b = T: B is stored N x K (ldb >= K).
 * A struct of its own, not fields added to tiletune_problem, whose layout compiled callers rely
 * on. Start from tiletune_contract_problem_of(p): its zero-initialised fields would mean alpha 0
 * and batch 0. */
typedef struct tiletune_contract_problem {
  tiletune_problem shape;  /* M, N, K, lda, ldb, ldc */
  tiletune_op op_a, op_b;
  float alpha, beta;       /* beta 0: C is never read */
  int64_t batch, stride_a, stride_b, stride_c;
  tiletune_epilogue epilogue;
} tiletune_contract_problem;

/* The plain problem C = A * B of `problem` as a contract problem: no transposes, alpha 1, beta 0,
 * one matrix, no epilogue. */
TILETUNE_C_API tiletune_contract_problem tiletune_contract_problem_of(tiletune_problem problem);

/* The sizes of tiletune_plan's text fields, terminating NUL included. */
#define TILETUNE_NAME_SIZE 256
#define TILETUNE_CONFIG_SIZE 1024
#define TILETUNE_WHY_SIZE 1024

/* What tiletune_gemm_run will do for a problem (tiletune::Plan), in fixed arrays. The names and
 * the configuration are never cut: one that does not fit makes tiletune_gemm_plan fail. `why` is
 * for people: a longer one is cut, ending in "...". */
typedef struct tiletune_plan {
  char template_name[TILETUNE_NAME_SIZE];
  char template_hash[TILETUNE_NAME_SIZE];  /* the template version */
  char config[TILETUNE_CONFIG_SIZE];       /* "BM=64,BN=128,BK=16,TM=8,TN=8,STAGES=2" */
  char gpu[TILETUNE_NAME_SIZE];            /* the GPU whose record it is ("" for a default) */
  tiletune_gpu_match gpu_match;
  int64_t recorded_M, recorded_N, recorded_K; /* the shape it was recorded at */
  int exact;                                /* recorded at this very shape on this very GPU */
  double expected_ms;                       /* 0: unknown */
  int fuzz_cases;                           /* random cases it passed when tuned (0: unknown) */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_shared_bytes;
  int zero_output;                          /* C is cleared before the kernel runs */
  tiletune_backend backend;
  char why[TILETUNE_WHY_SIZE];              /* one line: how the selection went */
} tiletune_plan;

/* "0.1.0" */
TILETUNE_C_API const char* tiletune_version(void);

/* The message of this thread's last failed call: one line naming its cause. "" when the last
 * call on this thread succeeded. Valid until the thread's next call into the library. */
TILETUNE_C_API const char* tiletune_last_error(void);

/* Opens a tiletune database (read only) or the folder of an exported bundle. gpu_name: select as
 * if this GPU were here ("NVIDIA H100 80GB HBM3"); NULL or "": the current GPU (on the CPU
 * backend, the GPU with the most records of the template). On success *library is a handle to
 * close; on failure it is NULL. */
TILETUNE_C_API tiletune_status tiletune_library_open(const char* path, tiletune_backend backend,
                                                     const char* gpu_name,
                                                     tiletune_library** library);
/* tiletune_library_open, serving also templates down to `lowest_precision` (fp32 > tf32x3 >
 * tf32): tiletune_library_open serves FP32 templates only, and tiletune_gemm_get of a template
 * below the lowest fails with TILETUNE_NO_CONFIGURATION. */
TILETUNE_C_API tiletune_status tiletune_library_open_with_precision(
    const char* path, tiletune_backend backend, const char* gpu_name,
    tiletune_precision lowest_precision, tiletune_library** library);
/* Closes a library (NULL: nothing). */
TILETUNE_C_API void tiletune_library_close(tiletune_library* library);

/* The current version of a recorded template. On success *gemm is a handle to release; on failure
 * it is NULL (TILETUNE_NO_CONFIGURATION: no such template). */
TILETUNE_C_API tiletune_status tiletune_gemm_get(const tiletune_library* library, const char* name,
                                                 tiletune_gemm** gemm);
/* Releases a gemm (NULL: nothing). */
TILETUNE_C_API void tiletune_gemm_release(tiletune_gemm* gemm);

/* The arithmetic the gemm's template declares, into *precision (every plan of it has it). */
TILETUNE_C_API tiletune_status tiletune_gemm_precision(const tiletune_gemm* gemm,
                                                       tiletune_precision* precision);

/* The configuration chosen for the problem, into *plan. */
TILETUNE_C_API tiletune_status tiletune_gemm_plan(const tiletune_gemm* gemm,
                                                  const tiletune_problem* problem,
                                                  tiletune_plan* plan);
/* The plan for people (tiletune::Plan::to_string, a few lines) into a caller-sized buffer, as
 * snprintf does: at most size - 1 characters and a NUL; *length (when not NULL) gets the full
 * length, so a buffer of *length + 1 holds all of it. */
TILETUNE_C_API tiletune_status tiletune_gemm_plan_text(const tiletune_gemm* gemm,
                                                       const tiletune_problem* problem,
                                                       char* buffer, size_t size, size_t* length);

/* Runs the plan's kernel. GPU backend: device pointers, enqueued on `stream` (a CUstream or
 * cudaStream_t; NULL: the default stream). CPU backend: host pointers; returns when C is written. */
TILETUNE_C_API tiletune_status tiletune_gemm_run(const tiletune_gemm* gemm,
                                                 const tiletune_problem* problem, const float* A,
                                                 const float* B, float* C, void* stream);

/* tiletune_gemm_plan and tiletune_gemm_run for a problem of the whole contract. `bias` (N floats,
 * on the same side as A, B and C) is given exactly when the epilogue adds one; otherwise NULL.
 * A template that does not serve the problem is TILETUNE_NO_CONFIGURATION, saying why. */
TILETUNE_C_API tiletune_status tiletune_gemm_plan_contract(const tiletune_gemm* gemm,
                                                           const tiletune_contract_problem* problem,
                                                           tiletune_plan* plan);
TILETUNE_C_API tiletune_status tiletune_gemm_run_contract(const tiletune_gemm* gemm,
                                                          const tiletune_contract_problem* problem,
                                                          const float* A, const float* B, float* C,
                                                          const float* bias, void* stream);

/* cublasSgemm and cublasSgemmStridedBatched without the handle: column-major, the same arguments
 * (transa, transb: 'N', 'n', 'T', 't', 'C', 'c'), checks and results, on the library's template
 * that expects the least time for the problem (tiletune::Blas, whose comment says what k = 0 and
 * tiletune's own limits do). An argument out of range is TILETUNE_INVALID_PROBLEM, the message
 * naming it as cuBLAS numbers it ("parameter number 4 (m = -1) ..."). */
TILETUNE_C_API tiletune_status tiletune_blas_sgemm(const tiletune_library* library, char transa,
                                                   char transb, int64_t m, int64_t n, int64_t k,
                                                   float alpha, const float* A, int64_t lda,
                                                   const float* B, int64_t ldb, float beta,
                                                   float* C, int64_t ldc, void* stream);
TILETUNE_C_API tiletune_status tiletune_blas_sgemm_strided_batched(
    const tiletune_library* library, char transa, char transb, int64_t m, int64_t n, int64_t k,
    float alpha, const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
    int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c, int64_t batch,
    void* stream);

#ifdef __cplusplus
}
#endif

#endif /* TILETUNE_TILETUNE_C_H */

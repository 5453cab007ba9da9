/* c_client: one tuned GEMM through tiletune's C API (<tiletune/tiletune_c.h>), checked against a
 * double-precision reference with the bound main.cpp explains.
 *
 *   c_client PATH [--cpu] [--kernel NAME]
 *
 * Exit 0: passed; 1: a wrong result or an error; 2: bad arguments. */
#include <tiletune/tiletune_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GEMM_CLIENT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* Runs the GEMM where the library runs it: host pointers on the CPU backend, device memory else. */
static tiletune_status run(const tiletune_gemm* gemm, const tiletune_problem* p, const float* A,
                           const float* B, float* C, int on_cpu) {
#ifdef GEMM_CLIENT_WITH_CUDA
  size_t a_size = (size_t)(p->M * p->lda), b_size = (size_t)(p->K * p->ldb);
  size_t c_size = (size_t)(p->M * p->ldc);
  float *dA = NULL, *dB = NULL, *dC = NULL;
  tiletune_status status = TILETUNE_ERROR;
  if (on_cpu) return tiletune_gemm_run(gemm, p, A, B, C, NULL);
  if (cudaMalloc((void**)&dA, a_size * sizeof(float)) == cudaSuccess &&
      cudaMalloc((void**)&dB, b_size * sizeof(float)) == cudaSuccess &&
      cudaMalloc((void**)&dC, c_size * sizeof(float)) == cudaSuccess &&
      cudaMemcpy(dA, A, a_size * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess &&
      cudaMemcpy(dB, B, b_size * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess &&
      cudaMemcpy(dC, C, c_size * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess) {
    status = tiletune_gemm_run(gemm, p, dA, dB, dC, NULL);
    if (status == TILETUNE_OK && (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(C, dC, c_size * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)) {
      fprintf(stderr, "c_client: the GEMM failed on the GPU: %s\n",
              cudaGetErrorString(cudaGetLastError()));
      status = TILETUNE_ERROR;
    }
  } else {
    fprintf(stderr, "c_client: device memory: %s\n", cudaGetErrorString(cudaGetLastError()));
  }
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  return status;
#else
  if (on_cpu) return tiletune_gemm_run(gemm, p, A, B, C, NULL);
  fprintf(stderr, "c_client: built without the CUDA runtime: only --cpu runs\n");
  return TILETUNE_ERROR;
#endif
}

int main(int argc, char** argv) {
  const char* path = NULL;
  const char* kernel = "warp_tiled";
  int on_cpu = 0, i, j, k, wrong = 0;
  tiletune_problem p = {123, 45, 67, 70, 50, 45}; /* no tile divides it; A and B are strided */
  tiletune_library* library = NULL;
  tiletune_gemm* gemm = NULL;
  tiletune_plan plan;
  float *A, *B, *C;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--cpu") == 0) on_cpu = 1;
    else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) kernel = argv[++i];
    else if (path == NULL && argv[i][0] != '-') path = argv[i];
    else {
      path = NULL;
      break;
    }
  }
  if (path == NULL) {
    fprintf(stderr, "usage: c_client PATH [--cpu] [--kernel NAME]\n");
    return 2;
  }
  if (tiletune_library_open(path, on_cpu ? TILETUNE_BACKEND_CPU : TILETUNE_BACKEND_GPU, NULL,
                            &library) != TILETUNE_OK ||
      tiletune_gemm_get(library, kernel, &gemm) != TILETUNE_OK ||
      tiletune_gemm_plan(gemm, &p, &plan) != TILETUNE_OK) {
    fprintf(stderr, "c_client: %s\n", tiletune_last_error());
    tiletune_library_close(library);
    return 1;
  }
  tiletune_library_close(library); /* the gemm keeps what it needs */
  printf("tiletune %s: %s on %s: %s (%s)\n", tiletune_version(), plan.template_name,
         plan.gpu[0] ? plan.gpu : "a default", plan.config, plan.why);

  A = malloc(sizeof(float) * (size_t)(p.M * p.lda));
  B = malloc(sizeof(float) * (size_t)(p.K * p.ldb));
  C = malloc(sizeof(float) * (size_t)(p.M * p.ldc));
  if (A == NULL || B == NULL || C == NULL) return 1;
  srand(1);
  for (i = 0; i < p.M * p.lda; ++i) A[i] = 2.0f * rand() / RAND_MAX - 1.0f;
  for (i = 0; i < p.K * p.ldb; ++i) B[i] = 2.0f * rand() / RAND_MAX - 1.0f;
  for (i = 0; i < p.M * p.ldc; ++i) C[i] = NAN; /* an element left unwritten fails */
  if (run(gemm, &p, A, B, C, on_cpu) != TILETUNE_OK) {
    if (tiletune_last_error()[0]) fprintf(stderr, "c_client: %s\n", tiletune_last_error());
    tiletune_gemm_release(gemm);
    return 1;
  }
  tiletune_gemm_release(gemm);

  for (i = 0; i < p.M; ++i) {
    for (j = 0; j < p.N; ++j) {
      double reference = 0, magnitude = 0, bound;
      for (k = 0; k < p.K; ++k) {
        double product = (double)A[i * p.lda + k] * B[k * p.ldb + j];
        reference += product;
        magnitude += fabs(product);
      }
      bound = p.K * ldexp(magnitude, -22) + 1e-37;
      if (!(fabs(C[i * p.ldc + j] - reference) <= bound) && wrong++ == 0) {
        printf("  C[%d][%d] = %.9g, expected %.9g\n", i, j, C[i * p.ldc + j], reference);
      }
    }
  }
  printf("%s %lldx%lldx%lld (%d elements wrong)\n", wrong ? "FAIL" : "PASS", (long long)p.M,
         (long long)p.N, (long long)p.K, wrong);
  free(A);
  free(B);
  free(C);
  return wrong ? 1 : 0;
}

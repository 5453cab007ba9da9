#include "tools/bench/cublas_sgemm.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <fmt/format.h>

namespace tiletune {

struct CublasSgemm::Library {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  // cublasGemmEx is overloaded in C++ (cudaDataType or the C API's): the C entry point's type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
  // The same for cublasGemmStridedBatchedEx.
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long, const void*, cudaDataType, int,
                                            long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t,
                                            cublasGemmAlgo_t) = nullptr;
};

namespace {

void check_cublas(int status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, status));
  }
}

const CublasSgemm::Library* load_cublas() {
  static const CublasSgemm::Library library = [] {
    void* so = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      if ((so = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (so == nullptr) throw std::runtime_error("cannot load cuBLAS (libcublas.so.13) for the yardstick");
    CublasSgemm::Library lib;
    lib.create = reinterpret_cast<decltype(lib.create)>(dlsym(so, "cublasCreate_v2"));
    lib.destroy = reinterpret_cast<decltype(lib.destroy)>(dlsym(so, "cublasDestroy_v2"));
    lib.set_stream = reinterpret_cast<decltype(lib.set_stream)>(dlsym(so, "cublasSetStream_v2"));
    lib.sgemm = reinterpret_cast<decltype(lib.sgemm)>(dlsym(so, "cublasSgemm_v2"));
    lib.sgemm_strided_batched = reinterpret_cast<decltype(lib.sgemm_strided_batched)>(
        dlsym(so, "cublasSgemmStridedBatched"));
    lib.set_math_mode = reinterpret_cast<decltype(lib.set_math_mode)>(dlsym(so,
                                                                            "cublasSetMathMode"));
    lib.gemm_ex = reinterpret_cast<decltype(lib.gemm_ex)>(dlsym(so, "cublasGemmEx"));
    lib.gemm_strided_batched_ex = reinterpret_cast<decltype(lib.gemm_strided_batched_ex)>(
        dlsym(so, "cublasGemmStridedBatchedEx"));
    if (!lib.create || !lib.destroy || !lib.set_stream || !lib.sgemm ||
        !lib.sgemm_strided_batched || !lib.set_math_mode || !lib.gemm_ex ||
        !lib.gemm_strided_batched_ex) {
      throw std::runtime_error("the cuBLAS library found lacks the SGEMM entry points");
    }
    return lib;
  }();
  return &library;
}

}  // namespace

CublasSgemm::CublasSgemm(Precision precision)
    : library_(load_cublas()), tf32_(precision == Precision::tf32) {
  cublasHandle_t handle = nullptr;
  check_cublas(library_->create(&handle), "cublasCreate");
  handle_ = handle;
  // The default math mode already keeps FP32; said here so that SGEMM never takes TF32 for it.
  check_cublas(library_->set_math_mode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

CublasSgemm::~CublasSgemm() { library_->destroy(static_cast<cublasHandle_t>(handle_)); }

void CublasSgemm::run(const GemmProblem& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                      CUstream stream) const {
  if (p.epilogue != Epilogue::none) {
    throw std::invalid_argument(fmt::format("cuBLAS's GEMM applies no epilogue ({})",
                                            to_string(p.epilogue)));
  }
  auto handle = static_cast<cublasHandle_t>(handle_);
  check_cublas(library_->set_stream(handle, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B comes first, transposed
  // as op_b says (row-major B stored K x N is column-major N x K, op(B)^T as it is), then A.
  const cublasOperation_t first_op = p.op_b == Op::t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t second_op = p.op_a == Op::t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = int(p.shape.n), n = int(p.shape.m), k = int(p.shape.k);
  const int lda = int(p.ldb), ldb = int(p.lda), ldc = int(p.ldc);
  const auto* first = reinterpret_cast<const float*>(b);
  const auto* second = reinterpret_cast<const float*>(a);
  auto* out = reinterpret_cast<float*>(c);
  if (tf32_ && p.batch == 1) {
    check_cublas(library_->gemm_ex(handle, first_op, second_op, m, n, k, &p.alpha, first,
                                   CUDA_R_32F, lda, second, CUDA_R_32F, ldb, &p.beta, out,
                                   CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_TF32,
                                   CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx(CUBLAS_COMPUTE_32F_FAST_TF32)");
  } else if (tf32_) {
    check_cublas(library_->gemm_strided_batched_ex(
                     handle, first_op, second_op, m, n, k, &p.alpha, first, CUDA_R_32F, lda,
                     p.stride_b, second, CUDA_R_32F, ldb, p.stride_a, &p.beta, out, CUDA_R_32F,
                     ldc, p.stride_c, int(p.batch), CUBLAS_COMPUTE_32F_FAST_TF32,
                     CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx(CUBLAS_COMPUTE_32F_FAST_TF32)");
  } else if (p.batch == 1) {
    check_cublas(library_->sgemm(handle, first_op, second_op, m, n, k, &p.alpha, first, lda,
                                 second, ldb, &p.beta, out, ldc),
                 "cublasSgemm");
  } else {
    check_cublas(library_->sgemm_strided_batched(handle, first_op, second_op, m, n, k, &p.alpha,
                                                 first, lda, p.stride_b, second, ldb, p.stride_a,
                                                 &p.beta, out, ldc, p.stride_c, int(p.batch)),
                 "cublasSgemmStridedBatched");
  }
}

}  // namespace tiletune

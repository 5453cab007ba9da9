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
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  // cublasGemmEx is overloaded in C++ (cudaDataType or the C API's): the C entry point's type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
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
    lib.set_math_mode = reinterpret_cast<decltype(lib.set_math_mode)>(dlsym(so,
                                                                            "cublasSetMathMode"));
    lib.gemm_ex = reinterpret_cast<decltype(lib.gemm_ex)>(dlsym(so, "cublasGemmEx"));
    if (!lib.create || !lib.destroy || !lib.set_stream || !lib.sgemm || !lib.set_math_mode ||
        !lib.gemm_ex) {
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
  auto handle = static_cast<cublasHandle_t>(handle_);
  check_cublas(library_->set_stream(handle, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, keep the strides.
  if (tf32_) {
    check_cublas(library_->gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(p.shape.n),
                                   int(p.shape.m), int(p.shape.k), &alpha,
                                   reinterpret_cast<const void*>(b), CUDA_R_32F, int(p.ldb),
                                   reinterpret_cast<const void*>(a), CUDA_R_32F, int(p.lda), &beta,
                                   reinterpret_cast<void*>(c), CUDA_R_32F, int(p.ldc),
                                   CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx(CUBLAS_COMPUTE_32F_FAST_TF32)");
    return;
  }
  check_cublas(library_->sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(p.shape.n), int(p.shape.m),
                               int(p.shape.k), &alpha, reinterpret_cast<const float*>(b),
                               int(p.ldb), reinterpret_cast<const float*>(a), int(p.lda), &beta,
                               reinterpret_cast<float*>(c), int(p.ldc)),
               "cublasSgemm");
}

}  // namespace tiletune

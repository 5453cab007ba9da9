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
    if (!lib.create || !lib.destroy || !lib.set_stream || !lib.sgemm) {
      throw std::runtime_error("the cuBLAS library found lacks the SGEMM entry points");
    }
    return lib;
  }();
  return &library;
}

}  // namespace

CublasSgemm::CublasSgemm() : library_(load_cublas()) {
  cublasHandle_t handle = nullptr;
  check_cublas(library_->create(&handle), "cublasCreate");
  handle_ = handle;
}

CublasSgemm::~CublasSgemm() { library_->destroy(static_cast<cublasHandle_t>(handle_)); }

void CublasSgemm::run(const GemmProblem& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                      CUstream stream) const {
  auto handle = static_cast<cublasHandle_t>(handle_);
  check_cublas(library_->set_stream(handle, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, keep the strides.
  check_cublas(library_->sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(p.shape.n), int(p.shape.m),
                               int(p.shape.k), &alpha, reinterpret_cast<const float*>(b),
                               int(p.ldb), reinterpret_cast<const float*>(a), int(p.lda), &beta,
                               reinterpret_cast<float*>(c), int(p.ldc)),
               "cublasSgemm");
}

}  // namespace tiletune

#include "tools/bench/cublaslt_matmul.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdint>
#include <type_traits>

#include <fmt/format.h>

namespace tiletune {

struct CublasLtMatmul::Library {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

struct CublasLtMatmul::Plan {
  const Library& lt;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t operation = nullptr;
  // Column-major: its A is our B, its B our A, and C and D are C^T.
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algorithm{};

  // Also when the constructor gave up half way.
  ~Plan() {
    for (cublasLtMatrixLayout_t layout : {first, second, out}) {
      if (layout != nullptr) lt.layout_destroy(layout);
    }
    if (operation != nullptr) lt.desc_destroy(operation);
    if (handle != nullptr) lt.destroy(handle);
  }
};

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CublasLtUnavailable(fmt::format("{}: cuBLAS status {}", what, int(status)));
  }
}

// Resolves every entry point, or throws CublasLtUnavailable; a failure is not kept, so that each
// problem's row says it again.
CublasLtMatmul::Library load_library() {
  void* so = nullptr;
  for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
    if ((so = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  }
  if (so == nullptr) throw CublasLtUnavailable("cannot load cuBLASLt (libcublasLt.so.13)");
  CublasLtMatmul::Library lib;
  const auto resolve = [so](auto& entry, const char* name) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(dlsym(so, name));
    if (entry == nullptr) {
      throw CublasLtUnavailable(fmt::format("the cuBLASLt library found lacks {}", name));
    }
  };
  resolve(lib.create, "cublasLtCreate");
  resolve(lib.destroy, "cublasLtDestroy");
  resolve(lib.desc_create, "cublasLtMatmulDescCreate");
  resolve(lib.desc_destroy, "cublasLtMatmulDescDestroy");
  resolve(lib.desc_set, "cublasLtMatmulDescSetAttribute");
  resolve(lib.layout_create, "cublasLtMatrixLayoutCreate");
  resolve(lib.layout_destroy, "cublasLtMatrixLayoutDestroy");
  resolve(lib.layout_set, "cublasLtMatrixLayoutSetAttribute");
  resolve(lib.preference_create, "cublasLtMatmulPreferenceCreate");
  resolve(lib.preference_destroy, "cublasLtMatmulPreferenceDestroy");
  resolve(lib.preference_set, "cublasLtMatmulPreferenceSetAttribute");
  resolve(lib.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(lib.matmul, "cublasLtMatmul");
  return lib;
}

const CublasLtMatmul::Library* library() {
  static const CublasLtMatmul::Library loaded = load_library();  // a throw leaves it unset
  return &loaded;
}

cublasLtEpilogue_t lt_epilogue(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  throw std::invalid_argument(fmt::format("no cuBLASLt epilogue for {}", int(epilogue)));
}

}  // namespace

CublasLtMatmul::CublasLtMatmul(const GemmProblem& p, CUdeviceptr bias, Precision precision)
    : library_(library()), problem_(p), workspace_(kWorkspaceBytes), plan_(std::make_unique<Plan>(*library_)) {
  const Library& lt = *library_;
  Plan& plan = *plan_;
  check_lt(lt.create(&plan.handle), "cublasLtCreate");
  const cublasComputeType_t compute =
      precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_lt(lt.desc_create(&plan.operation, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value,
                       const char* what) {
    check_lt(lt.desc_set(plan.operation, attribute, &value, sizeof value), what);
  };
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: its first operand is our B,
  // transposed as op_b says (row-major K x N is column-major N x K, op(B)^T as it is).
  const std::int32_t transa = p.op_b == Op::t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::int32_t transb = p.op_a == Op::t ? CUBLAS_OP_T : CUBLAS_OP_N;
  set(CUBLASLT_MATMUL_DESC_TRANSA, transa, "CUBLASLT_MATMUL_DESC_TRANSA");
  set(CUBLASLT_MATMUL_DESC_TRANSB, transb, "CUBLASLT_MATMUL_DESC_TRANSB");
  const std::uint32_t epilogue = lt_epilogue(p.epilogue);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "CUBLASLT_MATMUL_DESC_EPILOGUE");
  if (adds_bias(p.epilogue)) {
    // Lt's bias spans D's rows: in the column-major view D = C^T, whose rows are our N columns.
    // Its batch stride stays 0: one bias for every entry.
    const void* bias_pointer = reinterpret_cast<const void*>(bias);
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_pointer, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  }

  // Stored extents, column-major: row-major rows x columns (ld apart) is columns x rows.
  const auto layout = [&](cublasLtMatrixLayout_t& out, std::int64_t rows, std::int64_t columns,
                          std::int64_t ld, std::int64_t stride, const char* what) {
    check_lt(lt.layout_create(&out, CUDA_R_32F, std::uint64_t(columns), std::uint64_t(rows), ld),
             what);
    if (p.batch > 1) {
      const std::int32_t count = std::int32_t(p.batch);
      check_lt(lt.layout_set(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), what);
      check_lt(lt.layout_set(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                             sizeof stride),
               what);
    }
  };
  layout(plan.first, p.b_rows(), p.b_columns(), p.ldb, p.stride_b, "cuBLASLt's layout of B");
  layout(plan.second, p.a_rows(), p.a_columns(), p.lda, p.stride_a, "cuBLASLt's layout of A");
  layout(plan.out, p.shape.m, p.shape.n, p.ldc, p.stride_c, "cuBLASLt's layout of C");

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(lt.preference_create(&preference), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t workspace_bytes = kWorkspaceBytes;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = lt.preference_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &workspace_bytes, sizeof workspace_bytes);
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = lt.heuristic(plan.handle, plan.operation, plan.first, plan.second, plan.out,
                          plan.out, preference, 1, &result, &found);
  }
  lt.preference_destroy(preference);
  check_lt(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) {
    throw CublasLtUnavailable("cuBLASLt's heuristic offers no algorithm for the problem");
  }
  plan.algorithm = result.algo;
}

CublasLtMatmul::~CublasLtMatmul() = default;

void CublasLtMatmul::run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream) const {
  const Plan& plan = *plan_;
  // beta 0 or not, C and D are one matrix: cuBLASLt allows D in place of C with the same layout.
  check_lt(library_->matmul(plan.handle, plan.operation, &problem_.alpha,
                            reinterpret_cast<const void*>(b), plan.first,
                            reinterpret_cast<const void*>(a), plan.second, &problem_.beta,
                            reinterpret_cast<const void*>(c), plan.out, reinterpret_cast<void*>(c),
                            plan.out, &plan.algorithm, reinterpret_cast<void*>(workspace_.get()),
                            workspace_.bytes(), reinterpret_cast<cudaStream_t>(stream)),
           "cublasLtMatmul");
}

}  // namespace tiletune

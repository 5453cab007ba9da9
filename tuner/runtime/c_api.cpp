// The C API (include/tiletune/tiletune_c.h): the public C++ API behind opaque handles, written on
// tiletune.h alone. Every entry point catches everything: no exception crosses into C.
#include "tiletune/tiletune_c.h"

#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "tiletune/tiletune.h"

struct tiletune_library {
  tiletune::Library library;
  tiletune::Blas blas;  // its choices kept for the library's life
};

// A gemm holds its library too, so that it outlives tiletune_library_close.
struct tiletune_gemm {
  tiletune::Library library;
  tiletune::Gemm gemm;
};

namespace {

thread_local std::string last_error;

// Runs body, turning whatever it throws into a status and this thread's last error.
template <typename Body>
tiletune_status guarded(Body&& body) noexcept {
  try {
    last_error.clear();
    body();
    return TILETUNE_OK;
  } catch (const tiletune::InvalidProblem& error) {
    last_error = error.what();
    return TILETUNE_INVALID_PROBLEM;
  } catch (const tiletune::NoConfiguration& error) {
    last_error = error.what();
    return TILETUNE_NO_CONFIGURATION;
  } catch (const std::bad_alloc&) {
    last_error = "tiletune: out of memory";
    return TILETUNE_ERROR;
  } catch (const std::exception& error) {
    last_error = error.what();
    return TILETUNE_ERROR;
  } catch (...) {
    last_error = "tiletune: an unknown exception";
    return TILETUNE_ERROR;
  }
}

void require(const void* pointer, const char* function, const char* argument) {
  if (pointer == nullptr) {
    throw tiletune::Error(std::string(function) + ": " + argument + " is null");
  }
}

tiletune::Problem to_problem(const tiletune_problem& p) {
  return tiletune::Problem{p.M, p.N, p.K, p.lda, p.ldb, p.ldc};
}

tiletune::Op to_op(tiletune_op op, const char* function, const char* field) {
  if (op == TILETUNE_OP_N) return tiletune::Op::n;
  if (op == TILETUNE_OP_T) return tiletune::Op::t;
  throw tiletune::InvalidProblem(std::string(function) + ": " + field + " " +
                                 std::to_string(static_cast<int>(op)) + " is neither TILETUNE_OP_N nor TILETUNE_OP_T");
}

tiletune::Problem to_problem(const tiletune_contract_problem& p, const char* function) {
  tiletune::Problem problem = to_problem(p.shape);
  problem.op_a = to_op(p.op_a, function, "op_a");
  problem.op_b = to_op(p.op_b, function, "op_b");
  problem.alpha = p.alpha;
  problem.beta = p.beta;
  problem.batch = p.batch;
  problem.stride_a = p.stride_a;
  problem.stride_b = p.stride_b;
  problem.stride_c = p.stride_c;
  if (p.epilogue < TILETUNE_EPILOGUE_NONE || p.epilogue > TILETUNE_EPILOGUE_BIAS_GELU) {
    throw tiletune::InvalidProblem(std::string(function) + ": epilogue " +
                                   std::to_string(static_cast<int>(p.epilogue)) + " is none of TILETUNE_EPILOGUE_*");
  }
  static_assert(int(tiletune::Epilogue::bias_gelu) == TILETUNE_EPILOGUE_BIAS_GELU &&
                int(tiletune::Epilogue::relu) == TILETUNE_EPILOGUE_RELU);
  problem.epilogue = static_cast<tiletune::Epilogue>(p.epilogue);  // the same order
  return problem;
}

// Copies a name or configuration whole, or refuses: a cut one would name something else.
template <std::size_t size>
void copy_whole(char (&field)[size], const std::string& text, const char* what) {
  if (text.size() >= size) {
    throw tiletune::Error("tiletune_gemm_plan: the " + std::string(what) + " is " +
                        std::to_string(text.size()) + " characters, more than tiletune_plan holds (" +
                        std::to_string(size - 1) + "): " + text.substr(0, 60) + "...");
  }
  std::memcpy(field, text.c_str(), text.size() + 1);
}

// Copies text for people, cut to fit and marked "..." where it is.
template <std::size_t size>
void copy_cut(char (&field)[size], const std::string& text) {
  static_assert(size > 4);
  if (text.size() < size) {
    std::memcpy(field, text.c_str(), text.size() + 1);
    return;
  }
  std::memcpy(field, text.data(), size - 4);
  std::memcpy(field + size - 4, "...", 4);
}

tiletune_gpu_match to_c(tiletune::GpuMatch match) {
  switch (match) {
    case tiletune::GpuMatch::this_gpu: return TILETUNE_GPU_MATCH_THIS_GPU;
    case tiletune::GpuMatch::same_compute_capability:
      return TILETUNE_GPU_MATCH_SAME_COMPUTE_CAPABILITY;
    case tiletune::GpuMatch::same_architecture: return TILETUNE_GPU_MATCH_SAME_ARCHITECTURE;
    case tiletune::GpuMatch::none: return TILETUNE_GPU_MATCH_NONE;
  }
  return TILETUNE_GPU_MATCH_NONE;
}

tiletune_precision to_c(tiletune::Precision precision) {
  switch (precision) {
    case tiletune::Precision::fp32: return TILETUNE_PRECISION_FP32;
    case tiletune::Precision::tf32: return TILETUNE_PRECISION_TF32;
    case tiletune::Precision::tf32x3: return TILETUNE_PRECISION_TF32X3;
  }
  return TILETUNE_PRECISION_FP32;
}

tiletune::Precision from_c(tiletune_precision precision) {
  switch (precision) {
    case TILETUNE_PRECISION_FP32: return tiletune::Precision::fp32;
    case TILETUNE_PRECISION_TF32: return tiletune::Precision::tf32;
    case TILETUNE_PRECISION_TF32X3: return tiletune::Precision::tf32x3;
  }
  throw tiletune::Error("tiletune_library_open_with_precision: precision " +
                        std::to_string(static_cast<int>(precision)) +
                        " is none of TILETUNE_PRECISION_FP32, _TF32, _TF32X3");
}

void fill(tiletune_plan& out, const tiletune::Plan& plan) {
  copy_whole(out.template_name, plan.template_name, "template name");
  copy_whole(out.template_hash, plan.template_hash, "template hash");
  copy_whole(out.config, plan.config, "configuration");
  copy_whole(out.gpu, plan.gpu, "GPU name");
  out.gpu_match = to_c(plan.gpu_match);
  out.recorded_M = plan.recorded_M;
  out.recorded_N = plan.recorded_N;
  out.recorded_K = plan.recorded_K;
  out.exact = plan.exact ? 1 : 0;
  out.expected_ms = plan.expected_ms;
  out.fuzz_cases = plan.fuzz_cases;
  for (int i = 0; i < 3; ++i) {
    out.grid[i] = plan.grid[i];
    out.block[i] = plan.block[i];
  }
  out.dynamic_shared_bytes = plan.dynamic_shared_bytes;
  out.zero_output = plan.zero_output ? 1 : 0;
  out.backend = plan.backend == tiletune::Backend::cpu ? TILETUNE_BACKEND_CPU : TILETUNE_BACKEND_GPU;
  copy_cut(out.why, plan.why);
}

}  // namespace

extern "C" {

const char* tiletune_version(void) { return tiletune::version(); }

const char* tiletune_last_error(void) { return last_error.c_str(); }

tiletune_status tiletune_library_open_with_precision(const char* path, tiletune_backend backend,
                                                     const char* gpu_name,
                                                     tiletune_precision lowest_precision,
                                                     tiletune_library** library) {
  if (library != nullptr) *library = nullptr;
  return guarded([&] {
    require(library, "tiletune_library_open", "library");
    require(path, "tiletune_library_open", "path");
    if (backend != TILETUNE_BACKEND_GPU && backend != TILETUNE_BACKEND_CPU) {
      throw tiletune::Error("tiletune_library_open: backend " + std::to_string(static_cast<int>(backend)) +
                          " is neither TILETUNE_BACKEND_GPU nor TILETUNE_BACKEND_CPU");
    }
    tiletune::Options options;
    options.backend = backend == TILETUNE_BACKEND_CPU ? tiletune::Backend::cpu : tiletune::Backend::gpu;
    if (gpu_name != nullptr) options.gpu_name = gpu_name;
    options.lowest_precision = from_c(lowest_precision);
    const tiletune::Library opened = tiletune::Library::open(path, options);
    *library = new tiletune_library{opened, tiletune::Blas(opened)};
  });
}

tiletune_status tiletune_library_open(const char* path, tiletune_backend backend,
                                      const char* gpu_name, tiletune_library** library) {
  return tiletune_library_open_with_precision(path, backend, gpu_name, TILETUNE_PRECISION_FP32,
                                              library);
}

void tiletune_library_close(tiletune_library* library) { delete library; }

tiletune_status tiletune_gemm_get(const tiletune_library* library, const char* name,
                                  tiletune_gemm** gemm) {
  if (gemm != nullptr) *gemm = nullptr;
  return guarded([&] {
    require(gemm, "tiletune_gemm_get", "gemm");
    require(library, "tiletune_gemm_get", "library");
    require(name, "tiletune_gemm_get", "name");
    *gemm = new tiletune_gemm{library->library, library->library.gemm(name)};
  });
}

void tiletune_gemm_release(tiletune_gemm* gemm) { delete gemm; }

tiletune_status tiletune_gemm_precision(const tiletune_gemm* gemm, tiletune_precision* precision) {
  return guarded([&] {
    require(gemm, "tiletune_gemm_precision", "gemm");
    require(precision, "tiletune_gemm_precision", "precision");
    *precision = to_c(gemm->gemm.precision());
  });
}

tiletune_status tiletune_gemm_plan(const tiletune_gemm* gemm, const tiletune_problem* problem,
                                   tiletune_plan* plan) {
  return guarded([&] {
    require(gemm, "tiletune_gemm_plan", "gemm");
    require(problem, "tiletune_gemm_plan", "problem");
    require(plan, "tiletune_gemm_plan", "plan");
    tiletune_plan filled{};
    fill(filled, gemm->gemm.plan(to_problem(*problem)));
    *plan = filled;
  });
}

tiletune_status tiletune_gemm_plan_text(const tiletune_gemm* gemm, const tiletune_problem* problem,
                                        char* buffer, size_t size, size_t* length) {
  return guarded([&] {
    require(gemm, "tiletune_gemm_plan_text", "gemm");
    require(problem, "tiletune_gemm_plan_text", "problem");
    if (size > 0) require(buffer, "tiletune_gemm_plan_text", "buffer");
    const std::string text = gemm->gemm.plan(to_problem(*problem)).to_string();
    if (length != nullptr) *length = text.size();
    if (size == 0) return;
    const std::size_t copied = text.size() < size ? text.size() : size - 1;
    std::memcpy(buffer, text.data(), copied);
    buffer[copied] = '\0';
  });
}

tiletune_status tiletune_gemm_run(const tiletune_gemm* gemm, const tiletune_problem* problem,
                                  const float* A, const float* B, float* C, void* stream) {
  return guarded([&] {
    require(gemm, "tiletune_gemm_run", "gemm");
    require(problem, "tiletune_gemm_run", "problem");
    // A, B and C are checked by Gemm::run, which reports a null one as an invalid problem.
    gemm->gemm.run(to_problem(*problem), A, B, C, stream);
  });
}

tiletune_contract_problem tiletune_contract_problem_of(tiletune_problem problem) {
  return {problem, TILETUNE_OP_N, TILETUNE_OP_N, 1.0f, 0.0f, 1, 0, 0, 0, TILETUNE_EPILOGUE_NONE};
}

tiletune_status tiletune_gemm_plan_contract(const tiletune_gemm* gemm, const tiletune_contract_problem* problem,
                                            tiletune_plan* plan) {
  return guarded([&] {
    require(gemm, "tiletune_gemm_plan_contract", "gemm");
    require(problem, "tiletune_gemm_plan_contract", "problem");
    require(plan, "tiletune_gemm_plan_contract", "plan");
    tiletune_plan filled{};
    fill(filled, gemm->gemm.plan(to_problem(*problem, "tiletune_gemm_plan_contract")));
    *plan = filled;
  });
}

tiletune_status tiletune_gemm_run_contract(const tiletune_gemm* gemm, const tiletune_contract_problem* problem,
                                           const float* A, const float* B, float* C, const float* bias,
                                           void* stream) {
  return guarded([&] {
    require(gemm, "tiletune_gemm_run_contract", "gemm");
    require(problem, "tiletune_gemm_run_contract", "problem");
    // A, B, C and the bias are checked by Gemm::run, which reports them as an invalid problem.
    gemm->gemm.run(to_problem(*problem, "tiletune_gemm_run_contract"), A, B, C, stream, bias);
  });
}

tiletune_status tiletune_blas_sgemm(const tiletune_library* library, char transa, char transb, int64_t m,
                                    int64_t n, int64_t k, float alpha, const float* A, int64_t lda,
                                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                                    void* stream) {
  return guarded([&] {
    require(library, "tiletune_blas_sgemm", "library");
    library->blas.sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, stream);
  });
}

tiletune_status tiletune_blas_sgemm_strided_batched(const tiletune_library* library, char transa, char transb,
                                                    int64_t m, int64_t n, int64_t k, float alpha,
                                                    const float* A, int64_t lda, int64_t stride_a,
                                                    const float* B, int64_t ldb, int64_t stride_b, float beta,
                                                    float* C, int64_t ldc, int64_t stride_c, int64_t batch,
                                                    void* stream) {
  return guarded([&] {
    require(library, "tiletune_blas_sgemm_strided_batched", "library");
    library->blas.sgemm_strided_batched(transa, transb, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b,
                                        beta, C, ldc, stride_c, batch, stream);
  });
}

}  // extern "C"

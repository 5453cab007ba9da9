// The C API (tiletune_c.h) on the CPU backend, against the H100 fixture: statuses and messages for
// every kind of failure, plans in fixed arrays and caller-sized buffers, a gemm that outlives its
// library, and the thread-local last error. Nothing here may throw: a C caller could not catch it.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_folder.h"
#include "tests/support/tuned_fixture.h"
#include "tiletune/tiletune_c.h"

namespace {

// A database made from tests/fixtures/tuned/h100_kernels_src.sql, once per test.
std::string fixture_database() {
  using namespace tiletune::testing_support;
  return load_tuned_fixture(fresh_test_folder("c-api") / "h100.db")
      .string();
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fixture_database();
    ASSERT_EQ(tiletune_library_open(path_.c_str(), TILETUNE_BACKEND_CPU, nullptr, &library_),
              TILETUNE_OK)
        << tiletune_last_error();
  }
  void TearDown() override { tiletune_library_close(library_); }

  std::string path_;
  tiletune_library* library_ = nullptr;
};

TEST_F(CApi, PlansAndRunsAndTheResultMatchesAReference) {
  tiletune_gemm* gemm = nullptr;
  ASSERT_EQ(tiletune_gemm_get(library_, "warp_tiled", &gemm), TILETUNE_OK) << tiletune_last_error();
  const tiletune_problem p{37, 21, 19, 23, 25, 29};
  tiletune_plan plan;
  ASSERT_EQ(tiletune_gemm_plan(gemm, &p, &plan), TILETUNE_OK) << tiletune_last_error();
  EXPECT_STREQ(plan.template_name, "warp_tiled");
  EXPECT_STREQ(plan.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(plan.backend, TILETUNE_BACKEND_CPU);
  EXPECT_NE(std::string(plan.config).find("BM="), std::string::npos) << plan.config;
  EXPECT_EQ(plan.exact, 0);  // 37x21x19 was never tuned
  EXPECT_GT(plan.recorded_M, 0);
  EXPECT_GT(plan.fuzz_cases, 0);
  EXPECT_GT(plan.block[0] * plan.block[1] * plan.block[2], 0u);
  EXPECT_NE(std::string(plan.why).find("nearest"), std::string::npos) << plan.why;
  EXPECT_STREQ(tiletune_last_error(), "");

  std::vector<float> A(p.M * p.lda), B(p.K * p.ldb), C(p.M * p.ldc, NAN);
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = float(int(i % 7) - 3) / 4;
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = float(int(i % 5) - 2) / 2;
  ASSERT_EQ(tiletune_gemm_run(gemm, &p, A.data(), B.data(), C.data(), nullptr), TILETUNE_OK)
      << tiletune_last_error();
  for (int64_t i = 0; i < p.M; ++i) {
    for (int64_t j = 0; j < p.ldc; ++j) {
      double expected = 0;
      for (int64_t k = 0; k < p.K; ++k) expected += double(A[i * p.lda + k]) * B[k * p.ldb + j];
      // Quarters times halves, 19 of them: every partial sum is exact in float.
      if (j < p.N) ASSERT_EQ(C[i * p.ldc + j], expected) << i << "," << j;
      else ASSERT_TRUE(std::isnan(C[i * p.ldc + j])) << "padding written at " << i << "," << j;
    }
  }
  tiletune_gemm_release(gemm);
}

TEST_F(CApi, PlanTextFitsTheCallersBufferAndSaysItsFullLength) {
  tiletune_gemm* gemm = nullptr;
  ASSERT_EQ(tiletune_gemm_get(library_, "tiled", &gemm), TILETUNE_OK) << tiletune_last_error();
  const tiletune_problem p{100, 100, 100, 100, 100, 100};
  size_t length = 0;
  ASSERT_EQ(tiletune_gemm_plan_text(gemm, &p, nullptr, 0, &length), TILETUNE_OK);
  ASSERT_GT(length, 20u);
  std::vector<char> whole(length + 1, 'x');
  ASSERT_EQ(tiletune_gemm_plan_text(gemm, &p, whole.data(), whole.size(), nullptr), TILETUNE_OK);
  EXPECT_EQ(std::string(whole.data()).size(), length);
  EXPECT_NE(std::string(whole.data()).find("tiled"), std::string::npos) << whole.data();
  char cut[8];
  size_t cut_length = 0;
  ASSERT_EQ(tiletune_gemm_plan_text(gemm, &p, cut, sizeof cut, &cut_length), TILETUNE_OK);
  EXPECT_EQ(std::string(cut), std::string(whole.data(), 7));
  EXPECT_EQ(cut_length, length);
  tiletune_gemm_release(gemm);
}

TEST_F(CApi, AGemmOutlivesItsLibrary) {
  tiletune_gemm* gemm = nullptr;
  ASSERT_EQ(tiletune_gemm_get(library_, "tiled", &gemm), TILETUNE_OK) << tiletune_last_error();
  tiletune_library_close(library_);
  library_ = nullptr;
  const tiletune_problem p{3, 2, 1, 1, 2, 2};
  const float A[3] = {1, 2, 3}, B[2] = {4, 5};
  float C[6] = {};
  ASSERT_EQ(tiletune_gemm_run(gemm, &p, A, B, C, nullptr), TILETUNE_OK) << tiletune_last_error();
  EXPECT_EQ(C[0], 4);
  EXPECT_EQ(C[5], 15);
  tiletune_gemm_release(gemm);
}

TEST_F(CApi, EachFailureHasItsStatusAndOneLine) {
  tiletune_library* other = reinterpret_cast<tiletune_library*>(1);
  EXPECT_EQ(tiletune_library_open("/nonexistent/x.db", TILETUNE_BACKEND_CPU, nullptr, &other),
            TILETUNE_ERROR);
  EXPECT_EQ(other, nullptr);
  EXPECT_NE(std::string(tiletune_last_error()).find("/nonexistent/x.db"), std::string::npos)
      << tiletune_last_error();

  EXPECT_EQ(tiletune_library_open(nullptr, TILETUNE_BACKEND_CPU, nullptr, &other), TILETUNE_ERROR);
  EXPECT_STREQ(tiletune_last_error(), "tiletune_library_open: path is null");
  EXPECT_EQ(tiletune_library_open(path_.c_str(), static_cast<tiletune_backend>(7), nullptr, &other),
            TILETUNE_ERROR);
  EXPECT_NE(std::string(tiletune_last_error()).find("backend 7"), std::string::npos);

  tiletune_gemm* gemm = reinterpret_cast<tiletune_gemm*>(1);
  EXPECT_EQ(tiletune_gemm_get(library_, "no_such_template", &gemm), TILETUNE_NO_CONFIGURATION);
  EXPECT_EQ(gemm, nullptr);
  EXPECT_NE(std::string(tiletune_last_error()).find("no_such_template"), std::string::npos)
      << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm_get(nullptr, "tiled", &gemm), TILETUNE_ERROR);
  EXPECT_STREQ(tiletune_last_error(), "tiletune_gemm_get: library is null");

  ASSERT_EQ(tiletune_gemm_get(library_, "tiled", &gemm), TILETUNE_OK);
  const tiletune_problem empty{0, 4, 4, 4, 4, 4}, narrow{4, 4, 4, 3, 4, 4};
  tiletune_plan plan;
  EXPECT_EQ(tiletune_gemm_plan(gemm, &empty, &plan), TILETUNE_INVALID_PROBLEM);
  EXPECT_EQ(tiletune_gemm_plan(gemm, &narrow, &plan), TILETUNE_INVALID_PROBLEM);
  EXPECT_NE(std::string(tiletune_last_error()).find("lda"), std::string::npos)
      << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm_plan(gemm, nullptr, &plan), TILETUNE_ERROR);
  const tiletune_problem p{4, 4, 4, 4, 4, 4};
  float B[16] = {}, C[16] = {};
  EXPECT_EQ(tiletune_gemm_run(gemm, &p, nullptr, B, C, nullptr), TILETUNE_INVALID_PROBLEM);
  EXPECT_EQ(std::string(tiletune_last_error()).find('\n'), std::string::npos);
  tiletune_gemm_release(gemm);
  tiletune_gemm_release(nullptr);
  tiletune_library_close(nullptr);
}

TEST_F(CApi, TheLastErrorIsEachThreadsOwnAndClearedBySuccess) {
  tiletune_gemm* gemm = nullptr;
  EXPECT_EQ(tiletune_gemm_get(library_, "no_such_template", &gemm), TILETUNE_NO_CONFIGURATION);
  const std::string mine = tiletune_last_error();
  std::string theirs;
  std::thread([&] {
    theirs = tiletune_last_error();
    tiletune_gemm* g = nullptr;
    tiletune_gemm_get(nullptr, "tiled", &g);
  }).join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(tiletune_last_error(), mine);
  ASSERT_EQ(tiletune_gemm_get(library_, "tiled", &gemm), TILETUNE_OK);
  EXPECT_STREQ(tiletune_last_error(), "");
  tiletune_gemm_release(gemm);
  EXPECT_STREQ(tiletune_version(), "0.1.0");
}

TEST_F(CApi, BlasSgemmIsColumnMajorAndItsArgumentsAreCheckedAsCublasDoes) {
  // Column-major C (5 x 3, ldc 7) = A (5 x 4, lda 6) * B (4 x 3, ldb 4): the fixture's templates
  // serve the plain product it maps to.
  std::vector<float> A(6 * 4), B(4 * 3), C(7 * 3, NAN);
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = float(int(i % 7) - 3) / 4;
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = float(int(i % 5) - 2) / 2;
  ASSERT_EQ(tiletune_blas_sgemm(library_, 'N', 'N', 5, 3, 4, 1.0f, A.data(), 6, B.data(), 4, 0.0f, C.data(), 7,
                                nullptr),
            TILETUNE_OK)
      << tiletune_last_error();
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 7; ++i) {
      double expected = 0;
      for (int k = 0; k < 4; ++k) expected += double(A[i + k * 6]) * B[k + j * 4];
      if (i < 5) EXPECT_EQ(C[i + j * 7], expected) << i << "," << j;  // exact: quarters times halves
      else EXPECT_TRUE(std::isnan(C[i + j * 7])) << "padding written at " << i << "," << j;
    }
  }
  EXPECT_EQ(tiletune_blas_sgemm(library_, 'N', 'N', 5, 3, 4, 1.0f, A.data(), 4, B.data(), 4, 0.0f, C.data(), 7,
                                nullptr),
            TILETUNE_INVALID_PROBLEM);
  EXPECT_NE(std::string(tiletune_last_error()).find("parameter number 9 (lda = 4)"), std::string::npos)
      << tiletune_last_error();
  EXPECT_EQ(tiletune_blas_sgemm(nullptr, 'N', 'N', 5, 3, 4, 1.0f, A.data(), 6, B.data(), 4, 0.0f, C.data(), 7,
                                nullptr),
            TILETUNE_ERROR);
  EXPECT_STREQ(tiletune_last_error(), "tiletune_blas_sgemm: library is null");
}

TEST_F(CApi, StridedBatchedWithoutATemplateThatServesItIsNoConfigurationSayingWhy) {
  // The fixture's templates predate the BLAS contract: none serves a batch.
  std::vector<float> A(64, 1.0f), B(64, 1.0f), C(64, 5.0f);
  const std::vector<float> before = C;
  EXPECT_EQ(tiletune_blas_sgemm_strided_batched(library_, 'N', 'N', 2, 2, 2, 1.0f, A.data(), 2, 4, B.data(), 2, 4,
                                                0.0f, C.data(), 2, 4, 3, nullptr),
            TILETUNE_NO_CONFIGURATION);
  const std::string why = tiletune_last_error();
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_NE(why.find("no template serves"), std::string::npos) << why;
  EXPECT_NE(why.find("warp_tiled serves no batch=3"), std::string::npos) << why;
  EXPECT_EQ(C, before);
  EXPECT_EQ(tiletune_blas_sgemm_strided_batched(library_, 'N', 'N', 2, 2, 2, 1.0f, A.data(), 2, 4, B.data(), 2, 4,
                                                0.0f, C.data(), 2, 4, -1, nullptr),
            TILETUNE_INVALID_PROBLEM);
  EXPECT_NE(std::string(tiletune_last_error()).find("parameter number 18 (batchCount = -1)"), std::string::npos)
      << tiletune_last_error();
  // batch 0: nothing to do, nothing touched.
  EXPECT_EQ(tiletune_blas_sgemm_strided_batched(library_, 'N', 'N', 2, 2, 2, 1.0f, nullptr, 2, 4, nullptr, 2, 4,
                                                0.0f, C.data(), 2, 4, 0, nullptr),
            TILETUNE_OK);
  EXPECT_EQ(C, before);
}

TEST_F(CApi, AContractProblemPlansAndRunsAndItsFieldsAreChecked) {
  tiletune_gemm* gemm = nullptr;
  ASSERT_EQ(tiletune_gemm_get(library_, "tiled", &gemm), TILETUNE_OK) << tiletune_last_error();
  tiletune_contract_problem p = tiletune_contract_problem_of(tiletune_problem{3, 2, 1, 1, 2, 2});
  EXPECT_EQ(p.alpha, 1.0f);
  EXPECT_EQ(p.batch, 1);
  const float A[3] = {1, 2, 3}, B[2] = {4, 5};
  float C[6] = {};
  ASSERT_EQ(tiletune_gemm_run_contract(gemm, &p, A, B, C, nullptr, nullptr), TILETUNE_OK) << tiletune_last_error();
  EXPECT_EQ(C[5], 15);
  const float bias[2] = {1, 1};
  EXPECT_EQ(tiletune_gemm_run_contract(gemm, &p, A, B, C, bias, nullptr), TILETUNE_INVALID_PROBLEM);
  EXPECT_NE(std::string(tiletune_last_error()).find("a bias was given"), std::string::npos) << tiletune_last_error();
  p.op_a = static_cast<tiletune_op>(5);
  tiletune_plan plan;
  EXPECT_EQ(tiletune_gemm_plan_contract(gemm, &p, &plan), TILETUNE_INVALID_PROBLEM);
  EXPECT_STREQ(tiletune_last_error(), "tiletune_gemm_plan_contract: op_a 5 is neither TILETUNE_OP_N nor TILETUNE_OP_T");
  p.op_a = TILETUNE_OP_T;
  p.shape.lda = 3;
  EXPECT_EQ(tiletune_gemm_plan_contract(gemm, &p, &plan), TILETUNE_NO_CONFIGURATION);  // the fixture's tiled
  EXPECT_NE(std::string(tiletune_last_error()).find("serves no transposed A"), std::string::npos)
      << tiletune_last_error();
  tiletune_gemm_release(gemm);
}

}  // namespace

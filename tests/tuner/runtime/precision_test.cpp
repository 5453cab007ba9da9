// The declared precision through the runtime library's public APIs, C++ and C: a caller is never
// handed a template less accurate than Options::lowest_precision (fp32 by default), the plan says
// the precision it runs in, and a bundle keeps each template's precision for the library to check.
// CPU backend, on tests/tuner/runtime/precision_database.h's records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tiletune/tiletune.h>
#include <tiletune/tiletune_c.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_folder.h"
#include "tests/tuner/runtime/precision_database.h"
#include "tuner/core/error_bound.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using testing_support::fresh_test_folder;
using testing_support::kPrecisionShape;

Options cpu(Precision lowest = Precision::fp32) {
  Options options;
  options.backend = Backend::cpu;
  options.lowest_precision = lowest;
  return options;
}

std::string refusal(const Library& library, const std::string& name) {
  try {
    library.gemm(name);
  } catch (const NoConfiguration& e) {
    return e.what();
  }
  return "(served)";
}

class LibraryPrecision : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fresh_test_folder("library-precision");
    database_ = folder_ / "precision.db";
    testing_support::write_precision_database(database_);
  }

  // Exports the database into a bundle folder; false (the test skipped) without NVRTC.
  bool export_bundle(const std::filesystem::path& bundle) {
    const std::string command = std::string(TILETUNE_BINARY_DIR) + "/tools/tiletune export --db " +
                                database_.string() + " --out " + bundle.string() + " > " +
                                (folder_ / "export.log").string() + " 2>&1";
    if (std::system(command.c_str()) == 0) return true;
    std::ifstream log(folder_ / "export.log");
    std::stringstream text;
    text << log.rdbuf();
    if (text.str().find("NVRTC") == std::string::npos) ADD_FAILURE() << text.str();
    return false;
  }

  std::filesystem::path folder_, database_;
};

TEST_F(LibraryPrecision, ATemplateBelowTheLowestAcceptedIsRefusedInOneLineSayingHowToAcceptIt) {
  for (const Precision lowest : {Precision::fp32, Precision::tf32x3}) {
    const Library library = Library::open(database_.string(), cpu(lowest));
    const std::string why = refusal(library, "tf32_naive");
    EXPECT_THAT(why, HasSubstr("template tf32_naive declares precision tf32, below the lowest this "
                               "library accepts (" +
                               std::string(lowest == Precision::fp32 ? "fp32" : "tf32x3") + ")"));
    EXPECT_THAT(why, HasSubstr("Options::lowest_precision"));
    EXPECT_THAT(why, HasSubstr("to tf32 to accept it"));
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    // The FP32 template is served at any acceptance.
    EXPECT_EQ(library.gemm("naive").precision(), Precision::fp32);
  }
}

TEST_F(LibraryPrecision, AcceptingTf32ServesItAndItsPlanAndResultAreTf32s) {
  const Library library = Library::open(database_.string(), cpu(Precision::tf32));
  const Gemm gemm = library.gemm("tf32_naive");
  EXPECT_EQ(gemm.precision(), Precision::tf32);
  const Problem p = Problem::packed(kPrecisionShape.m, kPrecisionShape.n, kPrecisionShape.k);
  const Plan plan = gemm.plan(p);
  EXPECT_EQ(plan.precision, Precision::tf32);
  EXPECT_TRUE(plan.exact);
  EXPECT_THAT(plan.to_string(), HasSubstr("precision tf32"));
  EXPECT_THAT(library.gemm("naive").plan(p).to_string(), HasSubstr("precision fp32"));

  // Run on the CPU: every element within the tf32 bound, and some beyond fp32's (it is TF32).
  std::mt19937 generator(5);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  std::vector<float> a(std::size_t(p.M * p.K)), b(std::size_t(p.K * p.N));
  std::vector<float> c(std::size_t(p.M * p.N));
  for (float& x : a) x = value(generator);
  for (float& x : b) x = value(generator);
  gemm.run(p, a.data(), b.data(), c.data());
  double worst = 0;  // |c - ref| / sum |a||b|
  for (std::int64_t i = 0; i < p.M; ++i) {
    for (std::int64_t j = 0; j < p.N; ++j) {
      double sum = 0, magnitude = 0;
      for (std::int64_t k = 0; k < p.K; ++k) {
        const double product = double(a[i * p.K + k]) * b[k * p.N + j];
        sum += product;
        magnitude += std::fabs(product);
      }
      worst = std::max(worst, std::fabs(c[i * p.N + j] - sum) / magnitude);
    }
  }
  EXPECT_LE(worst, relative_error_bound(Precision::tf32, p.K));
  EXPECT_GT(worst, relative_error_bound(Precision::fp32, p.K));
}

TEST_F(LibraryPrecision, ABundleKeepsEachTemplatesPrecisionAndTheLibraryChecksIt) {
  const std::filesystem::path bundle = folder_ / "bundle";
  if (!export_bundle(bundle)) GTEST_SKIP() << "no NVRTC to export with";
  std::ifstream manifest_file(bundle / "manifest.json");
  nlohmann::json manifest = nlohmann::json::parse(manifest_file);
  manifest_file.close();
  std::map<std::string, std::string> precisions;
  for (const nlohmann::json& t : manifest.at("templates")) {
    precisions[t.at("name").get<std::string>()] = t.value("precision", "");
  }
  EXPECT_EQ(precisions["naive"], "fp32");
  EXPECT_EQ(precisions["tf32_naive"], "tf32");

  EXPECT_THAT(refusal(Library::open(bundle.string(), cpu()), "tf32_naive"),
              HasSubstr("declares precision tf32, below the lowest this library accepts (fp32)"));
  const Library accepting = Library::open(bundle.string(), cpu(Precision::tf32));
  EXPECT_EQ(accepting.gemm("tf32_naive").plan(Problem::packed(64, 64, 64)).precision,
            Precision::tf32);

  // A manifest that says otherwise than the source declares is refused when the bundle is opened.
  for (nlohmann::json& t : manifest.at("templates")) {
    if (t.at("name") == "tf32_naive") t["precision"] = "fp32";
  }
  std::ofstream(bundle / "manifest.json") << manifest.dump(2);
  try {
    Library::open(bundle.string(), cpu());
    ADD_FAILURE() << "a manifest contradicting its source was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("template tf32_naive has precision fp32, but its source "
                                    "declares tf32"));
  }
}

// The C API: tiletune_library_open keeps serving FP32 only (its signature unchanged), and
// tiletune_library_open_with_precision accepts lower precisions.
TEST_F(LibraryPrecision, TheCApiOpensWithALowestPrecisionAndSaysAGemmsPrecision) {
  tiletune_library* fp32_only = nullptr;
  ASSERT_EQ(tiletune_library_open(database_.c_str(), TILETUNE_BACKEND_CPU, nullptr, &fp32_only),
            TILETUNE_OK)
      << tiletune_last_error();
  tiletune_gemm* gemm = nullptr;
  EXPECT_EQ(tiletune_gemm_get(fp32_only, "tf32_naive", &gemm), TILETUNE_NO_CONFIGURATION);
  EXPECT_EQ(gemm, nullptr);
  EXPECT_THAT(tiletune_last_error(), HasSubstr("tiletune_library_open_with_precision"));
  ASSERT_EQ(tiletune_gemm_get(fp32_only, "naive", &gemm), TILETUNE_OK) << tiletune_last_error();
  tiletune_precision precision = TILETUNE_PRECISION_TF32;
  EXPECT_EQ(tiletune_gemm_precision(gemm, &precision), TILETUNE_OK);
  EXPECT_EQ(precision, TILETUNE_PRECISION_FP32);
  tiletune_gemm_release(gemm);
  tiletune_library_close(fp32_only);

  tiletune_library* accepting = nullptr;
  ASSERT_EQ(tiletune_library_open_with_precision(database_.c_str(), TILETUNE_BACKEND_CPU, nullptr,
                                                 TILETUNE_PRECISION_TF32, &accepting),
            TILETUNE_OK)
      << tiletune_last_error();
  ASSERT_EQ(tiletune_gemm_get(accepting, "tf32_naive", &gemm), TILETUNE_OK)
      << tiletune_last_error();
  EXPECT_EQ(tiletune_gemm_precision(gemm, &precision), TILETUNE_OK);
  EXPECT_EQ(precision, TILETUNE_PRECISION_TF32);
  const tiletune_problem p{64, 64, 64, 64, 64, 64};
  char text[2048];
  ASSERT_EQ(tiletune_gemm_plan_text(gemm, &p, text, sizeof text, nullptr), TILETUNE_OK);
  EXPECT_THAT(text, HasSubstr("precision tf32"));
  EXPECT_EQ(tiletune_gemm_precision(gemm, nullptr), TILETUNE_ERROR);
  tiletune_gemm_release(gemm);
  tiletune_library_close(accepting);

  tiletune_library* none = nullptr;
  EXPECT_EQ(tiletune_library_open_with_precision(database_.c_str(), TILETUNE_BACKEND_CPU, nullptr,
                                                 static_cast<tiletune_precision>(7), &none),
            TILETUNE_ERROR);
  EXPECT_EQ(none, nullptr);
  EXPECT_THAT(tiletune_last_error(), HasSubstr("precision 7 is none of"));
}

}  // namespace
}  // namespace tiletune

// The Evaluator over a Backend, in this process and on the CPU backend: the backends the factory
// opens by name, and an evaluation through every stage (build, fuzz, reference, verify, time),
// a contract violation refused as a compile error and a wrong kernel failing its fuzz.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/core/kernel_template.h"
#include "tuner/pipeline/backend_factory.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The CPU kernel cache the CLI tests share in the build folder (never the user's).
    const fs::path cache = fs::path(TILETUNE_BINARY_DIR) / "tests" / "tools" / "cpu-tune-cache";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  }

  static std::unique_ptr<Evaluator> cpu_evaluator() {
    BackendChoice choice;
    choice.kind = Backend::Kind::cpu;
    return open_evaluator(std::move(choice), SharedReferences());
  }

  static EvaluationRequest request_for(const KernelTemplate& tmpl, const std::string& config) {
    EvaluationRequest request;
    request.tmpl.name = tmpl.name;
    request.tmpl.source_hash = tmpl.source_hash;
    request.config = config;
    request.shape = {37, 29, 45};
    request.fuzz_settings.cases = 5;
    request.timing.min_runs = 2;
    request.timing.max_runs = 3;
    request.timing.warmup_runs = 1;
    return request;
  }

  // The stages an evaluation announced, each once, in order.
  std::vector<std::string> stages_;
  Evaluator::StageCallback record_stage() {
    return [this](const std::string& stage) { stages_.push_back(stage); };
  }
};

TEST_F(EvaluatorTest, TheFactoryOpensTheBackendNamed) {
  BackendChoice choice;
  choice.kind = parse_backend_kind("cpu");
  choice.ordinal = 2;
  const std::unique_ptr<Backend> backend = open_backend(std::move(choice));
  EXPECT_EQ(backend->kind(), Backend::Kind::cpu);
  EXPECT_EQ(backend->device().name, "CPU backend");
  EXPECT_EQ(backend->device().ordinal, 2);
  EXPECT_EQ(backend->device().arch(), "sm_90");
  EXPECT_EQ(backend->where(), "the CPU");
  EXPECT_EQ(backend->load_stage(), "build");
  EXPECT_EQ(parse_backend_kind("gpu"), Backend::Kind::gpu);
  EXPECT_STREQ(backend_kind_name(Backend::Kind::gpu), "gpu");
  try {
    parse_backend_kind("tpu");
    FAIL() << "an unknown backend was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown backend 'tpu' (gpu or cpu)"));
  }
}

TEST_F(EvaluatorTest, ACorrectConfigurationPassesEveryStageAndIsTimed) {
  const KernelTemplate tmpl = load_template(fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "tiled.cu");
  const std::unique_ptr<Evaluator> evaluator = cpu_evaluator();
  EXPECT_EQ(evaluator->device().name, "CPU backend");
  int cases = 0;
  const EvaluationOutcome outcome =
      evaluator->evaluate(tmpl, request_for(tmpl, "TILE=8,PAD=1,SWIZZLE=0"), record_stage(),
                          [&](const GemmCase&) { ++cases; });
  EXPECT_EQ(outcome.result.status, ResultStatus::ok) << outcome.result.detail;
  EXPECT_TRUE(outcome.fuzz_passed);
  EXPECT_GE(cases, 5);
  EXPECT_THAT(stages_, ElementsAre("build", "fuzz", "reference", "verify", "time"));
  EXPECT_GT(outcome.result.median_ms, 0);
  EXPECT_GT(outcome.result.tflops, 0);
  EXPECT_TRUE(evaluator->usable());
}

TEST_F(EvaluatorTest, AnEntryAgainstTheContractIsACompileErrorBeforeAnyCase) {
  const KernelTemplate tmpl =
      load_template(fs::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels" / "swapped_signature.cu");
  int cases = 0;
  const EvaluationOutcome outcome = cpu_evaluator()->evaluate(
      tmpl, request_for(tmpl, "BLOCK=8"), record_stage(), [&](const GemmCase&) { ++cases; });
  EXPECT_EQ(outcome.result.status, ResultStatus::compile_error);
  EXPECT_FALSE(outcome.fuzz_passed);
  EXPECT_EQ(cases, 0);
  EXPECT_THAT(stages_, ElementsAre("build"));
}

TEST_F(EvaluatorTest, AWrongKernelFailsItsFuzzWithAMinimalCaseAndIsNeverVerifiedOrTimed) {
  const KernelTemplate tmpl =
      load_template(fs::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels" / "floor_grid.cu");
  const EvaluationOutcome outcome = cpu_evaluator()->evaluate(
      tmpl, request_for(tmpl, "BLOCK_X=8,BLOCK_Y=4"), record_stage(), [](const GemmCase&) {});
  // Small shapes get no blocks at all (a launch the GPU refuses) or a C left partly unwritten.
  EXPECT_THAT(outcome.result.status, AnyOf(ResultStatus::wrong_result, ResultStatus::launch_error));
  EXPECT_THAT(outcome.result.detail, HasSubstr("minimal case: "));
  EXPECT_FALSE(outcome.fuzz_passed);
  EXPECT_THAT(stages_, ElementsAre("build", "fuzz"));
  EXPECT_EQ(outcome.result.median_ms, 0);
}

}  // namespace
}  // namespace tiletune

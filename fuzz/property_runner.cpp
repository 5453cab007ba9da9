#include "fuzz/property_runner.h"

#include <iostream>
#include <sstream>

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/Property.h>
#include <rapidcheck/detail/TestListener.h>

#include "fuzz/gemm_operands.h"

namespace tiletune {
namespace {

// RapidCheck's own listener prints to stderr; the report is ours to print.
class CountingListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (accepted) ++accepted_shrinks;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  int accepted_shrinks = 0;
};

// RapidCheck announces its global configuration on stderr the first time it is read; our reports
// carry their own seed, so that line is swallowed.
void load_rapidcheck_configuration_quietly() {
  static const bool loaded = [] {
    std::ostringstream sink;
    std::streambuf* saved = std::cerr.rdbuf(sink.rdbuf());
    rc::detail::configuration();
    std::cerr.rdbuf(saved);
    return true;
  }();
  (void)loaded;
}

// One case: returns the finding, or nothing when the kernel got it right.
std::optional<std::string> evaluate(GemmExecutor& executor, const GemmCase& gemm_case,
                                    FuzzVerdict& verdict) {
  const GemmOperands before = make_operands(gemm_case);
  GemmOperands after = before;
  try {
    executor.run(gemm_case, after);
  } catch (const RecoverableLaunchError& e) {
    // A sanitizer's report: the kernel is wrong on this case, and the backend can shrink it.
    verdict = FuzzVerdict::wrong_result;
    return e.what();
  } catch (const LaunchError& e) {
    verdict = FuzzVerdict::launch_error;
    return std::string("launch failed: ") + e.what();
  }
  if (auto finding = judge_launch(gemm_case, before, after)) {
    verdict = FuzzVerdict::wrong_result;
    return finding->to_string();
  }
  return std::nullopt;
}

}  // namespace

FuzzReport fuzz_configuration(GemmExecutor& executor, const Configuration& config,
                              const FuzzSettings& settings) {
  load_rapidcheck_configuration_quietly();
  const std::vector<std::int64_t> moduli = remainder_moduli(config);
  FuzzReport report;
  bool launches_broken = false;

  const auto property = [&] {
    const GemmCase gemm_case = *gen_gemm_case(moduli, settings.limits);
    // Once a launch error has poisoned the backend every later case would fail for that reason
    // alone; letting them pass keeps the first real failure as the reported one.
    if (launches_broken) return;
    FuzzVerdict verdict = FuzzVerdict::passed;
    if (auto finding = evaluate(executor, gemm_case, verdict)) {
      report.verdict = verdict;
      report.counterexample = gemm_case;  // shrinking only accepts failing cases: the last is minimal
      report.finding = *finding;
      if (verdict == FuzzVerdict::launch_error) launches_broken = true;
      RC_FAIL(*finding);
    }
  };

  rc::detail::TestParams params;
  params.seed = settings.seed;
  params.maxSuccess = settings.cases;
  params.disableShrinking = !settings.shrink;
  rc::detail::TestMetadata metadata;
  metadata.id = metadata.description = config.to_string();
  CountingListener listener;
  const rc::detail::TestResult result =
      rc::detail::checkProperty(rc::detail::toProperty(property), metadata, params, listener);

  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::Error error;
  if (result.match(success)) {
    report = FuzzReport{};
    report.cases_passed = success.numSuccess;
  } else if (result.match(failure)) {
    report.cases_passed = failure.numSuccess;
  } else if (result.match(error)) {
    report.verdict = FuzzVerdict::launch_error;
    report.finding = "the property itself failed: " + error.description;
  }
  report.shrink_steps = listener.accepted_shrinks;
  return report;
}

FuzzReport run_single_case(GemmExecutor& executor, const GemmCase& gemm_case) {
  FuzzReport report;
  if (auto finding = evaluate(executor, gemm_case, report.verdict)) {
    report.counterexample = gemm_case;
    report.finding = *finding;
  } else {
    report.cases_passed = 1;
  }
  return report;
}

}  // namespace tiletune

#include "fuzz/property_runner.h"

#include <exception>
#include <iostream>
#include <memory>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

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

constexpr std::string_view kCannotRun = "cannot run this case: ";

// One case: returns the finding, or nothing when the kernel got it right. Whatever the case
// throws is a finding: a case that cannot be run proves nothing about the configuration.
// The reference is `reference` when given, else the cache's when there is one, else the judge's.
std::optional<std::string> run_and_judge(GemmExecutor& executor, const GemmCase& gemm_case,
                                         Precision precision, FuzzVerdict& verdict,
                                         const ReferenceTable* reference, ReferenceCache* cache) {
  try {
    const GemmOperands before = make_operands(gemm_case);
    GemmOperands after = before;
    executor.run(gemm_case, after);
    std::shared_ptr<const ReferenceTable> cached;
    if (!reference && cache && gemm_case.problem.plain()) {  // tables are of plain problems
      cached = cache->get(gemm_case, before);
      reference = cached.get();
    }
    if (auto finding = judge_launch(gemm_case, precision, before, after, reference)) {
      verdict = FuzzVerdict::wrong_result;
      return finding->to_string();
    }
  } catch (const RecoverableLaunchError& e) {
    // A sanitizer's report: the kernel is wrong on this case, and the backend can shrink it.
    verdict = FuzzVerdict::wrong_result;
    return e.what();
  } catch (const LaunchError& e) {
    verdict = FuzzVerdict::launch_error;
    return std::string("launch failed: ") + e.what();
  } catch (const UnsupportedOnBackend&) {
    throw;  // about the backend, not the configuration: the caller skips it
  } catch (const std::exception& e) {  // e.g. the launch geometry of a zero-sized grid
    verdict = FuzzVerdict::cannot_run;
    return std::string(kCannotRun) + e.what();
  } catch (...) {
    verdict = FuzzVerdict::cannot_run;
    return std::string(kCannotRun) + "an exception that is not a std::exception";
  }
  return std::nullopt;
}

// The same, the finding followed by how the backend ran the case where it says (case_note).
std::optional<std::string> evaluate(GemmExecutor& executor, const GemmCase& gemm_case,
                                    Precision precision, FuzzVerdict& verdict,
                                    const ReferenceTable* reference = nullptr,
                                    ReferenceCache* cache = nullptr) {
  std::optional<std::string> finding =
      run_and_judge(executor, gemm_case, precision, verdict, reference, cache);
  if (finding) {
    if (const std::string note = executor.case_note(gemm_case); !note.empty()) {
      *finding += " (" + note + ")";
    }
  }
  return finding;
}

}  // namespace

void settle_verdict(const rc::detail::TestResult& result, const FuzzSettings& settings,
                    FuzzReport& report) {
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (result.match(success)) {
    report = FuzzReport{};
    report.cases_passed = success.numSuccess;
    if (success.numSuccess < settings.cases) {
      report.verdict = FuzzVerdict::too_few_cases;
      report.finding = fmt::format("only {} of {} cases ran", success.numSuccess, settings.cases);
    }
  } else if (result.match(failure)) {
    report.cases_passed = failure.numSuccess;
    if (report.verdict == FuzzVerdict::passed) {
      // The property failed outside the case's evaluation (its generator): never a pass.
      report.verdict = FuzzVerdict::cannot_run;
      report.finding = std::string(kCannotRun) + failure.description;
    }
  } else if (result.match(gave_up)) {
    report = FuzzReport{};
    report.cases_passed = gave_up.numSuccess;
    report.verdict = FuzzVerdict::too_few_cases;
    report.finding = fmt::format("only {} of {} cases ran: {}", gave_up.numSuccess, settings.cases,
                                 gave_up.description);
  } else if (result.match(error)) {
    report = FuzzReport{};
    report.verdict = FuzzVerdict::cannot_run;
    report.finding = "the property itself failed: " + error.description;
  }
}

FuzzReport fuzz_configuration(GemmExecutor& executor, const Configuration& config,
                              Precision precision, const FuzzSettings& settings,
                              const CaseRequirements& requirements, ReferenceCache* references) {
  load_rapidcheck_configuration_quietly();
  if (references) references->next_configuration();
  const std::vector<std::int64_t> moduli = remainder_moduli(config);
  FuzzReport report;
  std::optional<GemmProblem> admissible;
  if (!requirements.empty()) {
    admissible = requirements.find_admissible();
    if (!admissible) {
      report.verdict = FuzzVerdict::too_few_cases;
      report.finding = requirements.why_none();
      return report;
    }
  }
  bool launches_broken = false;
  std::exception_ptr unsupported;  // RapidCheck takes what a property throws for a failure

  const auto property = [&] {
    const GemmCase gemm_case = *gen_gemm_case(moduli, settings.limits, requirements, admissible);
    // Once a launch error has poisoned the backend every later case would fail for that reason
    // alone; letting them pass keeps the first real failure as the reported one.
    if (launches_broken) return;
    FuzzVerdict verdict = FuzzVerdict::passed;
    std::optional<std::string> finding;
    try {
      finding = evaluate(executor, gemm_case, precision, verdict, nullptr, references);
    } catch (const UnsupportedOnBackend& e) {
      unsupported = std::current_exception();
      launches_broken = true;
      RC_FAIL(e.what());
    }
    if (finding) {
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
  if (unsupported) std::rethrow_exception(unsupported);
  settle_verdict(result, settings, report);
  report.shrink_steps = listener.accepted_shrinks;
  return report;
}

FuzzReport run_single_case(GemmExecutor& executor, const GemmCase& gemm_case, Precision precision,
                           const ReferenceTable* reference) {
  FuzzReport report;
  if (auto finding = evaluate(executor, gemm_case, precision, report.verdict, reference)) {
    report.counterexample = gemm_case;
    report.finding = *finding;
  } else {
    report.cases_passed = 1;
  }
  return report;
}

}  // namespace tiletune

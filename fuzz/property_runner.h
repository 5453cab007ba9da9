// Runs the GEMM property on one configuration with RapidCheck: random cases from
// case_generator.h, each judged by gemm_oracle.h; on a failure RapidCheck shrinks the case to a
// minimal one, which the report carries with its finding and the arguments that replay it.
//
// A pass means every case asked for ran and passed: a case that cannot be run (the template's
// geometry fails for a shape it accepts, anything thrown but a launch error) fails the
// configuration like a wrong result, and so does running fewer cases than asked.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <rapidcheck/detail/Results.h>

#include "fuzz/case_generator.h"
#include "fuzz/gemm_executor.h"
#include "fuzz/gemm_oracle.h"
#include "fuzz/reference_cache.h"

namespace tiletune {

struct FuzzSettings {
  int cases = 100;
  std::uint64_t seed = 0;
  bool shrink = true;
  CaseLimits limits;
  // A template that compiles parts of the contract in (`specializes`): the builds of a
  // configuration beyond the plain one that its fuzz runs, each with `cases` cases, drawn per
  // configuration from the seed; -1: every build.
  int extra_builds = 1;
  // Where not empty: exactly these builds, instead (those the configuration has).
  std::vector<Specialization> builds;
};

enum class FuzzVerdict {
  passed,
  wrong_result,
  launch_error,
  cannot_run,     // a case the configuration accepts could not be run: "cannot run this case: ..."
  too_few_cases,  // fewer cases ran than asked (none meets the requirements, RapidCheck gave up)
};

struct FuzzReport {
  FuzzVerdict verdict = FuzzVerdict::passed;
  int cases_passed = 0;
  int shrink_steps = 0;
  std::optional<GemmCase> counterexample;  // the minimal failing case
  std::string finding;                     // what was wrong with it
};

// Cases meet `requirements` (the template's, for this configuration; none by default) and are
// judged by the bound of `precision`, the template's declared arithmetic. `references`, when
// given, keeps the cases' references for the next configuration that draws the same cases.
FuzzReport fuzz_configuration(GemmExecutor& executor, const Configuration& config,
                              Precision precision, const FuzzSettings& settings,
                              const CaseRequirements& requirements = {},
                              ReferenceCache* references = nullptr);

// How RapidCheck's result settles a report filled in by the property: passed only on success
// with every case asked for. Apart for its tests: RapidCheck's give-up and error results are hard
// to provoke.
void settle_verdict(const rc::detail::TestResult& result, const FuzzSettings& settings,
                    FuzzReport& report);

// Runs one case once (the replay of a reported counterexample), judged against `reference` when
// it is given (compute_reference of the case's operands, made once for many launches).
FuzzReport run_single_case(GemmExecutor& executor, const GemmCase& gemm_case, Precision precision,
                           const ReferenceTable* reference = nullptr);

}  // namespace tiletune

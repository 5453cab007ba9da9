// Runs the GEMM property on one configuration with RapidCheck: random cases from
// case_generator.h, each judged by gemm_oracle.h; on a failure RapidCheck shrinks the case to a
// minimal one, which the report carries with its finding and the arguments that replay it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fuzz/case_generator.h"
#include "fuzz/gemm_executor.h"
#include "fuzz/gemm_oracle.h"

namespace tiletune {

struct FuzzSettings {
  int cases = 100;
  std::uint64_t seed = 0;
  bool shrink = true;
  CaseLimits limits;
};

enum class FuzzVerdict { passed, wrong_result, launch_error };

struct FuzzReport {
  FuzzVerdict verdict = FuzzVerdict::passed;
  int cases_passed = 0;
  int shrink_steps = 0;
  std::optional<GemmCase> counterexample;  // the minimal failing case
  std::string finding;                     // what was wrong with it
};

FuzzReport fuzz_configuration(GemmExecutor& executor, const Configuration& config,
                              const FuzzSettings& settings);

// Runs one case once (the replay of a reported counterexample).
FuzzReport run_single_case(GemmExecutor& executor, const GemmCase& gemm_case);

}  // namespace tiletune

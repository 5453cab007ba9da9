// Mutation testing of the fuzzer itself: a suite file plants known bugs into a real template, and
// every mutant must be rejected by the fuzzer, or the fuzzer has a blind spot.
//
// A suite is a JSON file beside its template (paths relative to the suite file):
//
//   { "template": "../../kernels_src/tiled.cu",
//     "mutants": [
//       { "name": "missing_store_mask",
//         "bug": "C is stored without the M/N mask",
//         "replace": [ { "from": "if (row < M && col < N) {", "to": "{" } ],
//         "where": "SWIZZLE",                      (optional: the configurations the bug is live in)
//         "build": "op_b=t beta",                  (optional: the build it is live in, of a template
//                                                   that specializes parts of the contract)
//         "gpu_only": "needs matrices over 2^31 elements" } ] }  (optional: why the CPU cannot)
//
// Mutants are edits of the shipped source rather than copies of it, so they follow the template as
// it changes; an edit whose text is no longer found exactly once is an error, not a silent pass.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/core/expression.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// A suite that cannot be read or applied, with the suite's path in front of the message.
class MutantSuiteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SourceEdit {
  std::string from, to;
};

struct Mutant {
  std::string name;  // unique within its suite
  std::string bug;   // one line, for reports
  std::vector<SourceEdit> edits;
  std::optional<Expression> where;  // absent: live in every configuration
  std::optional<Specialization> build;  // fuzzed beside the plain build; absent: drawn ones
  std::string gpu_only;             // non-empty: why the CPU backend cannot catch it

  // The template's configurations in which the planted bug is live: `where` holds, and the
  // configuration has the build (a requirement of the parts may leave it out).
  bool live_in(const KernelTemplate& original, const Configuration& config) const;
};

struct MutantSuite {
  std::filesystem::path path;
  KernelTemplate original;
  std::vector<Mutant> mutants;

  // The original with the mutant's edits applied, named "<template>~<mutant>". Throws
  // MutantSuiteError when an edit's text is not found exactly once.
  KernelTemplate apply(const Mutant& mutant) const;
  // Throws MutantSuiteError naming the unknown mutant.
  const Mutant& find(const std::string& name) const;
};

// Reads the suite and its template, and checks that every mutant applies and compiles as a
// template declaration. Throws MutantSuiteError (also for a bad template, with its cause).
MutantSuite load_mutant_suite(const std::filesystem::path& path);

}  // namespace tiletune

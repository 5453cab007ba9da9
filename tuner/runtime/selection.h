// Which recorded configuration runs a problem: the one rule of the runtime library and of
// `tiletune query`.
//
// GPUs are tried in order: this GPU's records (or the GPU named in the options), then those of
// another GPU of the same compute capability, then of the same architecture (major compute
// capability); a step whose records have nothing that fits goes on to the next. Within a GPU's
// records, the exact shape's configurations are tried fastest first, then those of the other
// recorded shapes: the configuration the GPU's performance model (performance_model.h) predicts
// fastest at the problem's shape, of those whose requirements hold for the problem (leading
// dimensions included) and whose tuning limits (`tune_if`) admit the shape, unless the
// configuration was measured outside them too; where the model predicts nothing, those of the
// nearest recorded shape (log_distance, gemm_shape.h), fastest first, the first whose
// requirements hold. Beyond requirements, a configuration must have the build of the problem's part
// of the BLAS contract (KernelTemplate::unsupported), and one that adds into C (split-K) counts the
// pass over C that the problem's beta or epilogue costs it (epilogue_pass_ms). Nothing fits: the declared
// default, else NoSelection. Every tie is broken by names and texts, so the
// same records and problem always give the same answer.
#pragma once

#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tuner/core/precision.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::runtime {

// Nothing recorded fits and there is no default: the message says what was looked for and why
// each step found nothing, in one line.
class NoSelection : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class GpuStep { this_gpu, same_compute_capability, same_architecture, default_config };

struct GpuIdentity {
  std::string name;
  int cc_major = 0, cc_minor = 0;
};

struct SelectionRequest {
  std::string template_name;
  GemmProblem problem;
  // The GPU the kernel runs on; none on the CPU backend.
  std::optional<GpuIdentity> here;
  // Options::gpu_name: select as if this GPU were here (its compute capability is read from the
  // records); empty: `here`. Neither: the GPU with the most records of the template (ties: name).
  std::string gpu_name;
  // The multiprocessor count a configuration's grid and zero_output read (SM_COUNT).
  int sm_count = 0;
  // A configuration to run when nothing recorded fits.
  std::optional<std::string> default_config;
  // Only the exact shape on this GPU (query --exact); defaults are not used then either.
  bool exact_only = false;
  // A template declaring a less accurate precision is never selected (precision.h's order).
  Precision lowest_precision = Precision::fp32;
  // At a shape with no record on a GPU, the performance model chooses; false: the nearest
  // recorded shape's fastest that fits, as before the model (`query --nearest`).
  bool predict = true;
  // Where the model chooses: how many of its fastest candidates Selection::candidates names (the
  // first-call trial times them).
  std::size_t candidates = 1;
};

struct Selection {
  const RecordedTemplate* templ = nullptr;
  std::string config;  // Configuration::to_string() of the chosen configuration
  // The record chosen; nullptr for a default.
  const RecordedChoice* choice = nullptr;
  GpuStep step = GpuStep::default_config;
  bool exact_shape = false;  // choice->shape is the problem's shape
  // The model's prediction for the configuration at the problem's shape, where it chose; choice
  // is then the configuration's record nearest to the shape.
  std::optional<Prediction> predicted;
  // Where the model chose: the request's `candidates` configurations it predicts fastest that may
  // run the problem, fastest first (the chosen one), with their predictions.
  std::vector<std::pair<std::string, Prediction>> candidates;
  // Faster configurations passed over because their requirements exclude the problem.
  int excluded = 0;
  std::string why;  // one line, e.g. "NVIDIA H100 80GB HBM3 has no record of 1000x1000x1000; the
                    // nearest recorded shape is 1024x1024x1024 (2 faster configurations left out:
                    // their requirements exclude lda=1001)"
};

// Throws NoSelection; NoSelection also when the template is not recorded, declares a precision
// below the request's lowest, or its recorded version cannot be parsed and the request needs its
// requirements.
// `models` keeps the fitted performance models between calls (the library's); without it they
// are fitted for this call.
Selection select_configuration(const RecordSet& records, const SelectionRequest& request,
                               PerformanceModels* models = nullptr);

// Of candidates in time order (ms(c) never falls), the one a problem costs least with: the
// fastest that serves it, unless that one adds into C and one that keeps C, serves it and is
// faster than the fastest with the pass over C the problem then costs (pass_ms, from
// epilogue_pass_ms; 0: no pass). `serves(c, seeking)`: whether c may run the problem, `seeking`
// true while the fastest is sought (what keeps c from it may be counted then) and false for the
// ones after it. Returns `last` where none serves. The rule of select_configuration, and of
// `tiletune bench`'s choice among templates.
template <class It, class Ms, class Serves, class AddsIntoC>
It cheapest_serving(It first, It last, double pass_ms, const Ms& ms, const Serves& serves,
                    const AddsIntoC& adds_into_c) {
  It fastest = first;
  while (fastest != last && !serves(*fastest, true)) ++fastest;
  if (fastest == last || pass_ms == 0 || !adds_into_c(*fastest)) return fastest;
  const double limit_ms = ms(*fastest) + pass_ms;
  for (It c = std::next(fastest); c != last && ms(*c) < limit_ms; ++c) {
    if (!adds_into_c(*c) && serves(*c, false)) return c;
  }
  return fastest;
}

}  // namespace tiletune::runtime

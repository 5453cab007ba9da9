// How the library chooses at shapes nobody tuned, estimated from one database: leave one shape out.
// For each GPU and template recorded at enough shapes, each recorded shape in turn is hidden (that
// GPU's records of the template at it taken out) and the library's selection
// (tuner/runtime/selection.h) asked what it would run there; the answer is scored by the times the
// database holds at the hidden shape. Every other shape of the suite stays known, so this is an
// estimate, not a held-out workload (`tiletune selection-eval` measures one).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::report {

// Recorded shapes a GPU's template needs to be evaluated: hiding one leaves two to choose from.
inline constexpr int kMinChoiceShapes = 3;

// What one way of choosing chose at a hidden shape.
struct HeldOutPick {
  std::string config;            // empty: nothing was selected (NoSelection)
  std::optional<double> ratio;   // its recorded time at the shape over the best there; none: not
                                 // timed there (unmeasured) or nothing selected
};

struct HeldOutShape {
  GemmShape shape;
  std::string best_config;
  double best_ms = 0;
  HeldOutPick model;    // the performance model's choice (predict = true)
  HeldOutPick nearest;  // the nearest recorded shape's (predict = false)
};

// The ratios of one way of choosing over a template's shapes.
struct RatioSummary {
  int measured = 0;     // picks with a ratio
  int unmeasured = 0;   // picks without: not timed at the shape, or nothing selected
  double geometric_mean = 0, worst = 0;  // of the measured; 0 when there are none
  GemmShape worst_shape;
};

struct TemplateChoices {
  std::string gpu_name, template_name;
  std::vector<HeldOutShape> shapes;  // in shape order
  RatioSummary model, nearest;
};

// As the report's tables show them: a pick's ratio ("1.042"), else "unmeasured" or "none"; a
// summary's geometric mean, its worst with the shape ("1.31 at 64x4096x4096"), "-" for no ratio.
std::string ratio_text(const HeldOutPick& pick);
std::string mean_text(const RatioSummary& summary);
std::string worst_text(const RatioSummary& summary);

// Every GPU (by name) and template with ok results at kMinChoiceShapes shapes or more, by GPU name
// and template name.
std::vector<TemplateChoices> evaluate_choices(const runtime::RecordSet& records);

}  // namespace tiletune::report

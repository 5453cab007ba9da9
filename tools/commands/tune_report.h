// What `tiletune tune` prints once its searches are done: the winner of each template and shape
// (and the re-measurements across templates), what each device settled, where the time went, and
// the exit code the outcome calls for.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "db/result_store.h"
#include "tuner/pipeline/tuning_run.h"
#include "tuner/pipeline/tuning_session.h"

namespace tiletune::cli {

// A template and the shapes to tune it at.
struct TuningPlan {
  KernelTemplate tmpl;
  std::vector<GemmShape> shapes;
};

// The templates of one precision tuned at one shape, re-measured together once all are searched.
struct AcrossTemplates {
  GemmShape shape;
  Precision precision = Precision::fp32;
  std::vector<const KernelTemplate*> templates;
  std::vector<std::size_t> searches;  // theirs at the shape: positions in the model's summaries
  bool measured_new = false;  // any of their searches at the shape timed something
  std::string note;           // how the re-measurement went
};

// What the searches of a tune did, for the report.
struct TuneOutcome {
  std::vector<TuningSummary> summaries;  // per model, per plan, per shape, in that order
  std::vector<std::pair<std::size_t, AcrossTemplates>> across_notes;  // by model
  std::map<std::string, int> counts;           // settled configurations by outcome
  std::map<std::string, double> stage_seconds;  // over every search
  int settled = 0;
  double wall_seconds = 0;
  int forgotten = 0, still_missed = 0;  // missed shapes, with --missed
};

struct TuneReport {
  const ResultStore& store;
  const TuningSession& session;
  const std::vector<TuningRun*>& runs;
  const std::vector<std::vector<TuningPlan>>& model_plans;  // per model, in the runs' order
  const TuneOutcome& outcome;
  bool shares_configurations = false;  // a shard of an exhaustive or random tune
  bool per_device = false;             // --devices: a table and a line per device
  bool missed = false;                 // --missed
};

// Prints the report; returns kFindings when some template and shape has no correct
// configuration, else kSuccess.
int report_tune(const TuneReport& report);

}  // namespace tiletune::cli

// What the runtime library selects from: the correct results of a database or a bundle, held in
// memory once the library is opened. A database and a bundle both become a RecordSet, so one
// selection (selection.h) serves both, and `tiletune query` too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/core/kernel_template.h"

namespace tiletune::runtime {

struct RecordedGpu {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

// The current version of a template name (the one most recently registered).
struct RecordedTemplate {
  std::string name;
  std::string source_hash;
  std::string path;    // where it was read from when tuned, for messages and line info
  std::string source;
  // The source parsed by today's parser; none when it refuses a version an older tiletune
  // recorded (its results are still served by `query`, but cannot be launched).
  std::optional<KernelTemplate> parsed;
  Precision precision = Precision::fp32;  // what it declares, as recorded (kernel_template.h)
};

// One correct (status ok) result: a configuration measured at a shape on a GPU.
struct RecordedChoice {
  std::size_t gpu = 0;       // index into RecordSet::gpus
  std::size_t templ = 0;     // index into RecordSet::templates
  std::string config;        // Configuration::to_string()
  GemmShape shape;
  Transposes op;             // the transposes it was timed with
  std::int64_t batch = 1;    // and the strided batch (in tuned_for_choices: not both plain)
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
  double tflops = 0;
  int registers = 0, static_shared_bytes = 0, dynamic_shared_bytes = 0;
  int fuzz_cases = 0;        // the most random cases it passed on that GPU (0: not recorded)
  std::string recorded_at;   // UTC "YYYY-MM-DD HH:MM:SS"

  TunedFor tuned_for() const { return {op, batch}; }
};

// What the performance model (performance_model.h) weighs a launch by: its features, and a
// configuration's coefficients, ms per unit of each.
inline constexpr std::size_t kLaunchFeatures = 5;
using LaunchFeatures = std::array<double, kLaunchFeatures>;

// One configuration's performance model as it was fitted on a database.
struct FittedConfiguration {
  LaunchFeatures coefficients{};
  int shapes = 0;        // the recorded shapes it was fitted (or the typical model scaled) to
  bool own_fit = false;  // fitted to its own times, else the template's typical model, scaled
  bool measured_beyond_limits = false;  // at a shape its tuning limits (`tune_if`) leave out
};

// How a template's model counts a launch's throughput limit (performance_model.h): the work of its
// busiest SM (ceil(blocks / SMs) blocks), or the launch's work spread evenly over the SMs, where a
// last partial wave's blocks finish sooner than full ones.
enum class WorkShare { busiest_sm, even };
inline const char* to_string(WorkShare share) { return share == WorkShare::even ? "even" : "busiest_sm"; }

// A (GPU, template) pair's performance model fitted on all of a database's records, carried where
// only some of them are (a bundle's): fitted again on those, most configurations would be seen at
// too few shapes for their own fit, and the model would choose worse than from the database.
struct RecordedModel {
  std::size_t gpu = 0, templ = 0;  // as in RecordedChoice
  WorkShare work_share = WorkShare::busiest_sm;
  std::map<std::string, FittedConfiguration> configurations;  // by Configuration::to_string()
};

struct RecordSet {
  std::vector<RecordedGpu> gpus;            // sorted by name
  std::vector<RecordedTemplate> templates;  // sorted by name, one per name
  std::vector<RecordedChoice> choices;      // of C = A * B (op nn), in a deterministic order (see below)
  // Records tuned for other transposes or a batch (`tune --op`, `tune --batch`), in the same
  // order: the selection takes them at their own shape, transposes and batch only, and the
  // models, bundles and reports do not read them.
  std::vector<RecordedChoice> tuned_for_choices;
  // At most one per (GPU, template) pair; a pair without one has its model fitted on its choices.
  // Each configuration listed has choices of the pair; one of its choices not listed predicts
  // nothing, as in the database it was fitted on.
  std::vector<RecordedModel> models;

  // The template of that name, or nullptr.
  const RecordedTemplate* find_template(const std::string& name) const;
};

// Sorts choices by GPU name, template name, shape, median time, then configuration text, so that
// equal inputs give equal sets whatever order a file listed them in.
void sort_choices(RecordSet& records);

// The ok results of the current template versions in a tiletune database, opened read only (it is
// never changed), each with the fuzz cases its configuration passed on that GPU. Throws
// DatabaseError (db/result_store.h) naming the path and the cause.
RecordSet load_database_records(const std::filesystem::path& database);

}  // namespace tiletune::runtime

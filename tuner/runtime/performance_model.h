// A performance model of one template's configurations on one GPU, learned from the times recorded
// there: it predicts a configuration's time at a shape nobody tuned, so that the library chooses
// there by prediction instead of taking the nearest recorded shape's winner.
//
// A configuration's time at a shape is modelled as a sum over what its launch does there
// (launch_features): the busiest SM's work (ceil(blocks / SMs) blocks' multiply-adds: the
// throughput limit), the waves' work (the blocks that fit on the SMs at once, each wave as long as
// one block's work: the latency of blocks that do not fill an SM), the waves themselves (each
// block's prologue and epilogue), the launch, and the busiest SM's share of C (its stores, and the
// atomics of split K). A block's work is its tile of C times its share of K; the tile is read from
// the template's grid (blocks across N and down M: grid.x = ceil(N / tile), grid.y = ceil(M / tile)),
// and where the grid does not count tiles (a persistent schedule) the work is spread evenly: C's
// tiles of the template's declared `tile` (whole tiles, as stream-K computes them), else C itself.
// Where the tile declares the step a block walks K in, each slice of K counts in whole steps.
//
// The throughput term counts the busiest SM's blocks, or the launch's work spread evenly over the
// SMs (WorkShare): per template, whichever predicts its own records better when each is left out
// of the fit in turn (on an H200, the even share for tf32_wgmma_tma, one block an SM, whose last
// partial wave ran faster than full ones; the busiest SM for the other templates).
// The coefficients, none negative, are fitted per configuration by least squares on the relative
// error of its recorded times. One recorded at fewer than kOwnFitShapes shapes takes the template's
// typical coefficients (the median of those fitted on their own), scaled to its times. Where the
// records carry the pair's model (RecordSet::models: a bundle's, fitted on the whole database) it
// is taken as it is, not fitted again on the few records kept.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/core/kernel_template.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/runtime/record_set.h"

namespace tiletune::runtime {

inline constexpr int kOwnFitShapes = 5;  // recorded shapes a configuration needs for its own fit
// The version of what the launch features, and so the coefficients, mean (a bundle's
// "performance_model"): a carried model of another version is not used, the bundle's choices are
// fitted again. Raised when launch_features or what the coefficients multiply changes.
// 2: persistent schedules' work in whole tiles; 3: K in whole steps of the declared tile's depth;
// 4: the throughput term's WorkShare, chosen per template
inline constexpr int kPerformanceModelVersion = 4;

// What one SM holds at most, by compute capability (the CUDA programming guide's table): blocks
// resident on an SM are limited by these, by the block's registers and by its shared memory.
struct SmLimits {
  int threads = 2048, registers = 65536, blocks = 32;
  int shared_bytes = 228 * 1024;        // per SM
  int reserved_shared_bytes = 1024;     // the system's share of each block's
};
SmLimits sm_limits(int cc_major, int cc_minor);

// One configuration's model: its coefficients and what they were fitted to.
struct ConfigurationModel {
  LaunchFeatures coefficients{};  // ms per unit of each feature
  int shapes = 0;                 // recorded shapes of the configuration
  bool own_fit = false;           // fitted to its own times (else the template's, scaled)
};

struct Prediction {
  double ms = 0;
  int shapes = 0;         // recorded shapes of the configuration behind it
  bool own_fit = false;
};

// What the launcher's pass over C (epilogue_pass.h) adds to the time of a configuration that may add
// into C, where the problem asks for beta or an epilogue; 0 where it does not. A second launch
// after the kernel: on an H200 (.device-carry/gpu_run66.sh) bias_relu cost warp_tiled's split-K and
// stream-K configurations 2.5 us over the plain product with 16 KB of C to 7 us with 2 MB, about
// 2.5 us and 2 us a megabyte; where beta is not 0 the pass also reads the scratch.
double epilogue_pass_ms(const GemmProblem& problem);

class PerformanceModel {
 public:
  // The model of records.templates[templ] on records.gpus[gpu], fitted on their records or the
  // one the records carry; an empty one when the template's recorded version cannot be parsed.
  PerformanceModel(const RecordSet& records, std::size_t gpu, std::size_t templ);
  PerformanceModel(const PerformanceModel&) = delete;  // its entries point into each other
  PerformanceModel& operator=(const PerformanceModel&) = delete;

  // The configuration's predicted time at the shape; none when it is not recorded on this GPU,
  // its launch at the shape cannot be computed, or the template has no typical coefficients to
  // lend a configuration recorded at too few shapes.
  std::optional<Prediction> predict(const std::string& config, const GemmShape& shape) const;

  // The `count` configurations predicted fastest at the problem's shape, fastest first (ties: by
  // text; a configuration that may add into C counts the pass over C its beta or epilogue costs,
  // epilogue_pass_ms, which its prediction leaves out), of those that may run it there: their
  // requirements admit the problem (checked only where they read it) and their tuning limits
  // (`tune_if`) admit the shape, unless they were measured beyond them too, and they have its
  // build (KernelTemplate::unsupported, SM_COUNT = `sm_count`). Only the fastest predictions are
  // checked, until `count` pass: the checks, not the predictions, are what a plan's time goes to.
  struct Ranked {
    const std::string* config = nullptr;
    Prediction prediction;
  };
  struct Ranking {
    std::vector<Ranked> fastest;
    int predicted = 0;    // configurations with a prediction at the shape
    int passed_over = 0;  // predicted faster than the first of `fastest`, but may not run it
  };
  Ranking rank(const GemmProblem& problem, std::size_t count, int sm_count = 0) const;
  // How much deeper than a first-call trial's count its ranking goes, for launches to spread over.
  static constexpr std::size_t kTrialDepth = 4;
  // The `count` candidates a first-call trial times at the shape, from `ranked` (rank()'s fastest,
  // count x kTrialDepth of them): the fastest half as predicted (the first is the choice), then
  // the fastest of launches (grid and threads) not yet among them, so that the trial also measures
  // block shapes the model may misjudge as a whole; filled up in prediction order where distinct
  // launches run out. (At 257x4099x513 it placed every 32-row tile of warp_tiled 8-25% too fast:
  // the 8 fastest predictions were all of them, the best 64 x 64 tile the 12th.)
  std::vector<Ranked> trial_candidates(const GemmShape& shape, const std::vector<Ranked>& ranked,
                                       std::size_t count) const;

  // How its throughput term counts a launch's work (chosen when fitted, or carried).
  WorkShare work_share() const { return work_share_; }
  // The configurations it predicts for, in text order.
  const std::map<std::string, ConfigurationModel>& configurations() const { return models_; }
  // A configuration recorded on this GPU, parsed, and its records; nullptr when it is not.
  const Configuration* configuration(const std::string& config) const;
  const std::vector<const RecordedChoice*>* records_of(const std::string& config) const;
  // Whether the configuration was measured at a shape its tuning limits (`tune_if`) leave out:
  // evidence for choosing it where they leave it out too.
  bool measured_beyond_limits(const std::string& config) const;

  // What the launch of the configuration does at the shape, in the units the coefficients
  // multiply; none when the geometry cannot be computed there.
  std::optional<LaunchFeatures> launch_features(const std::string& config, const GemmShape& shape) const;

 private:
  // What launch_features needs of a recorded configuration.
  struct Known {
    Configuration config;
    std::vector<const RecordedChoice*> records;
    int registers = 0, static_shared_bytes = 0;  // as ptxas reported them
    double tile_m = 0, tile_n = 0;  // C's rows and columns a block computes; 0: not read from the grid
    // The template's declared tile (`tile`), rows and columns 0 where it declares none: a
    // persistent schedule's blocks compute whole tiles, so its work is C's padded to them; and a
    // block walks K in whole steps of its depth.
    BlockTile declared_tile{0, 0, 1};
    // Where the grid is ceil(N / tile_n) x ceil(M / tile_m) x split at every shape, with threads and
    // dynamic shared memory that do not depend on it: the launch without evaluating expressions.
    bool closed_form = false;
    std::uint32_t split = 1;
    std::uint64_t threads = 0, dynamic_shared_bytes = 0;
    bool measured_beyond_limits = false;
    bool may_add_into_c = false;  // beta and the epilogue then cost the launcher's pass over C
    const ConfigurationModel* model = nullptr;  // in models_; nullptr: it predicts nothing
  };
  // `scratch`: bindings of the shape (and SM_COUNT) that a launch not in closed form rebinds to
  // its parameters, kept by a caller predicting many; nullptr: made here.
  std::optional<LaunchFeatures> launch_features(const Known& known, const GemmShape& shape,
                                                Bindings* scratch = nullptr) const;
  std::optional<Prediction> predict(const Known& known, const GemmShape& shape, Bindings* scratch = nullptr) const;
  // Bindings of the shape and the GPU's SM count, for launch_features' scratch.
  Bindings shape_bindings(const GemmShape& shape) const;
  // The configuration's launch at the shape, on scratch bindings (shape_bindings) it rebinds.
  LaunchGeometry geometry_at(const Configuration& config, const GemmShape& shape, Bindings& scratch) const;
  // The busiest block's share of K where K is cut into `slices` of whole steps (the declared
  // tile's depth): only a slice's last step is partial, and it costs as much as a whole one.
  static double slice_of_k(const Known& c, std::int64_t k, std::uint64_t slices);
  // What a launch does, before it is weighed: `blocks` blocks of `threads`, each `work`
  // multiply-adds and `tile` elements of C.
  struct Launch {
    double blocks = 0, work = 0, tile = 0;
    std::uint64_t threads = 0, dynamic_shared_bytes = 0;
  };
  // The configuration's launch at the shape (scratch as for launch_features); none when its
  // geometry cannot be computed there.
  std::optional<Launch> launch_at(const Known& c, const GemmShape& shape, Bindings* scratch) const;
  // The launch's features, its throughput term counted by `share`.
  LaunchFeatures features_of(const Known& c, const Launch& launch, WorkShare share) const;
  // Points each Known at its ConfigurationModel, once models_ is final.
  void link_models();
  // Takes the pair's model where the records carry it (RecordSet::models); false where they do not.
  bool take_carried_model(const RecordSet& records, std::size_t gpu, std::size_t templ);
  // Whether the configuration's launch has the closed form (Known::closed_form), checked at probes.
  void find_closed_form(Known& known) const;
  // The tile along grid dimension 0 (N) or 1 (M), where the grid counts tiles; else 0.
  double tile_along(const Configuration& config, int dimension) const;

  const RecordedGpu& gpu_;
  const RecordedTemplate& templ_;
  SmLimits limits_;
  std::map<std::string, Known> known_;
  std::map<std::string, ConfigurationModel> models_;
  WorkShare work_share_ = WorkShare::busiest_sm;  // fixed once constructed
};

// A (GPU, template) pair's records by shape, in shape order, each shape's fastest first (ties: by
// configuration text): what the selection walks.
struct RecordedShapes {
  std::vector<std::pair<GemmShape, std::vector<const RecordedChoice*>>> shapes;
  int records = 0;
};

// The models of a RecordSet's (GPU, template) pairs, each fitted when first asked for, and their
// records by shape, indexed in one pass when first asked for; kept while the records live, so that
// a plan reads neither every record nor fits again. Thread-safe.
class PerformanceModels {
 public:
  explicit PerformanceModels(const RecordSet& records) : records_(records) {}
  // Another pair's model is never waited for: each is fitted under its own once-flag.
  const PerformanceModel& of(std::size_t gpu, std::size_t templ);
  const RecordedShapes& recorded(std::size_t gpu, std::size_t templ);
  // Fits the model of every pair whose template `wanted` accepts, ahead of the plans that need
  // them (the library does it in the background once opened).
  void fit_all(const std::function<bool(const RecordedTemplate&)>& wanted);

 private:
  struct Fitted {
    std::once_flag once;
    std::unique_ptr<PerformanceModel> model;
  };
  const RecordSet& records_;
  std::mutex mutex_;  // guards the maps, not the fits
  std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<Fitted>> models_;
  std::once_flag indexed_;
  std::map<std::pair<std::size_t, std::size_t>, RecordedShapes> recorded_;
};

}  // namespace tiletune::runtime

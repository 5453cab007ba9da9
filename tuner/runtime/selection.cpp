#include "tuner/runtime/selection.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tiletune::runtime {
namespace {

std::string names_of_gpus(const RecordSet& records) {
  std::vector<std::string> names;
  for (const RecordedGpu& gpu : records.gpus) names.push_back(gpu.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string names_of_templates(const RecordSet& records) {
  std::vector<std::string> names;
  for (const RecordedTemplate& templ : records.templates) names.push_back(templ.name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

// Why today's parser refuses a recorded version (its first line), for messages.
std::string parse_failure(const RecordedTemplate& templ) {
  try {
    parse_template(templ.source, templ.path.empty() ? templ.name : templ.path);
  } catch (const TemplateError& e) {
    const std::string what = e.what();
    return what.substr(0, what.find('\n'));
  }
  return "parsed";
}

// The leading dimensions that are not packed ("lda=1001"), else the shape: what a requirement
// that excludes the problem is most likely about.
std::string problem_detail(const GemmProblem& problem) {
  const GemmProblem packed = GemmProblem::packed(problem.shape);
  std::vector<std::string> strides;
  if (problem.lda != packed.lda) strides.push_back(fmt::format("lda={}", problem.lda));
  if (problem.ldb != packed.ldb) strides.push_back(fmt::format("ldb={}", problem.ldb));
  if (problem.ldc != packed.ldc) strides.push_back(fmt::format("ldc={}", problem.ldc));
  return strides.empty() ? problem.shape.to_string() : fmt::format("{}", fmt::join(strides, " "));
}

// What one GPU's records gave: the choice, or why there was none.
struct GpuOutcome {
  const RecordedChoice* choice = nullptr;
  int excluded = 0;              // faster configurations whose requirements exclude the problem
  std::string first_violation;   // the requirement the fastest of those does not meet
  int candidates = 0;            // records of the template looked at
  int cannot_serve = 0;          // configurations without the build the problem's contract needs
  std::string first_cannot;      // why the first of those cannot
  bool had_exact_shape = false;  // some were at the problem's shape
  // Where the performance model chose: its prediction, how many configurations it predicted for
  // and passed over (faster, but they may not run the problem), and what the nearest recorded
  // shape would have given.
  std::optional<Prediction> predicted;
  std::vector<std::pair<std::string, Prediction>> ranked;  // its fastest, for the trial
  int weighed = 0, passed_over = 0;
  const RecordedChoice* nearest = nullptr;
};

class Selector {
 public:
  Selector(const RecordSet& records, const SelectionRequest& request, PerformanceModels* models)
      : records_(records), request_(request), models_(models) {
    if (!models_) models_ = &own_models_.emplace(records);
  }

  Selection select() {
    templ_ = records_.find_template(request_.template_name);
    if (!templ_) {
      throw NoSelection(fmt::format("template '{}' is not recorded (recorded: {})",
                                    request_.template_name, names_of_templates(records_)));
    }
    if (!at_least_as_accurate(templ_->precision, request_.lowest_precision)) {
      throw NoSelection(fmt::format("template '{}' declares precision {}, below the lowest "
                                    "accepted ({})",
                                    templ_->name, to_string(templ_->precision),
                                    to_string(request_.lowest_precision)));
    }
    templ_index_ = std::size_t(templ_ - records_.templates.data());
    choose_first_gpu();

    std::vector<std::string> tried;
    if (!unknown_gpu_.empty()) tried.push_back(unknown_gpu_);
    if (first_name_.empty()) {
      tried.push_back(fmt::format("no GPU has a record of {}", templ_->name));
    }
    const GpuStep steps[] = {GpuStep::this_gpu, GpuStep::same_compute_capability,
                             GpuStep::same_architecture};
    for (const GpuStep step : steps) {
      if (first_name_.empty() || !unknown_gpu_.empty() ||
          (step != GpuStep::this_gpu && request_.exact_only)) {
        break;
      }
      const std::vector<std::size_t> gpus = gpus_of(step);
      if (gpus.empty()) {
        tried.push_back(
            step == GpuStep::this_gpu
                ? fmt::format("{}: not recorded", first_name_)
                : fmt::format("no other GPU of the same {} recorded",
                              step == GpuStep::same_compute_capability
                                  ? fmt::format("compute capability ({}.{})", identity_.cc_major,
                                                identity_.cc_minor)
                                  : fmt::format("architecture (sm_{}x)", identity_.cc_major)));
        continue;
      }
      for (const std::size_t gpu : gpus) {
        const GpuOutcome outcome = look_at(gpu);
        if (outcome.choice) return chosen(step, gpu, outcome);
        tried.push_back(fmt::format("{}: {}", records_.gpus[gpu].name, nothing_because(outcome)));
      }
    }
    const std::string looked =
        fmt::format("no recorded configuration of {} fits {} ({})", templ_->name,
                    request_.problem.to_string(), fmt::join(tried, "; "));
    if (request_.default_config && !request_.exact_only) return declared_default(looked);
    throw NoSelection(looked);
  }

 private:
  int records_of_template(std::size_t gpu) const { return models_->recorded(gpu, templ_index_).records; }

  // Step 1's GPU name and the compute capability steps 2 and 3 compare with.
  void choose_first_gpu() {
    first_name_ = !request_.gpu_name.empty() ? request_.gpu_name
                  : request_.here            ? request_.here->name
                                             : std::string();
    if (first_name_.empty()) {
      // No GPU (the CPU backend): select as on the GPU with the most records of the template.
      int most = 0;
      for (std::size_t gpu = 0; gpu < records_.gpus.size(); ++gpu) {
        const int count = records_of_template(gpu);
        if (count > most) {  // gpus are sorted by name: the first of equals wins the tie
          most = count;
          first_name_ = records_.gpus[gpu].name;
        }
      }
      if (first_name_.empty()) return;  // nothing recorded of the template: steps find nothing
      chosen_as_most_ = fmt::format(
          "no GPU here: selecting as on {}, the GPU with the most records "
          "of {} ({}); ",
          first_name_, templ_->name, most);
    }
    const auto named = std::find_if(records_.gpus.begin(), records_.gpus.end(),
                                    [&](const RecordedGpu& g) { return g.name == first_name_; });
    if (named != records_.gpus.end()) {
      identity_ = GpuIdentity{named->name, named->cc_major, named->cc_minor};
    } else if (request_.here) {
      identity_ = *request_.here;
    } else {
      // Neither recorded nor here: its compute capability is unknown, so steps 2 and 3 find
      // nothing, and only a declared default can run.
      identity_ = GpuIdentity{first_name_, -1, -1};
      unknown_gpu_ = fmt::format("no GPU named '{}' is recorded (recorded: {})", first_name_,
                                 names_of_gpus(records_));
    }
  }

  bool in_step(GpuStep step, const RecordedGpu& gpu) const {
    if (first_name_.empty()) return false;
    if (gpu.name == first_name_) return step == GpuStep::this_gpu;
    const bool same_cc = gpu.cc_major == identity_.cc_major && gpu.cc_minor == identity_.cc_minor;
    if (step == GpuStep::same_compute_capability) return same_cc;
    if (step == GpuStep::same_architecture) return !same_cc && gpu.cc_major == identity_.cc_major;
    return false;
  }

  // The step's GPUs, the one with the most records of the template first (ties: by name).
  std::vector<std::size_t> gpus_of(GpuStep step) const {
    std::vector<std::pair<int, std::size_t>> ranked;  // (-records, index): gpus sorted by name
    for (std::size_t gpu = 0; gpu < records_.gpus.size(); ++gpu) {
      if (in_step(step, records_.gpus[gpu])) ranked.emplace_back(-records_of_template(gpu), gpu);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::size_t> gpus;
    for (const auto& [records, gpu] : ranked) gpus.push_back(gpu);
    return gpus;
  }

  // The GPU's records of the template in the order they are tried: the exact shape fastest first,
  // then the other shapes nearest first, each fastest first; the first that fits.
  GpuOutcome look_at(std::size_t gpu) const {
    if (GpuOutcome tuned = look_at_tuned_for(gpu); tuned.choice) return tuned;
    const GemmShape& shape = request_.problem.shape;
    // The shapes recorded, the problem's own first, then nearest first.
    std::vector<std::tuple<bool, double, const std::pair<GemmShape, std::vector<const RecordedChoice*>>*>> order;
    GpuOutcome outcome;
    for (const auto& entry : models_->recorded(gpu, templ_index_).shapes) {
      const bool other = entry.first != shape;
      if (request_.exact_only && other) continue;
      order.emplace_back(other, other ? log_distance(entry.first, shape) : 0.0, &entry);
      outcome.candidates += int(entry.second.size());
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)->first) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b)->first);
    });
    for (const auto& [other, distance, entry] : order) {
      if ((outcome.choice = cheapest(entry->second, outcome))) break;
    }
    if (!templ_->parsed) return outcome;
    if (request_.predict && !request_.exact_only && (!outcome.choice || outcome.choice->shape != shape)) {
      predict(gpu, outcome);
    }
    return outcome;
  }

  // Of one shape's records (fastest first), the one the problem costs least with
  // (cheapest_serving); nullptr: none fits. What keeps the faster ones from fitting is counted in
  // `outcome`.
  const RecordedChoice* cheapest(const std::vector<const RecordedChoice*>& records, GpuOutcome& outcome) const {
    GpuOutcome slower;  // those after the fastest are not counted: they are not faster
    const auto chosen = cheapest_serving(
        records.begin(), records.end(), epilogue_pass_ms(request_.problem),
        [](const RecordedChoice* c) { return c->median_ms; },
        [&](const RecordedChoice* c, bool seeking) { return serves(*c, seeking ? outcome : slower); },
        [&](const RecordedChoice* c) { return adds_into_c(*c); });
    return chosen != records.end() ? *chosen : nullptr;
  }

  bool adds_into_c(const RecordedChoice& c) const {
    try {
      return templ_->parsed && templ_->parsed->may_add_into_c(templ_->parsed->parse_configuration(c.config));
    } catch (const TemplateError&) {
      return false;
    }
  }

  // Whether the recorded configuration may run the problem; what keeps it from it is counted in
  // `outcome`.
  bool serves(const RecordedChoice& c, GpuOutcome& outcome) const {
    if (c.shape == request_.problem.shape) outcome.had_exact_shape = true;
    if (!templ_->parsed) return true;  // requirements cannot be read: served unchecked, as query did
    const Expression* violated = nullptr;
    Configuration config;
    try {
      config = templ_->parsed->parse_configuration(c.config);
      violated = templ_->parsed->violated_requirement(config, &request_.problem);
    } catch (const TemplateError&) {
      return false;  // a configuration this version does not declare: nothing to run
    }
    if (violated && outcome.excluded++ == 0) outcome.first_violation = violated->text();
    if (violated) return false;
    if (std::optional<std::string> why = templ_->parsed->unsupported(request_.problem, config)) {
      if (outcome.cannot_serve++ == 0) outcome.first_cannot = std::move(*why);
      return false;
    }
    return true;
  }

  // A problem whose transposes are not nn, or a strided batch, takes the fastest record tuned for
  // its transposes and batch at its very shape (`tune --op`, `tune --batch`), where one fits;
  // otherwise the plain product's records choose for it.
  GpuOutcome look_at_tuned_for(std::size_t gpu) const {
    GpuOutcome outcome;
    const TunedFor kind = request_.problem.tuned_for();
    if (kind.plain()) return outcome;
    for (const RecordedChoice& c : records_.tuned_for_choices) {  // fastest first per shape
      if (c.gpu == gpu && c.templ == templ_index_ && c.tuned_for() == kind &&
          c.shape == request_.problem.shape && serves(c, outcome)) {
        outcome.choice = &c;
        return outcome;
      }
    }
    return {};
  }

  // Where no record at the problem's shape fits: the configuration the GPU's model predicts
  // fastest there, of those that may run the problem, in place of the nearest shape's choice.
  void predict(std::size_t gpu, GpuOutcome& outcome) const {
    const PerformanceModel& model = models_->of(gpu, templ_index_);
    const GemmShape& shape = request_.problem.shape;
    // A first-call trial's candidates come from the same ranking, deeper.
    const bool trial = request_.candidates > 1;
    const PerformanceModel::Ranking ranking = model.rank(
        request_.problem, trial ? request_.candidates * PerformanceModel::kTrialDepth : 1, request_.sm_count);
    outcome.weighed = ranking.predicted;
    outcome.passed_over = ranking.passed_over;
    if (ranking.fastest.empty()) return;
    const std::string* best_config = ranking.fastest.front().config;
    const Prediction best = ranking.fastest.front().prediction;
    const std::vector<const RecordedChoice*>& records = *model.records_of(*best_config);
    outcome.nearest = outcome.choice;
    outcome.choice = *std::min_element(records.begin(), records.end(),
                                       [&](const RecordedChoice* a, const RecordedChoice* b) {
                                         return std::pair(log_distance(a->shape, shape), a->shape) <
                                                std::pair(log_distance(b->shape, shape), b->shape);
                                       });
    outcome.predicted = best;
    // The trial's candidates, its first the choice.
    const std::vector<PerformanceModel::Ranked> candidates =
        trial ? model.trial_candidates(shape, ranking.fastest, request_.candidates) : ranking.fastest;
    for (const PerformanceModel::Ranked& r : candidates) outcome.ranked.emplace_back(*r.config, r.prediction);
  }

  std::string nothing_because(const GpuOutcome& outcome) const {
    if (outcome.candidates == 0) {
      return request_.exact_only ? fmt::format("no record of {} at {}", templ_->name,
                                               request_.problem.shape.to_string())
                                 : fmt::format("no record of {}", templ_->name);
    }
    if (outcome.cannot_serve > 0 && outcome.excluded == 0) {
      return fmt::format("{} recorded configuration{} cannot serve it (first: {})", outcome.cannot_serve,
                         outcome.cannot_serve == 1 ? "" : "s", outcome.first_cannot);
    }
    if (outcome.excluded == 0) {
      return fmt::format("{} recorded configuration{} not declared by the current version of {}",
                         outcome.candidates, outcome.candidates == 1 ? "" : "s", templ_->name);
    }
    return fmt::format("{} recorded configuration{} excluded by requirements (first: '{}')",
                       outcome.candidates, outcome.candidates == 1 ? "" : "s",
                       outcome.first_violation);
  }

  Selection chosen(GpuStep step, std::size_t gpu, const GpuOutcome& outcome) const {
    const RecordedChoice& c = *outcome.choice;
    const std::string& gpu_name = records_.gpus[gpu].name;
    Selection selection;
    selection.templ = templ_;
    selection.config = c.config;
    selection.choice = &c;
    selection.step = step;
    selection.exact_shape = c.shape == request_.problem.shape;
    selection.excluded = outcome.predicted ? 0 : outcome.excluded;
    selection.predicted = outcome.predicted;
    selection.candidates = outcome.ranked;

    std::string why = chosen_as_most_;
    if (step == GpuStep::same_compute_capability) {
      why += fmt::format(
          "nothing of {} recorded on {} fits; {} has the same compute capability "
          "({}.{}); ",
          templ_->name, first_name_, gpu_name, identity_.cc_major, identity_.cc_minor);
    } else if (step == GpuStep::same_architecture) {
      why += fmt::format(
          "nothing of {} recorded on {} or its compute capability fits; {} has the "
          "same architecture (sm_{}x); ",
          templ_->name, first_name_, gpu_name, identity_.cc_major);
    }
    const std::string asked = request_.problem.shape.to_string();
    if (selection.exact_shape && !c.tuned_for().plain()) {
      why += fmt::format("{} has a record of {} tuned for {}", gpu_name, asked, c.tuned_for().to_string());
    } else if (selection.exact_shape) {
      why += fmt::format("{} has a record of {}", gpu_name, asked);
    } else if (outcome.predicted) {
      const Prediction& p = *outcome.predicted;
      why += fmt::format("{} has no record of {}{}; the performance model predicts {:.4g} ms, the "
                         "fastest of the {} configurations it predicts for{} ({} its times at {} "
                         "recorded shape{})",
                         gpu_name, asked, outcome.had_exact_shape ? " that fits" : "", p.ms, outcome.weighed,
                         outcome.passed_over == 0
                             ? std::string()
                             : fmt::format(" that may run it, {} faster left out by requirements, tune_if or split-K",
                                           outcome.passed_over),
                         p.own_fit ? "fitted to" : "the template's typical model scaled to", p.shapes,
                         p.shapes == 1 ? "" : "s");
      if (outcome.nearest && outcome.nearest->config != c.config) {
        const std::optional<Prediction> other =
            models_->of(gpu, templ_index_).predict(outcome.nearest->config, request_.problem.shape);
        why += fmt::format("; the nearest recorded shape {} would have chosen [{}]{}",
                           outcome.nearest->shape.to_string(), outcome.nearest->config,
                           other ? fmt::format(", predicted {:.4g} ms", other->ms) : std::string());
      } else if (outcome.nearest) {
        why += fmt::format("; the nearest recorded shape {} chooses it too", outcome.nearest->shape.to_string());
      }
    } else {
      why += fmt::format("{} has no record of {}{}; nearest recorded shape {}", gpu_name, asked,
                         outcome.had_exact_shape ? " that fits" : "", c.shape.to_string());
    }
    if (outcome.excluded > 0 && !outcome.predicted) {
      why +=
          fmt::format("; {} faster configuration{} left out: their requirements exclude {} ('{}')",
                      outcome.excluded, outcome.excluded == 1 ? "" : "s",
                      problem_detail(request_.problem), outcome.first_violation);
    }
    if (!templ_->parsed) {
      why += fmt::format(
          "; template version {} of {} cannot be parsed by this tiletune ({}): its "
          "requirements were not checked",
          templ_->source_hash, templ_->name, parse_failure(*templ_));
    }
    selection.why = std::move(why);
    return selection;
  }

  Selection declared_default(const std::string& looked) const {
    const std::string& text = *request_.default_config;
    if (!templ_->parsed) {
      throw NoSelection(
          fmt::format("{}; the default configuration [{}] cannot be checked: "
                      "template version {} cannot be parsed by this tiletune ({})",
                      looked, text, templ_->source_hash, parse_failure(*templ_)));
    }
    Configuration config;
    try {
      config = templ_->parsed->parse_configuration(text);
    } catch (const TemplateError& e) {
      throw NoSelection(fmt::format("{}; the default configuration [{}] is not one of {}: {}",
                                    looked, text, templ_->name, e.what()));
    }
    if (const Expression* violated =
            templ_->parsed->violated_requirement(config, &request_.problem)) {
      throw NoSelection(
          fmt::format("{}; the default configuration [{}] does not meet requirement "
                      "'{}' for {}",
                      looked, text, violated->text(), request_.problem.to_string()));
    }
    if (std::optional<std::string> why = templ_->parsed->unsupported(request_.problem, config)) {
      throw NoSelection(fmt::format("{}; the default configuration [{}] cannot serve it: {}", looked, text, *why));
    }
    Selection selection;
    selection.templ = templ_;
    selection.config = config.to_string();
    selection.step = GpuStep::default_config;
    selection.why = fmt::format("{}; the declared default [{}] runs", looked, selection.config);
    return selection;
  }

  const RecordSet& records_;
  const SelectionRequest& request_;
  PerformanceModels* models_;
  std::optional<PerformanceModels> own_models_;  // where the caller keeps none
  const RecordedTemplate* templ_ = nullptr;
  std::size_t templ_index_ = 0;
  std::string first_name_;      // step 1's GPUs are those of this name
  GpuIdentity identity_;        // steps 2 and 3 compare with its compute capability
  std::string chosen_as_most_;  // why step 1 is the GPU it is, without a GPU here
  std::string unknown_gpu_;     // step 1's GPU is neither recorded nor here: what to say
};

}  // namespace

Selection select_configuration(const RecordSet& records, const SelectionRequest& request,
                               PerformanceModels* models) {
  return Selector(records, request, models).select();
}

}  // namespace tiletune::runtime

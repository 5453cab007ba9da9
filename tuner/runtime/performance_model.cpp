#include "tuner/runtime/performance_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include <Eigen/Core>
#include <Eigen/QR>

namespace tiletune::runtime {
namespace {

// Where the grid counts tiles, the probes (N or M of 2^15 and 2^16) give twice the blocks along
// that dimension; a persistent schedule's grid does not grow so.
constexpr std::uint32_t kProbe = 1u << 15;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Least squares of `rows` x = 1 with no coefficient negative: a coefficient the unconstrained
// solution makes negative is dropped (the most negative first) and the rest solved again.
LaunchFeatures fit_relative(const Eigen::MatrixXd& rows) {
  std::vector<int> active(kLaunchFeatures);
  for (std::size_t j = 0; j < kLaunchFeatures; ++j) active[j] = int(j);
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(rows.rows());
  while (!active.empty()) {
    Eigen::MatrixXd a(rows.rows(), Eigen::Index(active.size()));
    for (std::size_t j = 0; j < active.size(); ++j) a.col(Eigen::Index(j)) = rows.col(active[j]);
    const Eigen::VectorXd x = a.colPivHouseholderQr().solve(ones);
    Eigen::Index most_negative = 0;
    if (x.minCoeff(&most_negative) >= 0) {
      LaunchFeatures coefficients{};
      for (std::size_t j = 0; j < active.size(); ++j) coefficients[active[j]] = x(Eigen::Index(j));
      return coefficients;
    }
    active.erase(active.begin() + most_negative);
  }
  return {};
}

// How well a template's configurations predict their own records: the root mean square of the
// log of predicted over recorded time, each record predicted by a fit without it, over the
// configurations with records enough for their own fit without it.
double leave_one_out_error(const std::map<std::string, Eigen::MatrixXd>& rows, Eigen::Index own_fit_rows) {
  double sum = 0;
  int count = 0;
  for (const auto& [config, a] : rows) {
    if (a.rows() <= own_fit_rows) continue;
    Eigen::MatrixXd rest(a.rows() - 1, a.cols());
    for (Eigen::Index out = 0; out < a.rows(); ++out) {
      for (Eigen::Index r = 0, kept = 0; r < a.rows(); ++r) {
        if (r != out) rest.row(kept++) = a.row(r);
      }
      const LaunchFeatures c = fit_relative(rest);
      double predicted = 0;  // over the recorded time: each row is the features over it
      for (std::size_t j = 0; j < kLaunchFeatures; ++j) predicted += c[j] * a(out, Eigen::Index(j));
      if (!(predicted > 0)) return std::numeric_limits<double>::infinity();  // predicts nothing
      sum += std::pow(std::log(predicted), 2);
      ++count;
    }
  }
  return count > 0 ? std::sqrt(sum / count) : 0;
}

double dot(const LaunchFeatures& a, const LaunchFeatures& b) {
  double sum = 0;
  for (std::size_t j = 0; j < kLaunchFeatures; ++j) sum += a[j] * b[j];
  return sum;
}

}  // namespace

double epilogue_pass_ms(const GemmProblem& problem) {
  if (problem.beta == 0 && problem.epilogue == Epilogue::none) return 0;
  constexpr double kLaunchMs = 2.5e-3, kMsPerMegabyte = 2e-3;
  const double megabytes = double(problem.batch) * double(problem.shape.m) * double(problem.shape.n) * 4e-6;
  return kLaunchMs + kMsPerMegabyte * megabytes * (problem.beta != 0 ? 1.5 : 1.0);
}

SmLimits sm_limits(int cc_major, int cc_minor) {
  SmLimits limits;
  const int cc = cc_major * 10 + cc_minor;
  switch (cc) {
    case 70: limits.shared_bytes = 96 * 1024; break;
    case 75: limits.threads = 1024, limits.blocks = 16, limits.shared_bytes = 64 * 1024; break;
    case 80: limits.shared_bytes = 164 * 1024; break;
    case 86: limits.threads = 1536, limits.blocks = 16, limits.shared_bytes = 100 * 1024; break;
    case 87: limits.threads = 1536, limits.blocks = 16, limits.shared_bytes = 164 * 1024; break;
    case 89: limits.threads = 1536, limits.blocks = 24, limits.shared_bytes = 100 * 1024; break;
    case 90: case 100: case 101: case 103: break;  // the defaults: Hopper's and Blackwell's
    default:
      if (cc_major >= 11) limits.threads = 1536, limits.shared_bytes = 100 * 1024;
      break;
  }
  return limits;
}

PerformanceModel::PerformanceModel(const RecordSet& records, std::size_t gpu, std::size_t templ)
    : gpu_(records.gpus.at(gpu)),
      templ_(records.templates.at(templ)),
      limits_(sm_limits(gpu_.cc_major, gpu_.cc_minor)) {
  if (!templ_.parsed) return;
  std::map<std::string, std::vector<const RecordedChoice*>> recorded;
  for (const RecordedChoice& c : records.choices) {
    if (c.gpu != gpu || c.templ != templ || c.median_ms <= 0) continue;
    recorded[c.config].push_back(&c);
  }
  for (const auto& [config, choices] : recorded) {
    try {
      Known& known = known_[config];
      known.config = templ_.parsed->parse_configuration(config);
      known.records = choices;
      known.registers = choices.front()->registers;
      known.static_shared_bytes = choices.front()->static_shared_bytes;
      known.tile_m = tile_along(known.config, 1);
      known.tile_n = tile_along(known.config, 0);
      if (const std::optional<BlockTile> declared = templ_.parsed->block_tile(known.config)) {
        known.declared_tile = *declared;
      }
      find_closed_form(known);
      // One set of bindings for all its shapes: only M, N and K change.
      Bindings values = templ_.parsed->bindings(known.config, &choices.front()->shape);
      known.may_add_into_c = templ_.parsed->may_add_into_c(known.config);
      known.measured_beyond_limits = std::any_of(choices.begin(), choices.end(), [&](const RecordedChoice* c) {
        values.find("M")->second = c->shape.m;
        values.find("N")->second = c->shape.n;
        values.find("K")->second = c->shape.k;
        return !templ_.parsed->worth_tuning(values);
      });
    } catch (const std::exception&) {
      known_.erase(config);  // not a configuration of this version: nothing to predict
    }
  }

  if (take_carried_model(records, gpu, templ)) return;

  // Each configuration's rows under each work share, scaled by its times: a row x / t against 1
  // weighs relative error. Each launch is computed once; the shares weigh it differently.
  std::map<std::string, Eigen::MatrixXd> rows, even_rows;
  for (const auto& [config, choices] : recorded) {
    if (!known_.contains(config)) continue;
    Eigen::MatrixXd a(Eigen::Index(choices.size()), Eigen::Index(kLaunchFeatures)), even = a;
    Eigen::Index used = 0;
    const Known& known = known_.at(config);
    Bindings scratch = shape_bindings(choices.front()->shape);
    for (const RecordedChoice* c : choices) {
      const std::optional<Launch> launch = launch_at(known, c->shape, &scratch);
      if (!launch) continue;
      const LaunchFeatures x = features_of(known, *launch, WorkShare::busiest_sm);
      const LaunchFeatures y = features_of(known, *launch, WorkShare::even);
      for (std::size_t j = 0; j < kLaunchFeatures; ++j) {
        a(used, Eigen::Index(j)) = x[j] / c->median_ms;
        even(used, Eigen::Index(j)) = y[j] / c->median_ms;
      }
      ++used;
    }
    if (used > 0) {
      rows.emplace(config, a.topRows(used));
      even_rows.emplace(config, even.topRows(used));
    }
  }
  // The work share whose fits predict the template's records better, each left out in turn (the
  // busiest SM's where they tie).
  if (leave_one_out_error(even_rows, kOwnFitShapes) < leave_one_out_error(rows, kOwnFitShapes)) {
    work_share_ = WorkShare::even;
    rows = std::move(even_rows);
  }

  std::vector<LaunchFeatures> own;
  for (const auto& [config, a] : rows) {
    ConfigurationModel model;
    model.shapes = int(a.rows());
    if (a.rows() >= kOwnFitShapes) {
      model.coefficients = fit_relative(a);
      model.own_fit = true;
      own.push_back(model.coefficients);
    }
    models_.emplace(config, model);
  }
  if (own.empty()) {
    std::erase_if(models_, [](const auto& entry) { return !entry.second.own_fit; });
    link_models();
    return;
  }
  LaunchFeatures typical{};
  for (std::size_t j = 0; j < kLaunchFeatures; ++j) {
    std::vector<double> values;
    for (const LaunchFeatures& c : own) values.push_back(c[j]);
    std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(values.size() / 2), values.end());
    typical[j] = values[values.size() / 2];
  }
  for (auto& [config, model] : models_) {
    if (model.own_fit) continue;
    // The scale s minimising the relative error of s * typical . x over the recorded times.
    const Eigen::MatrixXd& a = rows.at(config);
    double sum = 0, sum_squares = 0;
    for (Eigen::Index r = 0; r < a.rows(); ++r) {
      LaunchFeatures x{};
      for (std::size_t j = 0; j < kLaunchFeatures; ++j) x[j] = a(r, Eigen::Index(j));
      const double predicted = dot(typical, x);  // over the recorded time
      sum += predicted;
      sum_squares += predicted * predicted;
    }
    const double scale = sum_squares > 0 ? sum / sum_squares : 0;
    for (std::size_t j = 0; j < kLaunchFeatures; ++j) model.coefficients[j] = scale * typical[j];
  }
  // A configuration whose times the typical coefficients cannot scale to predicts nothing.
  std::erase_if(models_, [](const auto& entry) {
    const LaunchFeatures& c = entry.second.coefficients;
    return std::none_of(c.begin(), c.end(), [](double v) { return v > 0; });
  });
  link_models();
}

bool PerformanceModel::take_carried_model(const RecordSet& records, std::size_t gpu, std::size_t templ) {
  const auto carried = std::find_if(records.models.begin(), records.models.end(),
                                    [&](const RecordedModel& m) { return m.gpu == gpu && m.templ == templ; });
  if (carried == records.models.end()) return false;
  work_share_ = carried->work_share;
  for (const auto& [config, fitted] : carried->configurations) {
    const auto known = known_.find(config);
    if (known == known_.end()) continue;  // no record to serve it from (a bundle refuses that)
    models_[config] = ConfigurationModel{fitted.coefficients, fitted.shapes, fitted.own_fit};
    // The database's records beyond the limits may not be among those kept.
    known->second.measured_beyond_limits |= fitted.measured_beyond_limits;
  }
  link_models();
  return true;
}

void PerformanceModel::link_models() {
  for (auto& [config, known] : known_) {
    const auto model = models_.find(config);
    known.model = model == models_.end() ? nullptr : &model->second;
  }
}

double PerformanceModel::tile_along(const Configuration& config, int dimension) const {
  try {
    GemmShape small{4096, 4096, 4096}, large = small;
    std::int64_t GemmShape::*side = dimension == 0 ? &GemmShape::n : &GemmShape::m;
    small.*side = kProbe;
    large.*side = 2 * kProbe;
    Bindings scratch = shape_bindings(small);
    const std::uint32_t blocks = geometry_at(config, small, scratch).grid[dimension];
    const std::uint32_t twice = geometry_at(config, large, scratch).grid[dimension];
    if (blocks > 0 && twice == 2 * blocks) return double(kProbe) / blocks;
  } catch (const std::exception&) {
  }
  return 0;  // not a count of tiles
}

void PerformanceModel::find_closed_form(Known& known) const {
  if (known.tile_m <= 0 || known.tile_n <= 0 || known.tile_m != std::floor(known.tile_m) ||
      known.tile_n != std::floor(known.tile_n)) {
    return;
  }
  const auto tile_m = std::uint64_t(known.tile_m), tile_n = std::uint64_t(known.tile_n);
  try {
    std::optional<LaunchGeometry> first;
    Bindings scratch = shape_bindings(GemmShape{1, 1, 1});
    for (const GemmShape probe : {GemmShape{1000, 3000, 500}, GemmShape{3001, 999, 2047},
                                  GemmShape{17, 65, 8191}}) {
      const LaunchGeometry g = geometry_at(known.config, probe, scratch);
      if (g.grid[0] != ceil_div(std::uint64_t(probe.n), tile_n) ||
          g.grid[1] != ceil_div(std::uint64_t(probe.m), tile_m)) {
        return;
      }
      if (first && (g.grid[2] != first->grid[2] || g.block != first->block ||
                    g.dynamic_shared_bytes != first->dynamic_shared_bytes)) {
        return;
      }
      if (!first) first = g;
    }
    known.closed_form = true;
    known.split = first->grid[2];
    known.threads = first->threads_per_block();
    known.dynamic_shared_bytes = first->dynamic_shared_bytes;
  } catch (const std::exception&) {
  }
}

double PerformanceModel::slice_of_k(const Known& c, std::int64_t k, std::uint64_t slices) {
  const auto depth = std::uint64_t(c.declared_tile.depth);
  return double(ceil_div(std::uint64_t(k), slices * depth) * depth);
}

LaunchFeatures PerformanceModel::features_of(const Known& c, const Launch& launch, WorkShare share) const {
  const auto [blocks, work, tile, threads, dynamic_shared_bytes] = launch;
  const std::uint64_t warps = ceil_div(threads, 32);
  const std::uint64_t registers_per_warp = ceil_div(std::uint64_t(c.registers) * 32, 256) * 256;
  std::uint64_t resident = std::min<std::uint64_t>(limits_.blocks, limits_.threads / (warps * 32));
  if (registers_per_warp > 0) {
    resident = std::min<std::uint64_t>(resident, limits_.registers / (warps * registers_per_warp));
  }
  const std::uint64_t shared = std::uint64_t(c.static_shared_bytes) + dynamic_shared_bytes;
  if (shared > 0) {
    resident = std::min<std::uint64_t>(resident, limits_.shared_bytes / (shared + limits_.reserved_shared_bytes));
  }
  resident = std::max<std::uint64_t>(resident, 1);
  const double sms = std::max(gpu_.sm_count, 1);
  const double busiest = std::ceil(blocks / sms);  // blocks of the busiest SM
  const double waves = std::ceil(blocks / (sms * double(resident)));
  const double throughput = share == WorkShare::even ? blocks / sms * work : busiest * work;
  return LaunchFeatures{throughput * 1e-9, waves * work * 1e-9, waves, 1.0, busiest * tile * 1e-6};
}

std::optional<LaunchFeatures> PerformanceModel::launch_features(const std::string& config,
                                                                const GemmShape& shape) const {
  const auto known = known_.find(config);
  if (known == known_.end()) return std::nullopt;
  return launch_features(known->second, shape);
}

LaunchGeometry PerformanceModel::geometry_at(const Configuration& config, const GemmShape& shape,
                                             Bindings& scratch) const {
  if (gpu_.sm_count <= 0 && templ_.parsed->reads_sm_count()) {
    return templ_.parsed->launch_geometry(config, shape, gpu_.sm_count);  // refuses, saying why
  }
  scratch["M"] = shape.m;
  scratch["N"] = shape.n;
  scratch["K"] = shape.k;
  KernelTemplate::rebind(scratch, config);
  return templ_.parsed->launch_geometry(scratch, config, shape);
}

Bindings PerformanceModel::shape_bindings(const GemmShape& shape) const {
  Bindings values = templ_.parsed->bindings(Configuration{}, &shape);
  if (gpu_.sm_count > 0) values[kSmCountName] = gpu_.sm_count;
  return values;
}

std::optional<LaunchFeatures> PerformanceModel::launch_features(const Known& c, const GemmShape& shape,
                                                                Bindings* scratch) const {
  const std::optional<Launch> launch = launch_at(c, shape, scratch);
  if (!launch) return std::nullopt;
  return features_of(c, *launch, work_share_);
}

std::optional<PerformanceModel::Launch> PerformanceModel::launch_at(const Known& c, const GemmShape& shape,
                                                                    Bindings* scratch) const {
  const double tile = c.tile_m * c.tile_n;  // a block's elements of C, where the grid counts tiles
  if (c.closed_form) {
    const double blocks = double(ceil_div(std::uint64_t(shape.n), std::uint64_t(c.tile_n))) *
                          double(ceil_div(std::uint64_t(shape.m), std::uint64_t(c.tile_m))) * c.split;
    return Launch{blocks, tile * slice_of_k(c, shape.k, c.split), tile, c.threads, c.dynamic_shared_bytes};
  }
  LaunchGeometry geometry;
  try {
    Bindings own;
    if (!scratch) own = shape_bindings(shape);
    geometry = geometry_at(c.config, shape, scratch ? *scratch : own);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const double blocks = double(geometry.grid[0]) * geometry.grid[1] * geometry.grid[2];
  if (tile > 0) {
    return Launch{blocks, tile * slice_of_k(c, shape.k, geometry.grid[2]), tile, geometry.threads_per_block(),
                  geometry.dynamic_shared_bytes};
  }
  // A persistent schedule: the work spread evenly over its blocks, in whole tiles where declared.
  const auto padded = [](std::int64_t size, std::int64_t tile) {
    return double(tile > 0 ? (size + tile - 1) / tile * tile : size);
  };
  const double mn = padded(shape.m, c.declared_tile.rows) * padded(shape.n, c.declared_tile.columns);
  return Launch{blocks, mn * padded(shape.k, c.declared_tile.depth) / blocks, mn / blocks,
                geometry.threads_per_block(), geometry.dynamic_shared_bytes};
}

const Configuration* PerformanceModel::configuration(const std::string& config) const {
  const auto known = known_.find(config);
  return known == known_.end() ? nullptr : &known->second.config;
}

const std::vector<const RecordedChoice*>* PerformanceModel::records_of(const std::string& config) const {
  const auto known = known_.find(config);
  return known == known_.end() ? nullptr : &known->second.records;
}

bool PerformanceModel::measured_beyond_limits(const std::string& config) const {
  const auto known = known_.find(config);
  return known != known_.end() && known->second.measured_beyond_limits;
}

std::optional<Prediction> PerformanceModel::predict(const std::string& config, const GemmShape& shape) const {
  const auto known = known_.find(config);
  if (known == known_.end()) return std::nullopt;
  return predict(known->second, shape);
}

std::optional<Prediction> PerformanceModel::predict(const Known& known, const GemmShape& shape,
                                                    Bindings* scratch) const {
  if (!known.model) return std::nullopt;
  const std::optional<LaunchFeatures> x = launch_features(known, shape, scratch);
  if (!x) return std::nullopt;
  const double ms = dot(known.model->coefficients, *x);
  if (!(ms > 0)) return std::nullopt;
  return Prediction{ms, known.model->shapes, known.model->own_fit};
}

PerformanceModel::Ranking PerformanceModel::rank(const GemmProblem& problem, std::size_t count,
                                                 int sm_count) const {
  Ranking ranking;
  if (!templ_.parsed || count == 0) return ranking;
  std::vector<std::pair<Ranked, const Known*>> predicted;
  predicted.reserve(known_.size());
  Bindings scratch = shape_bindings(problem.shape);
  for (const auto& [config, known] : known_) {
    if (const std::optional<Prediction> p = predict(known, problem.shape, &scratch)) {
      predicted.push_back({Ranked{&config, *p}, &known});
    }
  }
  ranking.predicted = int(predicted.size());
  // Ranked by what the problem costs: the product, and the pass over C after one that adds into it.
  const double pass_ms = epilogue_pass_ms(problem);
  const auto cost = [&](const std::pair<Ranked, const Known*>& p) {
    return p.first.prediction.ms + (p.second->may_add_into_c ? pass_ms : 0.0);
  };
  std::sort(predicted.begin(), predicted.end(), [&](const auto& a, const auto& b) {
    return std::pair(cost(a), *a.first.config) < std::pair(cost(b), *b.first.config);
  });
  // A recorded configuration meets its template's requirements; only those that read the problem
  // can exclude it. One set of bindings serves every configuration: only the parameters change.
  const KernelTemplate& tmpl = *templ_.parsed;
  const bool reads_problem = tmpl.requirements_read_problem();
  Bindings values = tmpl.bindings(Configuration{}, problem);
  for (const auto& [candidate, known] : predicted) {
    if (ranking.fastest.size() == count) break;
    KernelTemplate::rebind(values, known->config);
    const bool may_run = (!reads_problem || !tmpl.violated_requirement(values, known->config, problem)) &&
                         (known->measured_beyond_limits || tmpl.worth_tuning(values)) &&
                         !tmpl.unsupported(problem, known->config);
    if (may_run) ranking.fastest.push_back(candidate);
    else if (ranking.fastest.empty()) ++ranking.passed_over;
  }
  return ranking;
}

std::vector<PerformanceModel::Ranked> PerformanceModel::trial_candidates(const GemmShape& shape,
                                                                        const std::vector<Ranked>& ranked,
                                                                        std::size_t count) const {
  std::vector<Ranked> chosen, passed;
  std::set<std::array<std::uint64_t, 4>> launches;  // grid and threads of those ranked so far
  Bindings scratch = shape_bindings(shape);
  for (const Ranked& candidate : ranked) {
    bool fresh = true;  // a launch that cannot be computed counts as one of its own
    try {
      const LaunchGeometry g = geometry_at(*configuration(*candidate.config), shape, scratch);
      fresh = launches.insert({g.grid[0], g.grid[1], g.grid[2], g.threads_per_block()}).second;
    } catch (const std::exception&) {
    }
    if (chosen.size() < count && (chosen.size() < (count + 1) / 2 || fresh)) chosen.push_back(candidate);
    else passed.push_back(candidate);
  }
  for (std::size_t i = 0; chosen.size() < count && i < passed.size(); ++i) chosen.push_back(passed[i]);
  return chosen;
}

const PerformanceModel& PerformanceModels::of(std::size_t gpu, std::size_t templ) {
  Fitted* fitted = nullptr;
  {
    std::lock_guard lock(mutex_);
    std::unique_ptr<Fitted>& entry = models_[{gpu, templ}];
    if (!entry) entry = std::make_unique<Fitted>();
    fitted = entry.get();
  }
  std::call_once(fitted->once, [&] { fitted->model = std::make_unique<PerformanceModel>(records_, gpu, templ); });
  return *fitted->model;
}

const RecordedShapes& PerformanceModels::recorded(std::size_t gpu, std::size_t templ) {
  std::call_once(indexed_, [&] {
    std::map<std::pair<std::size_t, std::size_t>, std::map<GemmShape, std::vector<const RecordedChoice*>>> by_shape;
    for (const RecordedChoice& c : records_.choices) by_shape[{c.gpu, c.templ}][c.shape].push_back(&c);
    for (auto& [pair, shapes] : by_shape) {
      RecordedShapes& into = recorded_[pair];
      for (auto& [shape, choices] : shapes) {
        std::sort(choices.begin(), choices.end(), [](const RecordedChoice* a, const RecordedChoice* b) {
          return std::tie(a->median_ms, a->config) < std::tie(b->median_ms, b->config);
        });
        into.records += int(choices.size());
        into.shapes.emplace_back(shape, std::move(choices));
      }
    }
  });
  static const RecordedShapes kNone;
  const auto found = recorded_.find({gpu, templ});
  return found == recorded_.end() ? kNone : found->second;
}

void PerformanceModels::fit_all(const std::function<bool(const RecordedTemplate&)>& wanted) {
  recorded(0, 0);  // the index, built once
  for (const auto& [pair, shapes] : recorded_) {
    if (wanted(records_.templates[pair.second])) of(pair.first, pair.second);
  }
}

}  // namespace tiletune::runtime

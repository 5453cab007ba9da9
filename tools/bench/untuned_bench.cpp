// The runtime library at shapes its database has no record of, against cuBLAS in the same run: the
// performance model's choice, and the first-call trial's (Options::trial_candidates), each verified
// against a reference before it is timed. Run by hand on a GPU host:
//
//   untuned_bench --db SUITE.db --workload SHAPES.txt --kernel warp_tiled [--kernel ...] [--trial 8]
//
// Per shape and template: the configuration each way chose, its time over cuBLAS's (in the
// template's precision's yardstick: TF32 for tf32, else SGEMM), and the trial's one-off cost (the
// first plan's wall time, compiling and timing its candidates included; a warm cubin cache makes
// it the timing alone). Per precision: the geometric mean and the worst of cuBLAS's time over the
// library's, taking at each shape the template whose choice expects the least time before any
// trial, with its trial's choice for the trial (what Blas runs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <tiletune/tiletune.h>

#include "tools/bench/cublas_sgemm.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/kernel_timer.h"
#include "tuner/pipeline/shape_verifier.h"
#include "tuner/runtime/workload_plan.h"

namespace {

using namespace tiletune;

struct Row {
  std::string kernel;
  Precision precision = Precision::fp32;
  GemmShape shape;
  std::string model_config, trial_config;
  double model_expected_ms = 0;  // the model's choice's, which ranks the templates
  double model_ms = 0, trial_ms = 0, cublas_ms = 0;
  double model_plan_ms = 0, trial_plan_ms = 0;  // the first plan's wall time
};

template <class F>
double wall_ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Options options_with(int trial) {
  Options options;
  options.lowest_precision = Precision::tf32;
  options.trial_candidates = trial;
  return options;
}

// cuBLAS's time over the library's, per precision: at each shape the template whose choice the
// model expects fastest, before any trial (what Blas runs, and trials within), then the geometric
// mean and the worst over the shapes.
void summarise(const std::vector<Row>& rows, bool trial) {
  const auto rank = [](const Row& row) {  // an unknown time (0) ranks last, as Blas ranks it
    return row.model_expected_ms > 0 ? row.model_expected_ms : std::numeric_limits<double>::infinity();
  };
  std::map<Precision, std::map<GemmShape, const Row*>> chosen;
  for (const Row& row : rows) {
    const Row*& at = chosen[row.precision][row.shape];
    if (!at || rank(row) < rank(*at)) at = &row;
  }
  for (const auto& [precision, shapes] : chosen) {
    double logs = 0, worst = 1e300;
    std::string worst_shape;
    for (const auto& [shape, row] : shapes) {
      const double speed = row->cublas_ms / (trial ? row->trial_ms : row->model_ms);
      fmt::print("  {} {} {:<16} {:<26} {:.3f}\n", trial ? "trial" : "model", to_string(precision),
                 shape.to_string(), row->kernel, speed);
      logs += std::log(speed);
      if (speed < worst) worst = speed, worst_shape = shape.to_string();
    }
    fmt::print("{} {}: {} over the library's: geomean {:.3f}, worst {:.3f} ({}), {} shapes\n",
               trial ? "trial" : "model", to_string(precision), cublas_yardstick(precision),
               std::exp(logs / double(shapes.size())), worst, worst_shape, shapes.size());
  }
}

int run(const std::string& db, const std::string& workload_path, const std::vector<std::string>& kernels, int trial) {
  const GpuDevice device;
  const std::vector<runtime::WorkloadShape> workload = runtime::read_workload(workload_path);
  const Library model_library = Library::open(db, options_with(0));
  const Library trial_library = Library::open(db, options_with(trial));
  fmt::print("{} ({} SMs), libtiletune {}, {} at {} shapes of {}, trial of {}\n\n", device.properties().name,
             device.properties().sm_count, version(), db, workload.size(), workload_path, trial);
  const TimingSettings timing;
  std::vector<Row> rows;
  for (const std::string& kernel : kernels) {
    const Gemm model_gemm = model_library.gemm(kernel), trial_gemm = trial_library.gemm(kernel);
    const CublasSgemm cublas(model_gemm.precision());
    for (const runtime::WorkloadShape& w : workload) {
      const GemmProblem packed = GemmProblem::packed(w.shape);
      const Problem problem = Problem::packed(w.shape.m, w.shape.n, w.shape.k);
      Row row;
      row.kernel = kernel;
      row.precision = model_gemm.precision();
      row.shape = w.shape;
      Plan model_plan, trial_plan;
      row.model_plan_ms = wall_ms([&] { model_plan = model_gemm.plan(problem); });
      row.trial_plan_ms = wall_ms([&] { trial_plan = trial_gemm.plan(problem); });
      if (model_plan.exact) {
        std::fprintf(stderr, "%s %s: recorded in %s, not an untuned shape: left out\n", kernel.c_str(),
                     w.shape.to_string().c_str(), db.c_str());
        continue;
      }
      row.model_config = model_plan.config;
      row.trial_config = trial_plan.config;
      row.model_expected_ms = model_plan.expected_ms;
      ShapeVerifier verifier(device, packed, 7);
      const auto on = [&](const Gemm& gemm) {
        return [&](CUstream s) {
          gemm.run(problem, reinterpret_cast<const float*>(verifier.a()), reinterpret_cast<const float*>(verifier.b()),
                   reinterpret_cast<float*>(verifier.c()), s);
        };
      };
      for (const auto& [gemm, name] : {std::pair{&model_gemm, "model"}, std::pair{&trial_gemm, "trial"}}) {
        if (const auto wrong = verifier.verify(on(*gemm), row.precision)) {
          throw std::runtime_error(fmt::format("{} {} ({}'s choice): wrong result: {}", kernel, w.shape.to_string(),
                                               name, *wrong));
        }
      }
      row.cublas_ms = time_launches([&](CUstream s) { cublas.run(packed, verifier.a(), verifier.b(), verifier.c(), s); },
                                    nullptr, timing).median_ms;
      row.model_ms = time_launches(on(model_gemm), nullptr, timing).median_ms;
      row.trial_ms = time_launches(on(trial_gemm), nullptr, timing).median_ms;
      std::fprintf(stderr, "%s %s: model %.3f, trial %.3f of cuBLAS\n", kernel.c_str(), w.shape.to_string().c_str(),
                   row.cublas_ms / row.model_ms, row.cublas_ms / row.trial_ms);
      rows.push_back(row);
    }
  }
  fmt::print("{:<26} {:<16} {:>9} {:>9} {:>9} {:>10} {:>10}  {} | {}\n", "template", "shape", "cuBLAS ms",
             "model", "trial", "plan ms", "trial plan", "model's configuration", "trial's");
  for (const Row& r : rows) {
    fmt::print("{:<26} {:<16} {:>9.4f} {:>9.3f} {:>9.3f} {:>10.2f} {:>10.2f}  {} | {}\n", r.kernel,
               r.shape.to_string(), r.cublas_ms, r.cublas_ms / r.model_ms, r.cublas_ms / r.trial_ms, r.model_plan_ms,
               r.trial_plan_ms, r.model_config, r.trial_config == r.model_config ? "same" : r.trial_config);
  }
  fmt::print("\n");
  summarise(rows, false);
  summarise(rows, true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the runtime library at shapes its database has no record of, against cuBLAS"};
  std::string db, workload;
  std::vector<std::string> kernels{"warp_tiled"};
  int trial = 8;
  app.add_option("--db", db, "the database the library serves from")->required()->check(CLI::ExistingFile);
  app.add_option("--workload", workload, "the shapes: a workload file (tiletune plan's)")->required()
      ->check(CLI::ExistingFile);
  app.add_option("--kernel", kernels, "templates (repeatable)")->capture_default_str();
  app.add_option("--trial", trial, "the first-call trial's candidates")->capture_default_str()->check(CLI::Range(2, 64));
  CLI11_PARSE(app, argc, argv);
  try {
    return run(db, workload, kernels, trial);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "untuned_bench: %s\n", e.what());
    return 1;
  }
}

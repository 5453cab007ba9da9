// What choosing a configuration costs a plan, apart from preparing the kernel: the runtime
// library's selection (tuner/runtime/selection.h) on a database's records, at each shape the first
// time (the template's performance model fitted inside it: a fresh set of models per shape) and
// again (the models kept, as the library keeps them). Run by hand:
//   plan_time --db SUITE.db --kernel warp_tiled --shape 333x777x2049 ...
#include <chrono>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tuner/core/gemm_shape.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/runtime/record_set.h"
#include "tuner/runtime/selection.h"

namespace {

double microseconds_of(const auto& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tiletune;
  std::string db, kernel = "warp_tiled", gpu;
  std::vector<std::string> shapes;
  CLI::App app{"the selection's time per shape, with the performance model fitted and kept"};
  app.add_option("--db", db, "database")->required();
  app.add_option("--kernel", kernel, "template name")->capture_default_str();
  app.add_option("--gpu", gpu, "select as on this recorded GPU (default: the one with most records)");
  app.add_option("--shape", shapes, "MxNxK (repeatable)")->required();
  CLI11_PARSE(app, argc, argv);

  const runtime::RecordSet records = runtime::load_database_records(db);
  fmt::print("{:<18} {:>10} {:>10} {:>10}  {}\n", "shape", "first us", "fit us", "again us", "chosen by, config");
  for (const std::string& text : shapes) {
    runtime::SelectionRequest request;
    request.template_name = kernel;
    request.problem = GemmProblem::packed(GemmShape::parse(text));
    request.gpu_name = gpu;
    request.lowest_precision = Precision::tf32;
    runtime::PerformanceModels models(records);
    runtime::Selection chosen;
    const double first = microseconds_of([&] { chosen = runtime::select_configuration(records, request, &models); });
    runtime::PerformanceModels fitted_only(records);
    const std::size_t templ = std::size_t(records.find_template(kernel) - records.templates.data());
    const std::size_t gpu_index = chosen.choice ? chosen.choice->gpu : 0;
    const double fit = microseconds_of([&] { fitted_only.of(gpu_index, templ); });
    constexpr int kRepeats = 100;
    const double again = microseconds_of([&] {
                           for (int i = 0; i < kRepeats; ++i) runtime::select_configuration(records, request, &models);
                         }) / kRepeats;
    fmt::print("{:<18} {:>10.0f} {:>10.0f} {:>10.0f}  {}, {}\n", text, first, fit, again,
               chosen.exact_shape ? "exact shape" : chosen.predicted ? "model" : "nearest shape", chosen.config);
  }
  return 0;
}

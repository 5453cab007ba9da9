#include "tools/bench/library_bench_options.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/bench/bench_suite.h"
#include "tools/cli/number_checks.h"

namespace tiletune {

GemmShape LibraryBenchOptions::overhead_shape() const {
  return *std::min_element(shapes.begin(), shapes.end(), [](const GemmShape& a, const GemmShape& b) {
    return a.flops() < b.flops();
  });
}

LibraryBenchOptions parse_library_bench_options(int argc, const char* const* argv) {
  LibraryBenchOptions options;
  std::vector<std::string> shape_texts;
  CLI::App app("library_bench: the runtime library's run against a direct driver launch and cuBLAS",
               "library_bench");
  app.add_option("--db", options.db, "the tuned tiletune database")->required();
  app.add_option("--kernel", options.kernel, "the template, by name")->capture_default_str();
  app.add_option("--bundle", options.bundle, "a bundle exported from the database (tiletune export)");
  app.add_option("--shape", shape_texts, "problem sizes MxNxK (default: tiletune bench's suite)");
  app.add_option("--out", options.out, "write every number as JSON to this file");
  app.add_option("--batches", options.batches, "overhead: timed batches of each kind")
      ->capture_default_str()->check(cli::kPositive);
  app.add_option("--calls-per-batch", options.calls_per_batch, "overhead: calls per batch")
      ->capture_default_str()->check(cli::kPositive);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success&) {
    throw LibraryBenchHelp{app.help()};
  } catch (const CLI::ParseError& e) {
    throw LibraryBenchUsageError(e.what());
  }

  if (!std::filesystem::is_regular_file(options.db)) {
    throw LibraryBenchUsageError(fmt::format("--db {}: no such database file", options.db));
  }
  if (!options.bundle.empty() && !std::filesystem::is_directory(options.bundle)) {
    throw LibraryBenchUsageError(fmt::format("--bundle {}: no such folder", options.bundle));
  }
  if (shape_texts.empty()) shape_texts.assign(std::begin(kBenchSuite), std::end(kBenchSuite));
  for (const std::string& text : shape_texts) {
    try {
      options.shapes.push_back(GemmShape::parse(text));
    } catch (const ShapeError& e) {
      throw LibraryBenchUsageError(fmt::format("--shape: {}", e.what()));
    }
  }
  return options;
}

}  // namespace tiletune

// tiletune export --db X --out DIR [--kernel K ...] [--gpu G ...] [--per-shape N]
//                 [--workload SHAPES.txt] [--format folder|cpp] [--name SYMBOL] [--cache-dir D]
//
// Writes a deployable bundle of the database (tuner/runtime/bundle_export.h): the fastest
// configurations of each GPU, template and shape with their cubins, and the performance model
// fitted on the whole database, which the runtime library opens without SQLite or NVRTC. A
// workload also keeps the configuration the model chooses at each of its shapes. The database is
// only read.
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/commands/commands.h"
#include "tuner/runtime/bundle_export.h"
#include "tuner/runtime/workload_plan.h"

namespace tiletune::cli {
namespace {

struct ExportOptions {
  std::string db = "tiletune.db";
  std::string out;
  std::vector<std::string> kernels, gpus;
  int per_shape = 4;
  std::string workload;
  std::string format = "folder";
  std::string name = "tiletune_bundle";
  std::string cache_dir;
};

int run(const ExportOptions& options) {
  if (!std::filesystem::is_regular_file(options.db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", options.db));
  }
  refuse_output_over_database("--out", options.out, options.db);
  try {
    std::vector<GemmShape> workload;
    if (!options.workload.empty()) {
      for (const runtime::WorkloadShape& w : runtime::read_workload(options.workload)) workload.push_back(w.shape);
    }
    const runtime::RecordSet records = runtime::select_for_export(
        runtime::load_database_records(options.db), {options.kernels, options.gpus, options.per_shape, workload});
    // Checked before compiling, so that a bad folder or name costs no compile.
    if (options.format == "cpp" && !is_identifier(options.name)) {
      throw runtime::ExportInputError("--name '" + options.name + "' is not a C identifier");
    }
    if (options.format == "folder" && std::filesystem::exists(options.out) &&
        !std::filesystem::is_empty(options.out) && !runtime::is_bundle(options.out)) {
      throw runtime::ExportInputError(
          options.out + ": not empty and no tiletune bundle (no manifest.json); choose an empty folder");
    }
    const runtime::BundleContents contents = runtime::build_bundle(
        records, options.db,
        CubinCache(options.cache_dir.empty() ? default_cubin_cache_dir()
                                           : std::filesystem::path(options.cache_dir)));
    std::string where;
    if (options.format == "cpp") {
      where = runtime::write_bundle_cpp(contents.files, options.out, options.name).string();
    } else {
      runtime::write_bundle_folder(contents.files, options.out);
      where = options.out;
    }
    std::set<GemmShape> shapes;
    std::set<std::pair<std::size_t, std::string>> configurations;  // of each template
    for (const runtime::RecordedChoice& c : records.choices) {
      shapes.insert(c.shape);
      configurations.emplace(c.templ, c.config);
    }
    fmt::print("exported {} templates, {} GPUs, {} shapes, {} configurations, {} cubins ({} bytes) to {}\n",
               records.templates.size(), records.gpus.size(), shapes.size(), configurations.size(),
               contents.cubins, contents.cubin_bytes, where);
  } catch (const runtime::ExportInputError& e) {
    throw UsageError(e.what());
  } catch (const runtime::WorkloadError& e) {
    throw UsageError(e.what());
  } catch (const runtime::ExportCompileError& e) {
    fmt::print(stderr, "tiletune: export failed: {}\n", e.what());
    return kFindings;
  }
  return kSuccess;
}

}  // namespace

void add_export_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* command = app.add_subcommand("export", "write a deployable bundle of the recorded winners");
  command->add_option("--db", options->db, "SQLite database file (only read)")->capture_default_str();
  command->add_option("--out", options->out, "the bundle's folder (created; an old bundle there is replaced)")
      ->required();
  command->add_option("--kernel", options->kernels, "only these templates (by name)");
  command->add_option("--gpu", options->gpus, "only these GPUs (by name)");
  command->add_option("--per-shape", options->per_shape, "configurations kept per GPU, template and shape")
      ->capture_default_str()->check(kPositive);
  command->add_option("--workload", options->workload,
                      "also keep the configuration the model chooses at each of these shapes "
                      "(a shape a line, 'MxNxK' or 'MxNxK CALLS', # comments)");
  command->add_option("--format", options->format,
                      "folder, or cpp: one source file embedding the bundle (OUT/NAME.cpp)")
      ->capture_default_str()->check(CLI::IsMember({"folder", "cpp"}));
  command->add_option("--name", options->name, "the function a cpp bundle defines")->capture_default_str();
  command->add_option("--cache-dir", options->cache_dir,
                      "where compiled cubins are kept (default $TILETUNE_CACHE_DIR, else ~/.cache/tiletune/cubins)");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

// tiletune compile KERNEL.cu... [--arch sm_90] [--config C | --cover [--seed S] | --shape MxNxK...]
//                  [--builds] [--cubin-dir DIR] [--no-cache]:
// every configuration (or one, or a sample taking every parameter value, or those a tune of the
// shapes would time) through NVRTC on all cores, no GPU needed; prints ptxas's registers, shared
// memory and spills, and exits 1 if any configuration fails. --cubin-dir keeps the cubins, for cuobjdump -sass. The outcomes go into
// (and come from) the user's cubin cache, which a tune reads: a later tune for that architecture
// with this NVRTC compiles none of them again.
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tuner/pipeline/pruning.h"
#include "tools/commands/commands.h"
#include "tuner/backend/gpu/compiled_kernels.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/configurations.h"

namespace tiletune::cli {
namespace {

struct CompileOptions {
  std::vector<std::string> kernels;
  std::string arch;
  std::string config;     // only this configuration
  bool cover = false;     // a covering sample drawn with `seed` (covering_sample)
  int cover_strength = 1;  // of this strength
  std::vector<std::string> shapes;  // only what a tune of these shapes would time
  std::uint64_t seed = 0;
  std::string cubin_dir;  // where to write each configuration's cubin
  bool no_cache = false;  // compile even what the cubin cache holds, and store nothing there
  bool verbose = false;
  bool builds = false;  // every build of each configuration (KernelTemplate::builds)
};

// This machine's GPU, if it has one.
std::optional<DeviceProperties> this_gpu() {
  try {
    return GpuDevice().properties();
  } catch (const GpuUnavailable&) {
    return std::nullopt;
  }
}

void write_cubin(const std::filesystem::path& dir, const KernelTemplate& tmpl,
                 const Configuration& config, const CompiledKernelImage& image) {
  std::filesystem::create_directories(dir);
  std::string name = tmpl.name + '-' + config.to_string() + ".cubin";
  for (char& c : name) {
    if (c == ',' || c == '=') c = '_';
  }
  std::ofstream file(dir / name, std::ios::binary);
  file.write(image.cubin.data(), std::streamsize(image.cubin.size()));
  if (!file) throw std::runtime_error(fmt::format("cannot write {}", (dir / name).string()));
}

int run(const CompileOptions& options) {
  const std::vector<KernelTemplate> templates = load_templates(options.kernels);
  if (options.config.empty()) {
    for (const KernelTemplate& tmpl : templates) check_enumerable(tmpl);  // before any output
  }
  const std::vector<GemmShape> shapes = parse_shapes(options.shapes);
  std::optional<DeviceProperties> gpu = this_gpu();
  const std::string arch = options.arch.empty() ? (gpu ? gpu->arch() : "sm_90") : options.arch;
  if (gpu && gpu->arch() != arch) gpu.reset();  // another target's limits are not this GPU's
  // The cubin cache a tune reads: what is compiled here a later tune (a GPU host's, say) takes.
  CompiledKernels compiled_kernels(arch, 0, options.no_cache ? std::nullopt : default_cubin_cache());
  fmt::print("NVRTC {} for {}\n{:<12} {:<40} {:>5} {:>10} {:>7} {:>8}\n", nvrtc_version(), arch,
             "template", "configuration", "regs", "smem B", "spill B", "ms");
  int failures = 0, compiled = 0;
  for (const KernelTemplate& tmpl : templates) {
    std::vector<Configuration> configs;
    if (!options.config.empty()) {
      configs.push_back(tmpl.parse_configuration(options.config));
    } else if (!shapes.empty()) {
      configs = configurations_to_compile(tmpl, shapes, gpu ? &*gpu : nullptr);
      if (configs.empty()) {
        fmt::print("{:<12} no configuration is tuned at {}\n", tmpl.name, fmt::join(options.shapes, ", "));
        continue;
      }
    } else {
      configs = options.cover ? covering_sample(tmpl, options.seed, options.cover_strength) : enumerate_configurations(tmpl);
      check_not_empty(tmpl, configs);
    }
    if (options.builds) {
      std::vector<Configuration> built;
      for (const Configuration& config : configs) {
        for (const Specialization& build : tmpl.builds(config)) {
          built.push_back(tmpl.build_configuration(config, build));
        }
      }
      configs = std::move(built);
    }
    // Compiled on all cores, or taken from the cache; reported in the space's order.
    std::vector<CompileOutcome> outcomes(configs.size());
    std::mutex told;
    compiled_kernels.prepare(tmpl, configs, [&](std::size_t i, const CompileOutcome& outcome) {
      std::lock_guard lock(told);
      outcomes[i] = outcome;
    });
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const Configuration& config = configs[i];
      const CompileOutcome& outcome = outcomes[i];
      if (!outcome.image) {
        ++failures;
        fmt::print("{:<12} {:<40} compile error\n{}\n", tmpl.name, config.to_string(), outcome.log);
        continue;
      }
      const CompiledKernelImage& image = *outcome.image;
      const std::string took =
          outcome.compile_seconds > 0 ? fmt::format("{:.1f}", outcome.compile_seconds * 1e3) : "cached";
      fmt::print("{:<12} {:<40} {:>5} {:>10} {:>7} {:>8}\n", tmpl.name, config.to_string(),
                 image.report.registers, image.report.static_shared_bytes, image.report.spill_bytes(),
                 took);
      if (options.verbose) fmt::print("{}\n", image.log);
      if (!options.cubin_dir.empty()) write_cubin(options.cubin_dir, tmpl, config, image);
      ++compiled;
    }
  }
  fmt::print("{} configurations compiled for {}, {} failed\n", compiled, arch, failures);
  return failures == 0 ? kSuccess : kFindings;
}

}  // namespace

void add_compile_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App* command = app.add_subcommand("compile", "compile every configuration with NVRTC (no GPU needed)");
  command->add_option("kernels", options->kernels, "kernel template files (.cu)")->required()->check(CLI::ExistingFile);
  command->add_option("--arch", options->arch, "target, e.g. sm_90 (default: this GPU's, else sm_90)");
  CLI::Option* config =
      command->add_option("--config", options->config, "only this configuration, e.g. TILE=16,PAD=0,SWIZZLE=1");
  command->add_flag("--cover", options->cover,
                    "a random sample, drawn with --seed, that takes every value of every parameter at least once")
      ->excludes(config);
  command->add_option("--cover-strength", options->cover_strength,
                      "with --cover: every combination of this many parameters' values that a valid "
                      "configuration takes, each in some configuration of the sample (2: every pair)")
      ->capture_default_str()
      ->check(kPositive)
      ->needs("--cover");
  command->add_option("--seed", options->seed, "the seed of --cover's sample")->capture_default_str();
  command
      ->add_option("--shape", options->shapes,
                   "only the configurations a tune of this problem size MxNxK would time (repeatable)")
      ->excludes(config)
      ->excludes("--cover");
  command->add_option("--cubin-dir", options->cubin_dir, "write each configuration's cubin into this folder");
  command->add_flag("--no-cache", options->no_cache,
                    "compile even what the cubin cache holds (to time NVRTC), and store nothing there");
  command->add_flag("--builds", options->builds,
                    "every build of each configuration, for a template that specializes parts of the "
                    "contract (its configuration shows the parts: OP_B=1,EPILOGUE=3)");
  command->add_flag("-v,--verbose", options->verbose, "print NVRTC's whole log");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

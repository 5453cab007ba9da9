// tiletune compile KERNEL.cu... [--arch sm_90] [--config C | --cover [--seed S]] [--cubin-dir DIR]:
// every configuration (or one, or a sample taking every parameter value) through NVRTC on all
// cores, no GPU needed; prints ptxas's registers, shared memory and spills, and exits 1 if any
// configuration fails. --cubin-dir keeps the cubins, for cuobjdump -sass.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
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
  std::uint64_t seed = 0;
  std::string cubin_dir;  // where to write each configuration's cubin
  bool verbose = false;
};

std::string default_arch() {
  try {
    return GpuDevice().properties().arch();
  } catch (const GpuUnavailable&) {
    return "sm_90";
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

struct CompileResult {
  std::optional<CompiledKernelImage> image;
  std::string log;  // NVRTC's, when it did not compile
  double milliseconds = 0;
  std::exception_ptr failure;  // NVRTC itself failed (NvrtcError): rethrown on the main thread
};

// One configuration's compile and how long it took.
CompileResult compile_timed(const KernelTemplate& tmpl, const Configuration& config,
                            const std::string& arch) {
  CompileResult result;
  const auto start = std::chrono::steady_clock::now();
  try {
    result.image = compile_configuration(tmpl, config, arch);
  } catch (const CompileError& e) {
    result.log = e.log();
  } catch (...) {
    result.failure = std::current_exception();
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  result.milliseconds = std::chrono::duration<double, std::milli>(elapsed).count();
  return result;
}

int run(const CompileOptions& options) {
  const std::vector<KernelTemplate> templates = load_templates(options.kernels);
  if (options.config.empty()) {
    for (const KernelTemplate& tmpl : templates) check_enumerable(tmpl);  // before any output
  }
  const std::string arch = options.arch.empty() ? default_arch() : options.arch;
  fmt::print("NVRTC {} for {}\n{:<12} {:<40} {:>5} {:>10} {:>7} {:>8}\n", nvrtc_version(), arch,
             "template", "configuration", "regs", "smem B", "spill B", "ms");
  int failures = 0, compiled = 0;
  for (const KernelTemplate& tmpl : templates) {
    std::vector<Configuration> configs;
    if (options.config.empty()) {
      configs = options.cover ? covering_sample(tmpl, options.seed) : enumerate_configurations(tmpl);
      check_not_empty(tmpl, configs);
    } else {
      configs.push_back(tmpl.parse_configuration(options.config));
    }
    // Compiled on all cores; reported in the space's order.
    std::vector<CompileResult> results(configs.size());
    std::atomic<std::size_t> next{0};
    {
      std::vector<std::jthread> threads;
      const std::size_t count =
          std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), configs.size());
      for (std::size_t t = 0; t < count; ++t) {
        threads.emplace_back([&] {
          for (std::size_t i = next++; i < configs.size(); i = next++) {
            results[i] = compile_timed(tmpl, configs[i], arch);
          }
        });
      }
    }
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const Configuration& config = configs[i];
      const CompileResult& result = results[i];
      if (result.failure) std::rethrow_exception(result.failure);
      if (!result.image) {
        ++failures;
        fmt::print("{:<12} {:<40} compile error\n{}\n", tmpl.name, config.to_string(), result.log);
        continue;
      }
      const CompiledKernelImage& image = *result.image;
      fmt::print("{:<12} {:<40} {:>5} {:>10} {:>7} {:>8.1f}\n", tmpl.name, config.to_string(),
                 image.report.registers, image.report.static_shared_bytes, image.report.spill_bytes(),
                 result.milliseconds);
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
  command->add_option("--seed", options->seed, "the seed of --cover's sample")->capture_default_str();
  command->add_option("--cubin-dir", options->cubin_dir, "write each configuration's cubin into this folder");
  command->add_flag("-v,--verbose", options->verbose, "print NVRTC's whole log");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

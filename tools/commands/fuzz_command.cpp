// tiletune fuzz KERNEL.cu... [--backend gpu|cpu] [--cases N] [--seed S] [--config A=1,B=2]
//               [--case '...'] [--sanitize]
//
// Runs the GEMM property on every configuration (or the one given), prints each failure with its
// minimal case and the command that replays it, and exits 1 if anything failed.
#include <fmt/format.h>

#include "fuzz/cpu_backend/cpu_executor.h"
#include "fuzz/cpu_backend/sanitizer_runtime.h"
#include "fuzz/gpu_executor.h"
#include "fuzz/property_runner.h"
#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/gpu_device.h"
#include "tuner/nvrtc_compiler.h"
#include "tuner/search_space.h"

namespace tiletune::cli {
namespace {

struct FuzzOptions {
  std::vector<std::string> kernels;
  int cases = 100;
  std::uint64_t seed = 0;
  std::string config;
  std::string replay_case;
  bool no_shrink = false;
  std::string backend = "gpu";
  bool sanitize = false;
};

std::string replay_command(const std::string& backend, const KernelTemplate& tmpl, const Configuration& config,
                           const GemmCase& gemm_case) {
  return fmt::format("tiletune fuzz {} --backend {} --config {} --case '{}'", tmpl.path.string(),
                     backend, config.to_string(), gemm_case.to_string());
}

int run(const FuzzOptions& options) {
  // --sanitize on the CPU: kernels built with ASan and UBSan, whose runtime this process needs
  // from its start (it re-executes itself with it preloaded, so this comes first).
  CpuBackendOptions cpu_options;
  if (options.sanitize) {
    if (options.backend != "cpu") {
      throw UsageError("--sanitize is not available with --backend gpu yet: use --backend cpu");
    }
    cpu_options.sanitize = true;
    try {
      ensure_sanitizer_runtime(cpu_options.compiler);
    } catch (const SanitizerRuntimeUnavailable& e) {
      fmt::print(stderr, "tiletune: {}\n", e.what());
      return kEnvironment;
    }
  }
  const std::vector<KernelTemplate> templates = load_templates(options.kernels);
  if (!options.config.empty() && templates.size() != 1) {
    throw UsageError("--config names one configuration: give exactly one template with it");
  }
  std::optional<GemmCase> replay;
  if (!options.replay_case.empty()) {
    try {
      replay = GemmCase::parse(options.replay_case);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--case: ") + e.what());
    }
  }
  // The GPU backend needs a device; the CPU backend runs the same source through the host compiler.
  std::unique_ptr<GpuDevice> device;
  if (options.backend == "gpu") device = std::make_unique<GpuDevice>();
  const std::string where = device ? device->properties().name : "the CPU";
  FuzzSettings settings;
  settings.cases = options.cases;
  settings.seed = options.seed;
  settings.shrink = !options.no_shrink;

  int failed = 0, passed = 0, skipped = 0;
  for (const KernelTemplate& tmpl : templates) {
    const std::vector<Configuration> configs =
        options.config.empty() ? enumerate_configurations(tmpl)
                               : std::vector<Configuration>{tmpl.parse_configuration(options.config)};
    for (const Configuration& config : configs) {
      const std::string label = fmt::format("{} [{}]", tmpl.name, config.to_string());
      progress_line(fmt::format("fuzz {} on {}", label, where), false);
      FuzzReport report;
      try {
        std::unique_ptr<GemmExecutor> executor;
        if (device) {
          const CompiledKernelImage image = compile_configuration(tmpl, config, device->properties().arch());
          auto gpu = std::make_unique<GpuExecutor>(*device, tmpl, config, image);
          const GemmShape probe = replay ? replay->problem.shape : GemmShape{64, 64, 64};
          if (auto limit = exceeds_device_limits(tmpl.launch_geometry(config, probe),
                                                 gpu->resources(), device->properties())) {
            ++skipped;
            progress_line(fmt::format("skip {}: beyond this device: {}", label, *limit), true);
            continue;
          }
          executor = std::move(gpu);
        } else {
          executor = std::make_unique<CpuExecutor>(tmpl, config, cpu_options);
        }
        report = replay ? run_single_case(*executor, *replay)
                        : fuzz_configuration(*executor, config, settings);
      } catch (const UnsupportedOnBackend& e) {
        ++skipped;
        progress_line(fmt::format("skip {}: {}", label, e.what()), true);
        continue;
      } catch (const CompileError& e) {
        ++failed;
        progress_line(fmt::format("FAIL {}: compile error\n{}", label, e.log()), true);
        continue;
      }
      if (report.verdict == FuzzVerdict::passed) {
        ++passed;
        progress_line(fmt::format("pass {}: {} cases", label, report.cases_passed), true);
        continue;
      }
      ++failed;
      std::string text = fmt::format("FAIL {}: {}", label, report.finding);
      if (report.counterexample) {
        text += fmt::format("\n  minimal case ({} shrink steps, after {} passing cases): {}\n  replay: {}",
                            report.shrink_steps, report.cases_passed,
                            report.counterexample->problem.to_string(),
                            replay_command(options.sanitize ? options.backend + " --sanitize"
                                                            : options.backend,
                                           tmpl, config, *report.counterexample));
      }
      progress_line(text, true);
    }
  }
  fmt::print("{} configurations passed, {} failed, {} skipped\n", passed, failed, skipped);
  return failed == 0 ? kSuccess : kFindings;
}

}  // namespace

void add_fuzz_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<FuzzOptions>();
  CLI::App* command = app.add_subcommand("fuzz", "property-test every configuration on random awkward shapes");
  command->add_option("kernels", options->kernels, "kernel template files (.cu)")->required()->check(CLI::ExistingFile);
  command->add_option("--cases", options->cases, "cases per configuration")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--seed", options->seed, "RapidCheck seed")->capture_default_str();
  command->add_option("--config", options->config, "only this configuration, e.g. TILE=16,PAD=0,SWIZZLE=1");
  command->add_option("--case", options->replay_case, "replay one case as a failure report printed it");
  command->add_option("--backend", options->backend, "gpu, or cpu: the same source on the host compiler, threads as fibers")
      ->capture_default_str()->check(CLI::IsMember({"gpu", "cpu"}));
  command->add_flag("--no-shrink", options->no_shrink, "report the first failing case as found");
  command->add_flag("--sanitize", options->sanitize,
                    "cpu: build kernels with AddressSanitizer and UndefinedBehaviorSanitizer, "
                    "guards and padding poisoned; a report fails the case");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

// tiletune fuzz KERNEL.cu... [--backend gpu|cpu] [--cases N] [--seed S] [--builds N|all]
//               [--config A=1,B=2 ... | --sample N | --cover | --except-sample N] [--shard I/N]
//               [--case '...']... [--sanitize] [--sanitize-cases N]
//
// Runs the GEMM property on every configuration (or the one given), prints each failure with its
// minimal case and the command that replays it, and exits 1 if anything failed. The last line
// gives the property cases run per second on the backend.
//
// --sanitize: on the CPU the kernels are built with AddressSanitizer and UndefinedBehaviorSanitizer
// (tuner/backend/cpu/sanitizer_runtime.h); on the GPU a sample of cases is replayed under
// compute-sanitizer's four tools after the fuzz (gpu_sanitize.h).
//
// On the CPU each configuration is fuzzed in a child process with a watchdog (isolated_fuzz.h):
// a kernel that crashes or hangs fails its configuration, with the case, and the run goes on. On
// the GPU a kernel still running after --watchdog seconds ends the run with one line naming the
// case: a hung kernel cannot be stopped within the process (GpuExecutor).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fuzz/compute_sanitizer.h"
#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/cli/shell_command.h"
#include "tools/commands/commands.h"
#include "tools/fuzzing/configuration_fuzzer.h"
#include "tools/fuzzing/gpu_sanitize.h"
#include "tools/fuzzing/isolated_fuzz.h"
#include "tuner/backend/cpu/sanitizer_runtime.h"
#include "tuner/core/configurations.h"
#include "tuner/search/tune_shard.h"

namespace tiletune::cli {
namespace {

struct FuzzOptions {
  std::vector<std::string> kernels;
  int cases = 100;
  std::uint64_t seed = 0;
  std::vector<std::string> configs;  // only these configurations
  int sample = 0;  // a seeded random sample of this many configurations per template (0: all)
  bool cover = false;  // a seeded sample that takes every value of every parameter (covering_sample)
  int cover_strength = 1;  // ... or every combination of this many parameters' values
  std::string shard;   // "I/N": only the configurations this share owns (tune_shard.h); empty: all
  // Every configuration but the `except_sample` that --sample would draw with this seed: those
  // another run fuzzes (CI's sanitized fuzz), so that the two together fuzz each once.
  int except_sample = 0;
  std::vector<std::string> replay_cases;
  bool no_shrink = false;
  int extra_builds = 1;  // -1: every build (--builds all)
  std::string backend = "gpu";
  bool sanitize = false;
  int sanitize_cases = 4;
  bool sanitizer_child = false;  // hidden: replay under compute-sanitizer, with markers
  // cpu: the longest a configuration's child may stay silent; gpu: the longest a case's kernel
  // may run
  double watchdog_seconds = 30;
  // hidden: fuzz only this configuration of this template, here, for a parent (cpu)
  std::string isolated_template, isolated_config;
};

std::chrono::milliseconds watchdog(const FuzzOptions& options) {
  return std::chrono::milliseconds(std::int64_t(options.watchdog_seconds * 1000));
}

// The child that fuzzes one configuration on the CPU (isolated_fuzz.h): this command line as it
// was given, so that the child runs with every option of ours, narrowed to that configuration.
std::vector<std::string> isolated_child_argv(const KernelTemplate& tmpl, const Configuration& config) {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string word; std::getline(cmdline, word, '\0');) argv.push_back(word);
  if (argv.empty()) throw std::runtime_error("cannot read /proc/self/cmdline");
  argv.front() = "/proc/self/exe";
  argv.insert(argv.end(), {"--isolated-template", tmpl.path.string(), "--isolated-config", config.to_string()});
  return argv;
}

std::string replay_command(const FuzzOptions& options, const KernelTemplate& tmpl,
                           const Configuration& config, const GemmCase& gemm_case) {
  std::vector<std::string> words{"tiletune", "fuzz", tmpl.path.string(), "--backend", options.backend};
  if (options.sanitize && options.backend == "cpu") words.push_back("--sanitize");
  words.insert(words.end(), {"--config", config.to_string(), "--case", gemm_case.to_string()});
  return shell_command(words);
}

std::vector<Configuration> configurations_of(const KernelTemplate& tmpl, const FuzzOptions& options) {
  if (!options.configs.empty()) {
    std::vector<Configuration> chosen;
    for (const std::string& text : options.configs) chosen.push_back(tmpl.parse_configuration(text));
    return chosen;
  }
  // A sample is drawn without listing the space, which may be too large to list.
  std::vector<Configuration> configs = options.cover        ? covering_sample(tmpl, options.seed, options.cover_strength)
                                       : options.sample > 0 ? sample_configurations(tmpl, options.sample, options.seed)
                                                            : enumerate_configurations(tmpl);
  check_not_empty(tmpl, configs);  // nothing fuzzed is never a pass
  if (options.except_sample > 0) {
    std::set<std::string> elsewhere;
    for (const Configuration& config : sample_configurations(tmpl, options.except_sample, options.seed)) {
      elsewhere.insert(config.to_string());
    }
    std::erase_if(configs, [&](const Configuration& config) { return elsewhere.contains(config.to_string()); });
  }
  if (!options.shard.empty()) {
    // As `tune --shard` shares out configurations, so that N processes fuzz each one once.
    const TuneShard shard = TuneShard::parse(options.shard);
    std::erase_if(configs, [&](const Configuration& config) {
      return !shard.owns_configuration(tmpl.source_hash, config.to_string());
    });
  }
  return configs;
}

// The cases compute-sanitizer replays reach its child on the command line (gpu_sanitize.h), which
// holds a few tens of thousands at most; each costs four tool runs per configuration besides.
constexpr int kMaxSanitizeCases = 1000;

int run(const FuzzOptions& options) {
  if (!options.shard.empty()) {
    try {
      TuneShard::parse(options.shard);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  int sanitize_cases = options.sanitize_cases;
  if (options.sanitize && options.backend == "gpu" && sanitize_cases > kMaxSanitizeCases) {
    fmt::print(stderr, "tiletune: --sanitize-cases {} capped to {}: each is replayed under four "
               "compute-sanitizer tools, its case on the child's command line\n",
               sanitize_cases, kMaxSanitizeCases);
    sanitize_cases = kMaxSanitizeCases;
  }
  // --sanitize on the CPU: kernels built with ASan and UBSan, whose runtime this process needs
  // from its start (it re-executes itself with it preloaded, so this comes first).
  CpuBackendOptions cpu_options;
  if (options.sanitize && options.backend == "cpu") {
    cpu_options.sanitize = true;
    try {
      ensure_sanitizer_runtime(cpu_options.compiler);
    } catch (const SanitizerRuntimeUnavailable& e) {
      fmt::print(stderr, "tiletune: {}\n", e.what());
      return kEnvironment;
    }
  }
  const std::vector<KernelTemplate> templates = load_templates(options.kernels);
  if (!options.configs.empty() && templates.size() != 1) {
    throw UsageError("--config names configurations of one template: give exactly one template with it");
  }
  std::vector<GemmCase> replay;
  for (const std::string& text : options.replay_cases) {
    try {
      replay.push_back(GemmCase::parse(text));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--case: ") + e.what());
    }
  }
  // Bad configurations, replayed cases their requirements exclude and a missing sanitizer are
  // reported before any work is done.
  for (const KernelTemplate& tmpl : templates) {
    for (const Configuration& config : configurations_of(tmpl, options)) {
      for (const GemmCase& gemm_case : replay) tmpl.check_requirements(config, gemm_case.problem);
    }
  }
  if (options.sanitize && options.backend == "gpu" && !options.sanitizer_child) {
    try {
      find_compute_sanitizer();
    } catch (const SanitizerNotFound& e) {
      fmt::print(stderr, "tiletune: --sanitize: {}\n", e.what());
      return kEnvironment;
    }
  }

  FuzzBackend backend(options.backend, cpu_options);
  backend.set_kernel_timeout(watchdog(options));
  if (options.sanitizer_child) {
    int status = kSuccess;
    for (const KernelTemplate& tmpl : templates) {
      status = std::max(status, run_sanitizer_child(backend, tmpl, configurations_of(tmpl, options),
                                                    replay));
    }
    return status;
  }
  FuzzSettings settings;
  settings.cases = options.cases;
  settings.seed = options.seed;
  settings.shrink = !options.no_shrink;
  settings.extra_builds = options.extra_builds;
  settings.limits = backend.case_limits();
  if (!options.isolated_config.empty()) {
    for (const KernelTemplate& tmpl : templates) {
      if (tmpl.path.string() != options.isolated_template) continue;
      fuzz_as_isolated_child(backend, tmpl, tmpl.parse_configuration(options.isolated_config), settings,
                             replay, watchdog(options));
      return kSuccess;
    }
    throw UsageError("--isolated-template names none of the templates given");
  }

  int failed = 0, passed = 0, skipped = 0;
  long cases_run = 0;
  double seconds = 0;
  for (const KernelTemplate& tmpl : templates) {
    const std::vector<Configuration> configs = configurations_of(tmpl, options);
    if (const GpuBackend* gpu = backend.gpu(); gpu != nullptr && !tmpl.runs_on(gpu->device().arch())) {
      // Every compile would fail the same way: one line for the template (as tune does).
      skipped += int(configs.size());
      progress_line(fmt::format("skip {}: it uses instructions of {} only, and this GPU is {} ({} "
                                "configurations)", tmpl.name, tmpl.feature_arch,
                                backend.backend().device().arch(), configs.size()),
                    true);
      continue;
    }
    if (backend.gpu() != nullptr) {
      progress_line(fmt::format("compiling {} configurations of {}", configs.size(), tmpl.name), false);
      seconds += backend.prepare(tmpl, configs);
    }
    for (const Configuration& config : configs) {
      const std::string label = fmt::format("{} [{}]", tmpl.name, config.to_string());
      progress_line(fmt::format("fuzz {} on {}", label, backend.where()), false);
      const ConfigurationOutcome outcome =
          options.backend == "cpu"
              ? fuzz_in_child(isolated_child_argv(tmpl, config), watchdog(options))
              : fuzz_configuration_on(backend, tmpl, config, settings, replay);
      using Kind = ConfigurationOutcome::Kind;
      seconds += outcome.seconds;
      switch (outcome.kind) {
        case Kind::skipped:
          ++skipped;
          progress_line(fmt::format("skip {}: {}", label, outcome.detail), true);
          break;
        case Kind::compile_error:
          ++failed;
          progress_line(fmt::format("FAIL {}: compile error\n{}", label, outcome.detail), true);
          break;
        case Kind::passed:
          ++passed;
          cases_run += outcome.report.cases_passed;
          progress_line(fmt::format("pass {}: {} cases{}{}", label, outcome.report.cases_passed,
                                    outcome.builds.empty()
                                        ? ""
                                        : fmt::format(" (builds: {})", fmt::join(outcome.builds, "; ")),
                                    outcome.probe.empty() ? "" : ", " + outcome.probe),
                        true);
          break;
        case Kind::failed:
          ++failed;
          cases_run += outcome.report.cases_passed +
                       (outcome.report.counterexample ? 1 + outcome.report.shrink_steps : 0);
          if (!outcome.died.empty()) {
            progress_line(describe_death(label, outcome,
                                         outcome.report.counterexample
                                             ? replay_command(options, tmpl, config,
                                                              *outcome.report.counterexample)
                                             : ""),
                          true);
            break;
          }
          progress_line(describe_failure(label, outcome.report,
                                         outcome.report.counterexample
                                             ? replay_command(options, tmpl, config,
                                                              *outcome.report.counterexample)
                                             : ""),
                        true);
          break;
      }
    }
  }
  if (options.sanitize && options.backend == "gpu") {
    SanitizeSettings sanitize;
    sanitize.cases = sanitize_cases;
    sanitize.seed = options.seed;
    sanitize.configs = options.configs;
    sanitize.sample = options.sample;
    sanitize.cover = options.cover;
    sanitize.cover_strength = options.cover_strength;
    failed += sanitize_on_gpu(templates, sanitize);
  }
  // Throughput counts every case judged, shrink attempts that failed excluded; the time includes
  // compiling and loading each configuration, as a user waits for it.
  fmt::print("{} configurations passed, {} failed, {} skipped; {} cases in {:.1f} s on {}: {:.0f} "
             "cases/s\n",
             passed, failed, skipped, cases_run, seconds, backend.where(),
             seconds > 0 ? double(cases_run) / seconds : 0.0);
  if (failed == 0 && passed == 0 && skipped > 0) {
    // Nothing was fuzzed: that is not a pass.
    fmt::print(stderr, "tiletune: nothing was fuzzed: every configuration was skipped on {}\n",
               backend.where());
    return kEnvironment;
  }
  return failed == 0 ? kSuccess : kFindings;
}

}  // namespace

void add_fuzz_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<FuzzOptions>();
  CLI::App* command = app.add_subcommand("fuzz", "property-test every configuration on random awkward shapes");
  command->add_option("kernels", options->kernels, "kernel template files (.cu)")->required()->check(CLI::ExistingFile);
  command->add_option("--cases", options->cases, "cases per configuration")->capture_default_str()->check(kPositive);
  command->add_option("--seed", options->seed, "RapidCheck seed")->capture_default_str();
  command->add_option("--config", options->configs, "only this configuration, e.g. TILE=16,PAD=0,SWIZZLE=1 (repeatable)");
  CLI::Option* sample = command->add_option("--sample", options->sample, "a random sample of this many configurations per template, drawn with --seed")->check(kPositive);
  command->add_flag("--cover", options->cover,
                    "a random sample, drawn with --seed, that takes every value of every parameter at least once")
      ->excludes(sample);
  command->add_option("--cover-strength", options->cover_strength,
                      "with --cover: every combination of this many parameters' values that a valid "
                      "configuration takes, each in some configuration of the sample (2: every pair)")
      ->capture_default_str()
      ->check(kPositive)
      ->needs("--cover");
  command->add_option("--except-sample", options->except_sample,
                      "every configuration but the N that --sample N draws with --seed (those "
                      "another run fuzzes)")
      ->check(kPositive)
      ->excludes(sample)
      ->excludes("--cover")
      ->excludes("--config");
  command->add_option("--shard", options->shard,
                      "I/N: only this share of the configurations (as tune --shard shares them), so "
                      "that N runs fuzz each configuration once");
  command->add_option("--case", options->replay_cases, "replay a case as a failure report printed it (repeatable)");
  command->add_option("--backend", options->backend, "gpu, or cpu: the same source on the host compiler, threads as fibers")
      ->capture_default_str()->check(CLI::IsMember({"gpu", "cpu"}));
  command->add_flag("--no-shrink", options->no_shrink, "report the first failing case as found");
  command->add_option_function<std::string>(
      "--builds",
      [options](const std::string& text) {
        if (text == "all") {
          options->extra_builds = -1;
          return;
        }
        int count = -1;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
        if (error != std::errc() || end != text.data() + text.size() || count < 0 || count > 1000) {
          throw CLI::ValidationError("--builds", "expected a count of 0 to 1000, or all, not '" +
                                                     text.substr(0, 40) + "'");
        }
        options->extra_builds = count;
      },
      "a template that specializes parts of the contract: the builds of each configuration fuzzed "
      "beyond the plain one, drawn with --seed (default 1), or all");
  command->add_flag("--sanitize", options->sanitize,
                    "cpu: build kernels with AddressSanitizer and UndefinedBehaviorSanitizer, guards "
                    "and padding poisoned; gpu: also replay a sample of cases under compute-sanitizer "
                    "(memcheck, racecheck, initcheck, synccheck)");
  command->add_option("--sanitize-cases", options->sanitize_cases,
                      "gpu --sanitize: cases replayed per configuration and tool")
      ->capture_default_str()->check(kPositive);
  command->add_option("--watchdog", options->watchdog_seconds,
                      "cpu: seconds a configuration may go without finishing a case before it is "
                      "killed and failed (each runs in a child process); gpu: seconds a case's "
                      "kernel may run before the fuzz ends with it, as a hang")
      ->capture_default_str()->check(CLI::Range(1e-3, kMaxWatchdogSeconds));
  command->add_flag("--sanitizer-child", options->sanitizer_child)->group("");  // internal
  command->add_option("--isolated-template", options->isolated_template)->group("");  // internal
  command->add_option("--isolated-config", options->isolated_config)->group("");    // internal
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

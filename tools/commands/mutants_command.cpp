// tiletune mutants SUITE.json... [--backend gpu|cpu] [--cases N] [--seed S] [--mutant NAME]
//                  [--config A=1,B=2] [--case '...'] [--watchdog SECONDS] [--no-shrink]
//
// Mutation testing of the fuzzer (fuzz/mutant_suite.h): plants each mutant's bug into its template
// and fuzzes every configuration the bug is live in. A mutant is caught when every one of them
// fails; one that passes somewhere has survived, which is a blind spot of the fuzzer: exit 1.
//
// On the GPU each configuration runs in a child process (tiletune itself): after an illegal
// address CUDA cannot go on in the process that made it, and mutants make illegal addresses. A
// child that gives no result within --watchdog seconds (120) is killed and its configuration
// counts as caught: its kernel hung (a wait for an mbarrier phase that never completes spins on
// the GPU until something kills it), so no fuzz of it passes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzz/mutant_suite.h"
#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tools/cli/shell_command.h"
#include "tools/commands/commands.h"
#include "tools/fuzzing/configuration_fuzzer.h"
#include "tuner/core/configurations.h"
#include "tuner/pipeline/evaluation_worker.h"  // die_with_parent
#include "tuner/system/child_process.h"

namespace tiletune::cli {
namespace {

struct MutantsOptions {
  std::vector<std::string> suites;
  int cases = 100;
  std::uint64_t seed = 0;
  std::string mutant;
  std::string config;
  int sample = 0;  // fuzz each mutant in a seeded sample of this many of its live configurations
  std::string replay_case;
  std::string backend = "gpu";
  double watchdog_seconds = 120;  // the longest one configuration's child may run
  // A catch needs one failing case: shrinking it to a minimal one is for the reader, and on the CPU
  // it took most of a tensor-core suite's time.
  bool no_shrink = false;
  bool isolated_child = false;  // hidden: one mutant and configuration, the result as JSON
};

// What the fuzz of one mutant configuration came to, in process or from a child.
struct ConfigVerdict {
  enum class Kind { caught, survived, broken, skipped };
  Kind kind = Kind::skipped;
  std::string finding;             // caught: what was wrong; broken, skipped: why
  std::optional<GemmCase> minimal;  // caught: the minimal case
  int cases_passed = 0;
  double seconds = 0;
};

// `mutant`: a mutant whose bug lives in one build of a template that specializes parts of the
// contract has that build fuzzed, then the plain one. The fuzz ends at the first build that fails,
// so a catch in the build costs no plain cases (100 of them, in emulation, were most of a
// tensor-core mutant's time).
FuzzSettings fuzz_settings(const MutantsOptions& options, const FuzzBackend& backend,
                           const Mutant& mutant) {
  FuzzSettings settings;
  if (mutant.build) settings.builds = {*mutant.build, Specialization{}};
  settings.cases = options.cases;
  settings.seed = options.seed;
  settings.limits = backend.case_limits();
  settings.shrink = !options.no_shrink;
  return settings;
}

constexpr std::string_view kMutantResultPrefix = "tiletune-mutant-result: ";

ConfigVerdict evaluate_in_process(FuzzBackend& backend, const KernelTemplate& mutated,
                                  const Configuration& config, const FuzzSettings& settings,
                                  const std::vector<GemmCase>& replay) {
  const ConfigurationOutcome outcome = fuzz_configuration_on(backend, mutated, config, settings, replay);
  ConfigVerdict verdict;
  verdict.seconds = outcome.seconds;
  verdict.cases_passed = outcome.report.cases_passed;
  using Kind = ConfigurationOutcome::Kind;
  switch (outcome.kind) {
    case Kind::skipped: verdict.kind = ConfigVerdict::Kind::skipped; verdict.finding = outcome.detail; break;
    case Kind::compile_error:  // a mutant that does not compile proves nothing about the fuzzer
      verdict.kind = ConfigVerdict::Kind::broken;
      verdict.finding = "does not compile\n" + outcome.detail;
      break;
    case Kind::passed: verdict.kind = ConfigVerdict::Kind::survived; break;
    case Kind::failed:
      if (outcome.report.verdict == FuzzVerdict::too_few_cases) {  // proves nothing either way
        verdict.kind = ConfigVerdict::Kind::broken;
        verdict.finding = outcome.report.finding;
        break;
      }
      verdict.kind = ConfigVerdict::Kind::caught;
      verdict.finding = outcome.report.finding;
      verdict.minimal = outcome.report.counterexample;
      break;
  }
  return verdict;
}

nlohmann::json to_json(const ConfigVerdict& v) {
  return {{"kind", int(v.kind)}, {"finding", v.finding},
          {"minimal", v.minimal ? v.minimal->to_string() : ""},
          {"cases_passed", v.cases_passed}, {"seconds", v.seconds}};
}

// Runs one configuration in a child tiletune; a child that dies is a broken run, not a catch.
ConfigVerdict evaluate_in_child(const MutantsOptions& options, const MutantSuite& suite,
                                const Mutant& mutant, const Configuration& config) {
  std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe").string(),
                                   "mutants", suite.path.string(), "--backend", options.backend,
                                   "--mutant", mutant.name, "--config", config.to_string(),
                                   "--cases", std::to_string(options.cases),
                                   "--seed", std::to_string(options.seed), "--isolated-child"};
  if (!options.replay_case.empty()) argv.insert(argv.end(), {"--case", options.replay_case});
  if (options.no_shrink) argv.push_back("--no-shrink");
  ChildProcessOptions child_options;
  child_options.timeout = std::chrono::milliseconds(std::int64_t(options.watchdog_seconds * 1000));
  const ChildProcessResult child = run_child_process(argv, child_options);
  const std::size_t at = child.output.rfind(kMutantResultPrefix);
  ConfigVerdict verdict;
  if (at == std::string::npos && child.timed_out) {
    // A kernel that never finishes (a wait for a phase that never completes, on the GPU where
    // nothing stops it): no fuzz of it passes, so the bug is seen.
    verdict.kind = ConfigVerdict::Kind::caught;
    verdict.finding = fmt::format("hung: no result within {} s (the kernel never finished)",
                                  options.watchdog_seconds);
    verdict.seconds = options.watchdog_seconds;
    return verdict;
  }
  if (at == std::string::npos) {
    verdict.kind = ConfigVerdict::Kind::broken;
    verdict.finding = fmt::format("the child process gave no result ({}):\n{}", child.describe_exit(),
                                  child.output);
    return verdict;
  }
  const std::string line = child.output.substr(at + kMutantResultPrefix.size(),
                                               child.output.find('\n', at) - at - kMutantResultPrefix.size());
  const nlohmann::json result = nlohmann::json::parse(line);
  verdict.kind = ConfigVerdict::Kind(result.at("kind").get<int>());
  verdict.finding = result.at("finding").get<std::string>();
  if (const std::string minimal = result.at("minimal").get<std::string>(); !minimal.empty()) {
    verdict.minimal = GemmCase::parse(minimal);
  }
  verdict.cases_passed = result.at("cases_passed").get<int>();
  verdict.seconds = result.at("seconds").get<double>();
  return verdict;
}

struct MutantTally {
  std::string name, bug;
  int live = 0, caught = 0;
  std::string skipped;                    // why it was not run at all
  std::vector<std::string> survived_in;   // configurations whose fuzz passed
  std::optional<GemmCase> smallest;       // the smallest minimal case over its configurations
  std::string smallest_config, smallest_finding;
};

std::int64_t volume(const GemmCase& c) {
  const GemmShape& s = c.problem.shape;
  return s.m * s.n * s.k;
}

std::string replay_command(const MutantsOptions& options, const MutantSuite& suite,
                           const std::string& mutant, const Configuration& config,
                           const GemmCase& gemm_case) {
  return shell_command({"tiletune", "mutants", suite.path.string(), "--backend", options.backend,
                        "--mutant", mutant, "--config", config.to_string(), "--case",
                        gemm_case.to_string()});
}

void run_mutant(const MutantsOptions& options, FuzzBackend& backend, const MutantSuite& suite,
                const Mutant& mutant, const std::vector<GemmCase>& replay, MutantTally& tally) {
  tally.name = suite.original.name + "~" + mutant.name;
  tally.bug = mutant.bug;
  if (!mutant.gpu_only.empty() && backend.gpu() == nullptr) {
    tally.skipped = "GPU only: " + mutant.gpu_only;
    progress_line(fmt::format("skip {}: {}", tally.name, tally.skipped), true);
    return;
  }
  const KernelTemplate mutated = suite.apply(mutant);
  std::vector<Configuration> configs;
  if (!options.config.empty()) {
    configs.push_back(suite.original.parse_configuration(options.config));
  } else if (options.sample > 0) {
    configs = sample_configurations(suite.original, options.sample, options.seed,
                                    [&](const Configuration& config) { return mutant.live_in(suite.original, config); });
  } else {
    for (Configuration& config : enumerate_configurations(suite.original)) {
      if (mutant.live_in(suite.original, config)) configs.push_back(std::move(config));
    }
  }
  const FuzzSettings settings = fuzz_settings(options, backend, mutant);
  // A replayed case the requirements exclude is bad input (RequirementNotMet), not a catch.
  for (const Configuration& config : configs) {
    for (const GemmCase& gemm_case : replay) suite.original.check_requirements(config, gemm_case.problem);
  }

  for (const Configuration& config : configs) {
    if (!mutant.live_in(suite.original, config)) continue;
    const std::string label = fmt::format("{} [{}]", tally.name, config.to_string());
    progress_line(fmt::format("fuzz {} on {}", label, backend.where()), false);
    const ConfigVerdict verdict =
        backend.gpu() != nullptr
            ? evaluate_in_child(options, suite, mutant, config)
            : evaluate_in_process(backend, mutated, config, settings, replay);
    using Kind = ConfigVerdict::Kind;
    if (verdict.kind == Kind::skipped) {
      progress_line(fmt::format("skip {}: {}", label, verdict.finding), true);
      continue;
    }
    ++tally.live;
    if (verdict.kind == Kind::broken) {
      tally.survived_in.push_back(config.to_string() + " (broken)");
      progress_line(fmt::format("BROKEN {}: {}", label, verdict.finding), true);
      continue;
    }
    if (verdict.kind == Kind::survived) {
      tally.survived_in.push_back(config.to_string());
      progress_line(fmt::format("SURVIVED {}: {} cases passed", label, verdict.cases_passed), true);
      continue;
    }
    ++tally.caught;
    std::string text = fmt::format("caught {} in {:.1f} s: {}", label, verdict.seconds, verdict.finding);
    if (verdict.minimal) {
      text += fmt::format("\n  {} case: {}\n  replay: {}", options.no_shrink ? "first failing" : "minimal",
                          verdict.minimal->problem.to_string(),
                          replay_command(options, suite, mutant.name, config, *verdict.minimal));
      if (!tally.smallest || volume(*verdict.minimal) < volume(*tally.smallest)) {
        tally.smallest = verdict.minimal;
        tally.smallest_config = config.to_string();
        tally.smallest_finding = verdict.finding;
      }
    }
    progress_line(text, true);
  }
  if (tally.live == 0 && tally.skipped.empty()) tally.skipped = "no configuration could run it here";
}

int run(const MutantsOptions& options) {
  std::vector<MutantSuite> suites;
  for (const std::string& path : options.suites) {
    try {
      suites.push_back(load_mutant_suite(path));
    } catch (const MutantSuiteError& e) {
      throw UsageError(e.what());
    }
  }
  if ((!options.mutant.empty() || !options.config.empty()) && suites.size() != 1) {
    throw UsageError("--mutant and --config name one suite's mutant: give exactly one suite");
  }
  std::vector<GemmCase> replay;
  if (!options.replay_case.empty()) {
    try {
      replay.push_back(GemmCase::parse(options.replay_case));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--case: ") + e.what());
    }
  }
  if (!options.config.empty()) suites.front().original.parse_configuration(options.config);
  FuzzBackend backend(options.backend);
  if (options.isolated_child) {
    if (options.mutant.empty() || options.config.empty()) {
      throw UsageError("--isolated-child needs --mutant and --config");
    }
    // Killed with its parent: a mutant that hangs the GPU would otherwise keep it busy for good.
    die_with_parent(getppid());
    const MutantSuite& suite = suites.front();
    const Mutant& mutant = suite.find(options.mutant);
    const FuzzSettings settings = fuzz_settings(options, backend, mutant);
    const ConfigVerdict verdict = evaluate_in_process(
        backend, suite.apply(mutant), suite.original.parse_configuration(options.config), settings,
        replay);
    fmt::print("{}{}\n", kMutantResultPrefix, to_json(verdict).dump());
    return kSuccess;
  }

  std::vector<MutantTally> tallies;
  for (const MutantSuite& suite : suites) {
    for (const Mutant& mutant : suite.mutants) {
      if (!options.mutant.empty() && mutant.name != options.mutant) continue;
      MutantTally& tally = tallies.emplace_back();
      try {
        run_mutant(options, backend, suite, mutant, replay, tally);
      } catch (const MutantSuiteError& e) {
        throw UsageError(e.what());
      }
    }
  }
  if (tallies.empty()) {
    throw UsageError(fmt::format("{}: no mutant named '{}'", options.suites.front(), options.mutant));
  }

  int caught = 0, survived = 0, skipped = 0;
  std::size_t width = 6;
  for (const MutantTally& t : tallies) width = std::max(width, t.name.size());
  fmt::print("{:<{}}  {:>7}  {}\n", "mutant", width, "caught",
             options.no_shrink ? "smallest first counterexample" : "smallest counterexample");
  for (const MutantTally& t : tallies) {
    if (!t.skipped.empty()) {
      ++skipped;
      fmt::print("{:<{}}  {:>7}  skipped: {}\n", t.name, width, "-", t.skipped);
      continue;
    }
    const bool all = t.survived_in.empty();
    all ? ++caught : ++survived;
    const std::string smallest =
        t.smallest ? fmt::format("{} [{}]", t.smallest->problem.to_string(), t.smallest_config) : "";
    fmt::print("{:<{}}  {:>7}  {}\n", t.name, width, fmt::format("{}/{}", t.caught, t.live),
               all ? smallest : "SURVIVED in " + fmt::format("{}", fmt::join(t.survived_in, "; ")));
  }
  fmt::print("{} mutants caught in every configuration, {} survived, {} skipped on {}\n", caught,
             survived, skipped, backend.where());
  return survived == 0 ? kSuccess : kFindings;
}

}  // namespace

void add_mutants_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<MutantsOptions>();
  CLI::App* command = app.add_subcommand(
      "mutants", "plant each mutant's bug in its template and check that the fuzzer catches it");
  command->add_option("suites", options->suites, "mutant suites (.json, e.g. fuzz/mutants/*.json)")
      ->required()->check(CLI::ExistingFile);
  command->add_option("--backend", options->backend, "gpu, or cpu")
      ->capture_default_str()->check(CLI::IsMember({"gpu", "cpu"}));
  command->add_option("--cases", options->cases, "cases per configuration")
      ->capture_default_str()->check(kPositive);
  command->add_option("--seed", options->seed, "RapidCheck seed")->capture_default_str();
  command->add_option("--mutant", options->mutant, "only this mutant of the suite");
  command->add_option("--config", options->config, "only this configuration");
  command->add_option("--watchdog", options->watchdog_seconds,
                      "seconds one configuration may run before it counts as hung (caught)")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, kMaxWatchdogSeconds));
  command->add_option("--sample", options->sample, "only a random sample of this many of each mutant's configurations, drawn with --seed")->check(kPositive);
  command->add_option("--case", options->replay_case, "replay one case as a report printed it");
  command->add_flag("--no-shrink", options->no_shrink,
                    "report the first failing case of each configuration as found, not shrunk");
  command->add_flag("--isolated-child", options->isolated_child)->group("");  // internal
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

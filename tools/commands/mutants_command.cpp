// tiletune mutants SUITE.json... [--backend gpu|cpu] [--cases N] [--seed S] [--mutant NAME]
//                  [--config A=1,B=2] [--case '...']
//
// Mutation testing of the fuzzer (fuzz/mutant_suite.h): plants each mutant's bug into its template
// and fuzzes every configuration the bug is live in. A mutant is caught when every one of them
// fails; one that passes somewhere has survived, which is a blind spot of the fuzzer: exit 1.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fuzz/mutant_suite.h"
#include "tools/commands/command_line.h"
#include "tools/commands/commands.h"
#include "tools/commands/configuration_fuzzer.h"
#include "tuner/search_space.h"

namespace tiletune::cli {
namespace {

struct MutantsOptions {
  std::vector<std::string> suites;
  int cases = 100;
  std::uint64_t seed = 0;
  std::string mutant;
  std::string config;
  std::string replay_case;
  std::string backend = "gpu";
};

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
  return fmt::format("tiletune mutants {} --backend {} --mutant {} --config {} --case '{}'",
                     suite.path.string(), options.backend, mutant, config.to_string(),
                     gemm_case.to_string());
}

void run_mutant(const MutantsOptions& options, FuzzBackend& backend, const MutantSuite& suite,
                const Mutant& mutant, const std::vector<GemmCase>& replay, MutantTally& tally) {
  tally.name = suite.original.name + "~" + mutant.name;
  tally.bug = mutant.bug;
  if (!mutant.gpu_only.empty() && backend.device() == nullptr) {
    tally.skipped = "GPU only: " + mutant.gpu_only;
    progress_line(fmt::format("skip {}: {}", tally.name, tally.skipped), true);
    return;
  }
  const KernelTemplate mutated = suite.apply(mutant);
  std::vector<Configuration> configs =
      options.config.empty() ? enumerate_configurations(suite.original)
                             : std::vector<Configuration>{suite.original.parse_configuration(options.config)};
  FuzzSettings settings;
  settings.cases = options.cases;
  settings.seed = options.seed;
  settings.limits = backend.case_limits();

  for (const Configuration& config : configs) {
    if (!mutant.live_in(suite.original, config)) continue;
    const std::string label = fmt::format("{} [{}]", tally.name, config.to_string());
    progress_line(fmt::format("fuzz {} on {}", label, backend.where()), false);
    const ConfigurationOutcome outcome =
        fuzz_configuration_on(backend, mutated, config, settings, replay);
    using Kind = ConfigurationOutcome::Kind;
    if (outcome.kind == Kind::skipped) {
      progress_line(fmt::format("skip {}: {}", label, outcome.detail), true);
      continue;
    }
    ++tally.live;
    if (outcome.kind == Kind::compile_error) {
      // A mutant that does not compile proves nothing about the fuzzer.
      tally.survived_in.push_back(config.to_string() + " (does not compile)");
      progress_line(fmt::format("BROKEN {}: does not compile\n{}", label, outcome.detail), true);
      continue;
    }
    if (outcome.kind == Kind::passed) {
      tally.survived_in.push_back(config.to_string());
      progress_line(fmt::format("SURVIVED {}: {} cases passed", label, outcome.report.cases_passed),
                    true);
      continue;
    }
    ++tally.caught;
    const FuzzReport& report = outcome.report;
    std::string text = fmt::format("caught {} in {:.1f} s: {}", label, outcome.seconds, report.finding);
    if (report.counterexample) {
      text += fmt::format("\n  minimal case: {}\n  replay: {}", report.counterexample->problem.to_string(),
                          replay_command(options, suite, mutant.name, config, *report.counterexample));
      if (!tally.smallest || volume(*report.counterexample) < volume(*tally.smallest)) {
        tally.smallest = report.counterexample;
        tally.smallest_config = config.to_string();
        tally.smallest_finding = report.finding;
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
  fmt::print("{:<{}}  {:>7}  {}\n", "mutant", width, "caught", "smallest counterexample");
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
      ->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--seed", options->seed, "RapidCheck seed")->capture_default_str();
  command->add_option("--mutant", options->mutant, "only this mutant of the suite");
  command->add_option("--config", options->config, "only this configuration");
  command->add_option("--case", options->replay_case, "replay one case as a report printed it");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

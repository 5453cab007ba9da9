#include "tools/fuzzing/gpu_sanitize.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "fuzz/case_generator.h"
#include "fuzz/compute_sanitizer.h"
#include "tools/cli/command_line.h"
#include "tuner/core/configurations.h"
#include "tuner/system/private_files.h"

namespace tiletune::cli {
namespace fs = std::filesystem;

namespace {

// Moves the problem until it meets every configuration's requirements (`require M % TILE == 0`
// over TILE 16 and 32 ends on a multiple of 32); false when a few passes do not get there.
bool meet_all(const std::vector<CaseRequirements>& requirements, GemmProblem& problem) {
  for (int pass = 0; pass < 3; ++pass) {
    bool all = true;
    for (const CaseRequirements& r : requirements) {
      if (r.violated(problem)) {
        all = false;
        r.repair(problem);
      }
    }
    if (all) return true;
  }
  return false;
}

}  // namespace

std::vector<GemmCase> sanitizer_sample(const KernelTemplate& tmpl, const SanitizeSettings& settings) {
  std::vector<std::int64_t> moduli;
  std::vector<CaseRequirements> requirements;  // every case is replayed on every configuration
  for (const Configuration& config : enumerate_configurations(tmpl)) {
    for (std::int64_t modulus : remainder_moduli(config)) {
      if (std::find(moduli.begin(), moduli.end(), modulus) == moduli.end()) moduli.push_back(modulus);
    }
    requirements.emplace_back(tmpl, config);
  }
  const rc::Gen<GemmCase> gen = gen_gemm_case(moduli, CaseLimits{});
  std::vector<GemmCase> cases;
  for (int i = 0; int(cases.size()) < settings.cases && i < 10 * settings.cases; ++i) {
    GemmCase c = gen(rc::Random(settings.seed * 7919 + std::uint64_t(i) + 1)).value();
    if (meet_all(requirements, c.problem)) cases.push_back(c);
  }
  return cases;
}

int run_sanitizer_child(FuzzBackend& backend, const KernelTemplate& tmpl,
                        const std::vector<Configuration>& configs,
                        const std::vector<GemmCase>& cases) {
  int failed = 0;
  for (const Configuration& config : configs) {
    // The sanitizer writes its reports to this stdout as kernels finish; each configuration's
    // launches are synchronised before the next marker, so reports follow their own marker.
    std::printf("%s\n", sanitizer_config_marker(config.to_string()).c_str());
    std::fflush(stdout);
    const ConfigurationOutcome outcome = fuzz_configuration_on(backend, tmpl, config, {}, cases);
    if (outcome.kind != ConfigurationOutcome::Kind::passed &&
        outcome.kind != ConfigurationOutcome::Kind::skipped) {
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

int sanitize_on_gpu(const std::vector<KernelTemplate>& templates, const SanitizeSettings& settings) {
  const fs::path sanitizer = find_compute_sanitizer();
  const fs::path self = fs::read_symlink("/proc/self/exe");
  // A private directory (mkdtemp): a predictable name in $TMPDIR could be someone else's symlink.
  const fs::path logs = make_private_directory(fs::temp_directory_path(), "tiletune-sanitize-");

  int with_findings = 0;
  for (const KernelTemplate& tmpl : templates) {
    const std::vector<GemmCase> cases = sanitizer_sample(tmpl, settings);
    std::vector<std::string> child = {self.string(), "fuzz", tmpl.path.string(), "--backend", "gpu",
                                      "--sanitizer-child"};
    for (const GemmCase& c : cases) child.insert(child.end(), {"--case", c.to_string()});
    for (const std::string& config : settings.configs) child.insert(child.end(), {"--config", config});
    if (settings.sample > 0) {
      child.insert(child.end(), {"--sample", std::to_string(settings.sample), "--seed",
                                 std::to_string(settings.seed)});
    } else if (settings.cover) {
      child.insert(child.end(), {"--cover", "--cover-strength", std::to_string(settings.cover_strength),
                                 "--seed", std::to_string(settings.seed)});
    }

    // Configuration text -> one phrase per tool.
    std::map<std::string, std::vector<std::string>> verdicts;
    std::map<std::string, bool> found;
    std::vector<std::string> order;
    for (SanitizerTool tool : kSanitizerTools) {
      progress_line(fmt::format("sanitize {}: {} over {} cases per configuration", tmpl.name,
                                to_string(tool), cases.size()), false);
      const SanitizerResult result = run_compute_sanitizer(sanitizer, tool, child);
      const fs::path log = logs / fmt::format("{}-{}.log", tmpl.name, to_string(tool));
      std::ofstream(log) << result.log;  // in the private directory: no one else can plant a link
      if (result.failure) {
        throw std::runtime_error(fmt::format("compute-sanitizer {} on {} proves nothing: {} (log: {})",
                                             to_string(tool), tmpl.name, *result.failure,
                                             log.string()));
      }
      for (const SanitizerFindings& findings : result.configurations) {
        if (!verdicts.count(findings.configuration)) order.push_back(findings.configuration);
        if (findings.clean()) {
          verdicts[findings.configuration].push_back(fmt::format("{} clean", to_string(tool)));
        } else {
          found[findings.configuration] = true;
          verdicts[findings.configuration].push_back(
              fmt::format("{}: {} errors, {} warnings{}; first: {}", to_string(tool), findings.errors,
                          findings.warnings, findings.incomplete ? " (report cut short)" : "",
                          findings.first_report));
        }
      }
      if (!result.clean() && result.unattributed > 0) {
        found["(unattributed)"] = true;
        if (!verdicts.count("(unattributed)")) order.push_back("(unattributed)");
        verdicts["(unattributed)"].push_back(fmt::format(
            "{}: {} errors counted by its summary but not found in the log {}", to_string(tool),
            result.unattributed, log.string()));
      }
    }
    for (const std::string& config : order) {
      const bool bad = found[config];
      with_findings += bad ? 1 : 0;
      progress_line(fmt::format("{} sanitize {} [{}]: {}", bad ? "FAIL" : "pass", tmpl.name, config,
                                fmt::join(verdicts[config], bad ? "\n  " : ", ")),
                    true);
    }
  }
  fmt::print("compute-sanitizer logs: {}\n", logs.string());
  return with_findings;
}

}  // namespace tiletune::cli

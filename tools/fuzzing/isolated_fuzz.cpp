#include "tools/fuzzing/isolated_fuzz.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/pipeline/evaluation_worker.h"
#include "tuner/system/child_process.h"

namespace tiletune::cli {
namespace {

using nlohmann::json;

constexpr std::string_view kCasePrefix = "tiletune-fuzz-case: ";
constexpr std::string_view kAlivePrefix = "tiletune-fuzz-alive";
constexpr std::string_view kResultPrefix = "tiletune-fuzz-result: ";

// One line on stdout, flushed at once: the parent must see it even if the next case kills us.
void say(std::string_view line) {
  fmt::print(stdout, "{}\n", line);
  std::fflush(stdout);
}

json to_json(const ConfigurationOutcome& outcome) {
  const FuzzReport& r = outcome.report;
  return {{"kind", int(outcome.kind)},
          {"verdict", int(r.verdict)},
          {"cases_passed", r.cases_passed},
          {"shrink_steps", r.shrink_steps},
          {"counterexample", r.counterexample ? r.counterexample->to_string() : ""},
          {"finding", r.finding},
          {"detail", outcome.detail},
          {"probe", outcome.probe},
          {"builds", outcome.builds},
          {"seconds", outcome.seconds}};
}

ConfigurationOutcome outcome_from_json(const json& j) {
  ConfigurationOutcome outcome;
  outcome.kind = ConfigurationOutcome::Kind(j.at("kind").get<int>());
  FuzzReport& r = outcome.report;
  r.verdict = FuzzVerdict(j.at("verdict").get<int>());
  r.cases_passed = j.at("cases_passed").get<int>();
  r.shrink_steps = j.at("shrink_steps").get<int>();
  if (const auto text = j.at("counterexample").get<std::string>(); !text.empty()) {
    r.counterexample = GemmCase::parse(text);
  }
  r.finding = j.at("finding").get<std::string>();
  outcome.detail = j.at("detail").get<std::string>();
  outcome.probe = j.at("probe").get<std::string>();
  outcome.builds = j.at("builds").get<std::vector<std::string>>();
  outcome.seconds = j.at("seconds").get<double>();
  return outcome;
}

// Says "alive" every `interval` until stopped: the build before the first case is the host
// compiler's work, which the watchdog does not judge.
class Heartbeat {
 public:
  explicit Heartbeat(std::chrono::milliseconds interval)
      : thread_([this, interval] {
          std::unique_lock lock(mutex_);
          while (!stopped_) {
            if (stop_.wait_for(lock, interval, [&] { return stopped_; })) break;
            say(kAlivePrefix);
          }
        }) {}
  ~Heartbeat() {
    stop();
    thread_.join();
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    stop_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace

void fuzz_as_isolated_child(FuzzBackend& backend, const KernelTemplate& tmpl,
                            const Configuration& config, const FuzzSettings& settings,
                            const std::vector<GemmCase>& replay, std::chrono::milliseconds watchdog) {
  // In a process group of its own (the watchdog kills the whole group), so Ctrl-C does not reach
  // it: it dies with the parent instead, even in a kernel that never returns.
  die_with_parent(getppid());
  Heartbeat heartbeat(std::max(std::chrono::milliseconds(10), watchdog / 4));
  backend.announce_cases([&](const GemmCase& gemm_case) {
    heartbeat.stop();  // from the first case on, the cases are the progress
    say(fmt::format("{}{}", kCasePrefix, gemm_case.to_string()));
  });
  const ConfigurationOutcome outcome = fuzz_configuration_on(backend, tmpl, config, settings, replay);
  backend.announce_cases({});  // it speaks of this heartbeat, which ends here
  heartbeat.stop();
  say(fmt::format("{}{}", kResultPrefix, to_json(outcome).dump()));
}

ConfigurationOutcome fuzz_in_child(const std::vector<std::string>& child_argv,
                                   std::chrono::milliseconds watchdog) {
  ChildProcessOptions options;
  options.silence_timeout = watchdog;
  const auto start = std::chrono::steady_clock::now();
  const ChildProcessResult child = run_child_process(child_argv, options);

  std::optional<ConfigurationOutcome> result;
  std::optional<std::string> last_case;
  int cases = 0;
  std::string last_error;  // the child's own "tiletune: " line, if it printed one
  std::istringstream lines(child.output);
  for (std::string line; std::getline(lines, line);) {
    // A kernel's printf without a newline may sit in front of a marker on its line.
    const std::size_t case_at = line.find(kCasePrefix), result_at = line.find(kResultPrefix);
    const std::string_view before =
        std::string_view(line).substr(0, std::min({case_at, result_at, line.find(kAlivePrefix), line.size()}));
    if (before.starts_with("tiletune: ")) {
      last_error = before.substr(10);
    } else if (!before.empty()) {
      fmt::print(stderr, "{}\n", before);  // sanitizer reports, a kernel's printf
    }
    if (case_at != std::string::npos) {
      last_case = line.substr(case_at + kCasePrefix.size());
      ++cases;
    } else if (result_at != std::string::npos) {
      try {
        result = outcome_from_json(json::parse(line.substr(result_at + kResultPrefix.size())));
      } catch (const std::exception&) {
        result.reset();  // garbled: judged as a child that gave no result
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result) {
    result->seconds = seconds;  // as the user waits for it: the child's start included
    return *result;
  }
  const bool signalled = child.exit_code > 128 && !child.timed_out;
  // A child that ended by itself, saying why, failed for its environment (no host compiler, say),
  // which every other configuration would meet too.
  if (!child.timed_out && !signalled && !last_error.empty()) throw std::runtime_error(last_error);

  ConfigurationOutcome died;
  died.kind = ConfigurationOutcome::Kind::failed;
  died.seconds = seconds;
  died.died = child.describe_exit();
  died.report.verdict = FuzzVerdict::launch_error;
  died.report.cases_passed = std::max(0, cases - 1);
  if (last_case) {
    try {
      died.report.counterexample = GemmCase::parse(*last_case);
    } catch (const std::invalid_argument&) {
      // cut short: the case stays unnamed
    }
    if (child.silent || signalled) {
      died.report.finding = fmt::format("{} on case {}: the process fuzzing it was {}",
                                        child.silent ? "hung (no progress)" : "crashed", cases,
                                        died.died);
    } else {
      died.report.finding = fmt::format(
          "the process fuzzing it ended on case {} without a result ({})", cases, died.died);
    }
  } else {
    died.report.finding =
        fmt::format("the process fuzzing it ended before its first case: {}", died.died);
  }
  return died;
}

std::string describe_death(const std::string& label, const ConfigurationOutcome& outcome,
                           const std::string& replay_command) {
  std::string text = fmt::format("FAIL {}: {}", label, outcome.report.finding);
  if (outcome.report.counterexample) {
    text += fmt::format("\n  case (not shrunk: the process died on it): {}\n  replay: {}",
                        outcome.report.counterexample->problem.to_string(), replay_command);
  }
  return text;
}

}  // namespace tiletune::cli

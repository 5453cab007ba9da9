// The CPU backend runs template code natively: a kernel that writes far out of bounds kills the
// process running it, one that never returns hangs it. `tiletune fuzz --backend cpu` therefore
// fuzzes each configuration in a child tiletune (its own command line, narrowed by hidden options
// to one configuration: `--isolated-template PATH --isolated-config X`), which
// announces every case before running it and prints its outcome last. The parent kills a child
// that stays silent for longer than the watchdog, and turns a death into that configuration's
// failure, with the case it happened on; the run goes on with the next configuration.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "tools/fuzzing/configuration_fuzzer.h"

namespace tiletune::cli {

// Child side: fuzzes (or replays) one configuration in this process, each case announced on
// stdout before it runs, and prints the outcome as the last line. Until the first case (while the
// kernel is built) it says every quarter of `watchdog` that it is alive.
void fuzz_as_isolated_child(FuzzBackend& backend, const KernelTemplate& tmpl,
                            const Configuration& config, const FuzzSettings& settings,
                            const std::vector<GemmCase>& replay, std::chrono::milliseconds watchdog);

// Parent side: runs `child_argv` (a `tiletune fuzz ... --isolated-config X` of one configuration)
// and returns its outcome, or how it died (ConfigurationOutcome::died). What else the child
// printed (sanitizer reports) goes to our stderr. Throws std::runtime_error with the child's
// message when it ended by itself with a "tiletune: " line (its environment or arguments failed).
ConfigurationOutcome fuzz_in_child(const std::vector<std::string>& child_argv,
                                   std::chrono::milliseconds watchdog);

// "FAIL <label>: crashed on case 3: ..." with the case it died on and the replay command.
std::string describe_death(const std::string& label, const ConfigurationOutcome& outcome,
                           const std::string& replay_command);

}  // namespace tiletune::cli

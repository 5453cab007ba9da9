#include "tools/labs/lab_counters.h"

#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "tuner/profiling/nsight_compute.h"

namespace tiletune::labs {

std::vector<std::string> lab_kernel_command(const std::filesystem::path& tiletune,
                                            const std::vector<std::string>& lab_kernel_arguments) {
  std::vector<std::string> command = {tiletune.string(), "lab-kernel"};
  command.insert(command.end(), lab_kernel_arguments.begin(), lab_kernel_arguments.end());
  return command;
}

CounterReader nsight_compute_reader(std::filesystem::path tiletune) {
  auto ncu = std::make_shared<std::optional<NsightCompute>>();
  return [ncu, tiletune](const std::vector<std::string>& arguments, const std::string& kernel,
                         const std::vector<std::string>& metrics) {
    if (!ncu->has_value()) ncu->emplace(NsightCompute::find());
    const std::vector<ProfiledLaunch> launches =
        (*ncu)->profile(lab_kernel_command(tiletune, arguments), metrics, "^" + kernel + "$");
    if (launches.size() != 1) {
      throw ProfilerUnavailable(fmt::format("ncu profiled {} launches of {} where the lab made one",
                                            launches.size(), kernel));
    }
    return launches.front().metrics;
  };
}

}  // namespace tiletune::labs

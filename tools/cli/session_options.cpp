#include "tools/cli/session_options.h"

#include <stdexcept>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/cli/number_checks.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/pipeline/device_list.h"

namespace tiletune::cli {

std::vector<int> selected_devices(const SessionOptions& options) {
  if (!options.devices) return {};
  try {
    const DeviceList list = DeviceList::parse(*options.devices);
    if (options.backend == "cpu") {
      // The CPU backend has no devices to count: each number is an evaluation worker of its own
      // (with its fuzz pool), as many as the cores allow, all of one model.
      if (list.all) {
        throw std::invalid_argument("--devices all counts GPUs; with --backend cpu give a list "
                                    "(0,1: two CPU evaluation workers)");
      }
      return list.resolve(int(machine_cores()), "cores for CPU workers");
    }
    int count = 0;
    check_cuda(cuda_driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
    return list.resolve(count, "GPUs");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

void add_session_options(CLI::App& command, SessionOptions& options) {
  command.add_option("--backend", options.backend,
                     "gpu, or cpu: the fuzzer's CPU backend stands in for a GPU (times mean nothing)")
      ->capture_default_str()->check(CLI::IsMember({"gpu", "cpu"}));
  command.add_option("--cache-dir", options.cache_dir,
                     "where compiled cubins are kept (default $TILETUNE_CACHE_DIR, else ~/.cache/tiletune/cubins)");
  command.add_option("--watchdog", options.watchdog_seconds,
                     "seconds an evaluation may stay silent (each fuzz case counts as progress) before "
                     "its worker is killed; a timeout is retried once")
      ->capture_default_str()->check(CLI::Range(1e-3, kMaxWatchdogSeconds));
  command.add_option("--fuzz-workers", options.fuzz_workers,
                     fmt::format("processes that fuzz configurations side by side, per device (0: "
                                 "the evaluation worker fuzzes them one by one; default {} here with one "
                                 "device: half the {} cores, at most 8 in all, shared by the devices, "
                                 "at least 1 each)",
                                 default_fuzz_workers(), machine_cores()))
      ->check(kNonNegative);
  command.add_option("--devices", options.devices,
                     "GPUs to tune on side by side: all, or numbers (0,2); default one: "
                     "$TILETUNE_DEVICE, else 0. With --backend cpu, a list of CPU evaluation workers");
}

}  // namespace tiletune::cli

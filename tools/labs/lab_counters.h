// How a lab reads hardware counters: Nsight Compute (ncu) runs `tiletune lab-kernel LAB KERNEL
// ...`, which launches one lab kernel once, and returns the metrics of that launch.
//
// The labs take the reader as a function, so that their claims can be checked on given numbers
// and without ncu.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tiletune::labs {

// The values of `metrics` (those ncu knows on this GPU; the others are absent from the map) for
// the launch of `kernel` made by `tiletune lab-kernel` with `lab_kernel_arguments`. Throws
// ProfilerUnavailable (tuner/profiling/nsight_compute.h) with the reason in one line.
using CounterReader = std::function<std::map<std::string, double>(
    const std::vector<std::string>& lab_kernel_arguments, const std::string& kernel,
    const std::vector<std::string>& metrics)>;

// The reader that runs `tiletune lab-kernel` of the tiletune binary at `tiletune` under the ncu
// NsightCompute::find() finds (looked for at the first read, so that a lab without ncu still
// times its kernels). The lab command passes itself; a test, the built tiletune.
CounterReader nsight_compute_reader(std::filesystem::path tiletune);

// `TILETUNE lab-kernel ARGUMENTS...`.
std::vector<std::string> lab_kernel_command(const std::filesystem::path& tiletune,
                                            const std::vector<std::string>& lab_kernel_arguments);

}  // namespace tiletune::labs

// How a lab reads hardware counters: Nsight Compute (ncu) runs `tiletune lab-kernel LAB KERNEL
// ...`, which launches one lab kernel once, and returns the metrics of that launch.
//
// The labs take the reader as a function, so that their claims can be checked on given numbers
// and without ncu.
#pragma once

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

// The reader that runs this tiletune binary under the ncu NsightCompute::find() finds (looked for
// at the first read, so that a lab without ncu still times its kernels).
CounterReader nsight_compute_reader();

// The lab kernel's launch argument list, for `tiletune lab-kernel` (the leading words).
std::vector<std::string> lab_kernel_command(const std::vector<std::string>& lab_kernel_arguments);

}  // namespace tiletune::labs

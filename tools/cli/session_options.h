// The command-line face of a tuning session (tuner/pipeline/tuning_session.h): the options that
// `tune` and `bench` share, and the devices --devices names.
#pragma once

#include <vector>

#include <CLI/CLI.hpp>

#include "tuner/pipeline/tuning_session.h"

namespace tiletune::cli {

// The device ordinals --devices names (empty without it: the worker's default device). Throws
// UsageError for a bad list or an ordinal the machine lacks; GpuUnavailable without a GPU.
std::vector<int> selected_devices(const SessionOptions& options);

// Adds --backend, --cache-dir, --watchdog, --fuzz-workers and --devices to a command.
void add_session_options(CLI::App& command, SessionOptions& options);

}  // namespace tiletune::cli

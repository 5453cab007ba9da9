// A stand-in for Nsight Compute's `ncu`, for tests without a GPU: a shell script that prints the
// canned --version, --query-metrics and profiling output it finds in its folder, exits with the
// codes found there, and keeps the arguments of its last profiling run (args.txt, one a line).
// Given --import (a report exported by a profiling run), it prints the canned source page for
// `--page source` and the profiling output for the raw page, keeping those arguments apart.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tiletune::testing_support {

// What ncu 2025.3.1 prints, trimmed: the banner of --version, and --query-metrics's table.
inline constexpr const char* kNcuVersionOutput =
    "NVIDIA (R) Nsight Compute Command Line Profiler\n"
    "Copyright (c) 2018-2025 NVIDIA Corporation\n"
    "Version 2025.3.1.0 (build 36398880) (public-release)\n";

inline constexpr const char* kNcuPermissionError =
    "==PROF== Connected to process 4242 (/opt/tiletune/bin/tiletune)\n"
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions and to "
    "get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    "==PROF== Disconnected from process 4242\n";

class FakeNcu {
 public:
  explicit FakeNcu(std::filesystem::path folder) : folder_(std::move(folder)) {
    std::filesystem::create_directories(folder_);
    write("ncu", R"sh(#!/bin/sh
dir=$(dirname "$0")
case "$1" in
  --version) cat "$dir/version.txt"; exit 0 ;;
  --query-metrics) cat "$dir/query.txt"; exit "$(cat "$dir/query_exit")" ;;
  --import)
    case " $* " in
      *" source "*) printf '%s\n' "$@" > "$dir/args-source.txt"; cat "$dir/source.txt" ;;
      *) printf '%s\n' "$@" > "$dir/args-raw.txt"; cat "$dir/profile.txt" ;;
    esac
    exit 0 ;;
esac
printf '%s\n' "$@" > "$dir/args.txt"
cat "$dir/profile.txt"
exit "$(cat "$dir/profile_exit")"
)sh");
    ::chmod(executable().c_str(), 0755);
    write("version.txt", kNcuVersionOutput);
    query_metrics("", 0);
    profile_output("", 0);
    source_page("");
  }

  std::filesystem::path executable() const { return folder_ / "ncu"; }
  void query_metrics(const std::string& output, int exit_code) {
    write("query.txt", output);
    write("query_exit", std::to_string(exit_code));
  }
  void profile_output(const std::string& output, int exit_code) {
    write("profile.txt", output);
    write("profile_exit", std::to_string(exit_code));
  }
  // What `--import R --page source` prints.
  void source_page(const std::string& output) { write("source.txt", output); }
  // The arguments of the last "profile" run, or the last import of the "source" or "raw" page.
  std::string arguments_of(const std::string& run) const {
    std::ifstream file(folder_ / (run == "profile" ? "args.txt" : "args-" + run + ".txt"));
    return std::string(std::istreambuf_iterator<char>(file), {});
  }
  // The arguments of the last profiling run, one a line; empty when there was none.
  std::string last_arguments() const {
    std::ifstream file(folder_ / "args.txt");
    return std::string(std::istreambuf_iterator<char>(file), {});
  }

 private:
  void write(const std::string& name, const std::string& text) {
    std::ofstream(folder_ / name, std::ios::binary) << text;
  }
  std::filesystem::path folder_;
};

// --query-metrics's table listing the given base metric names.
inline std::string query_metrics_listing(const std::initializer_list<const char*> names) {
  std::string text =
      "Device NVIDIA H200 (GH100)\n"
      "-------------------------------------------------------------------------------\n"
      "Metric Name                                     Metric Description\n";
  for (const char* name : names) {
    text += std::string(name) + "    # of things counted\n";
  }
  return text;
}

}  // namespace tiletune::testing_support

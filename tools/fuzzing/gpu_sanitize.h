// `tiletune fuzz --sanitize` on the GPU: a sample of property cases replayed on every
// configuration under compute-sanitizer's memcheck, racecheck, initcheck and synccheck, with the
// findings reported per configuration (fuzz/compute_sanitizer.h reads the sanitizer's output).
//
// One child process per template and tool keeps the sanitizer's start-up cost to eight runs for
// the shipped templates; the child is tiletune itself in `--sanitizer-child` mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/fuzzing/configuration_fuzzer.h"
#include "tuner/core/kernel_template.h"

namespace tiletune::cli {

struct SanitizeSettings {
  int cases = 4;           // replayed per configuration and tool
  std::uint64_t seed = 0;  // the sample is drawn from it, so a run can be repeated
  std::vector<std::string> configs;  // only these configurations (none: all)
  int sample = 0;          // or a sample of this many, drawn with `seed` (0 = all)
  bool cover = false;      // or a covering sample drawn with `seed` (covering_sample)
  int cover_strength = 1;  // of this strength
};

// The cases a template is sanitized on: drawn like property cases against the remainders of
// every tile size in its space, crowded shapes left out (racecheck's cost grows with the grid).
std::vector<GemmCase> sanitizer_sample(const KernelTemplate& tmpl, const SanitizeSettings& settings);

// Runs the four tools over every template; prints one line per configuration and returns how
// many configurations had findings. Throws std::runtime_error when compute-sanitizer cannot be
// found or a run proves nothing (it could not start, the device is unsupported, the child died).
int sanitize_on_gpu(const std::vector<KernelTemplate>& templates, const SanitizeSettings& settings);

// The child's side: for each configuration, prints its marker and replays the cases. Returns 0
// when every case passed, 1 otherwise (the parent reads the sanitizer's findings, not this).
int run_sanitizer_child(FuzzBackend& backend, const KernelTemplate& tmpl,
                        const std::vector<Configuration>& configs,
                        const std::vector<GemmCase>& cases);

}  // namespace tiletune::cli

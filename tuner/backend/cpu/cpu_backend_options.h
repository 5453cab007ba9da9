// How the CPU backend builds and runs kernels.
#pragma once

#include <filesystem>
#include <string>

namespace tiletune {

struct CpuBackendOptions {
  // The host compiler, possibly with a launcher in front ("ccache g++"). Empty: $TILETUNE_CXX,
  // else "c++".
  std::string compiler;
  // Where built kernels are kept between runs. Empty: default_cpu_cache_dir().
  std::filesystem::path cache_dir;
  // Builds with AddressSanitizer and UndefinedBehaviorSanitizer in recovering mode: a report
  // ends the launch and CpuExecutor throws it as a finding (sanitizer_runtime.h). The process
  // must have AddressSanitizer's runtime loaded at start-up (LD_PRELOAD, which
  // ensure_sanitizer_runtime() arranges), or building throws.
  bool sanitize = false;
  // OS threads that run blocks. 0: std::thread::hardware_concurrency(), at most 16.
  unsigned workers = 0;
};

}  // namespace tiletune

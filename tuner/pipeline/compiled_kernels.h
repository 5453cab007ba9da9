// The compiled configurations of one tuning run, kept in memory so that each is compiled once
// however many shapes it is tuned for. Configurations are compiled ahead, in parallel on all
// cores: NVRTC is thread-safe, and compiling is most of a tune's host time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/kernel_template.h"
#include "tuner/nvrtc_compiler.h"

namespace tiletune {

class CompiledKernels {
 public:
  // `threads` 0: one per core.
  explicit CompiledKernels(std::string arch, unsigned threads = 0);

  // Compiles every configuration not compiled yet, in parallel. A configuration that does not
  // compile is remembered as such; NvrtcError (NVRTC itself failing) is thrown.
  void prepare(const KernelTemplate& tmpl, const std::vector<Configuration>& configs);

  // The configuration's image, compiled now if `prepare` has not. Throws CompileError as
  // compile_configuration does, for as long as the run lasts.
  const CompiledKernelImage& get(const KernelTemplate& tmpl, const Configuration& config);

 private:
  struct Outcome {
    std::optional<CompiledKernelImage> image;
    std::string error, log;  // when it did not compile
  };
  static std::string key(const KernelTemplate& tmpl, const Configuration& config);
  Outcome compile(const KernelTemplate& tmpl, const Configuration& config) const;

  std::string arch_;
  unsigned threads_;
  std::map<std::string, Outcome> outcomes_;
};

}  // namespace tiletune

// The full shape's reference, computed once for a whole tune rather than once per lane.
//
// Every lane's evaluation worker judges configuration after configuration at a tuning shape
// against the double-precision reference of the same inputs (those of the tune's data seed:
// every lane draws the same ones). So the first worker that needs a shape's reference computes it
// and leaves it in a folder of the tune (a private directory the tuner made for its workers),
// where the workers of the other lanes, other processes, read it. A lock per reference holds them
// while the first computes: it is computed once, never once per lane.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "fuzz/gemm_oracle.h"

namespace tiletune {

class SharedReferences {
 public:
  // `folder` empty: nothing is shared, and each call computes.
  explicit SharedReferences(std::filesystem::path folder = {});

  // The reference named `name` (a file name: the problem and the seed of its inputs), read from
  // the folder, or, when no process has left it there yet, made by `compute` in this process and
  // left there. Throws std::system_error (or std::runtime_error for a damaged file) naming it.
  std::shared_ptr<const ReferenceTable> get(const std::string& name,
                                            const std::function<ReferenceTable()>& compute) const;

 private:
  std::filesystem::path folder_;
};

}  // namespace tiletune

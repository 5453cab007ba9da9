// The references of the cases a worker judged lately, for the next configuration that draws the
// same cases.
//
// A case's reference depends on its problem and its inputs alone, and a configuration's cases on
// its tile sizes and the fuzz seed (case_generator.h): configurations that differ only in a
// switch (warp_tiled's SWIZZLE) draw the very same cases. The reference, in double, is most of a
// fuzz's host work; a worker handed such configurations one after the other (the tuner sends
// them to one worker) computes each case's reference once. The cases of the last two
// configurations are kept, up to a memory cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "fuzz/gemm_case.h"
#include "fuzz/gemm_oracle.h"

namespace tiletune {

class ReferenceCache {
 public:
  explicit ReferenceCache(std::size_t max_bytes = std::size_t(512) << 20);

  // A new configuration's fuzz begins: what neither of the last two used is forgotten.
  void next_configuration();
  // The reference of `gemm_case`, whose inputs are `inputs` (make_operands(gemm_case)):
  // remembered, or computed and remembered while the cap allows.
  std::shared_ptr<const ReferenceTable> get(const GemmCase& gemm_case, const GemmOperands& inputs);

  int hits() const { return hits_; }
  int misses() const { return misses_; }

 private:
  struct Entry {
    std::shared_ptr<const ReferenceTable> table;
    std::uint64_t configuration = 0;  // the last that used it
    std::size_t bytes = 0;
  };
  std::size_t max_bytes_, bytes_ = 0;
  std::uint64_t configuration_ = 0;
  std::map<std::string, Entry> entries_;  // by the case's problem and inputs
  int hits_ = 0, misses_ = 0;
};

}  // namespace tiletune

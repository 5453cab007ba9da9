// The warm start a guided search takes from the database (tuner/search/warm_start.h): the
// candidates a runtime library's first-call trial timed at the very shape tuned, fastest first (a
// missed shape's, `tune --missed`), then the fastest configurations of the template recorded on
// this GPU at the shapes nearest to it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "db/result_store.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

struct WarmStart {
  std::vector<GemmShape> shapes;    // the recorded shapes drawn from, nearest first
  int trial_candidates = 0;         // of them, a first-call trial's at the shape itself
  std::vector<std::size_t> points;  // indices into the space, to be evaluated first
};

// "5 configurations from 2048x2048x2048, 4096x4096x4096"; "none" when it is empty.
std::string describe(const WarmStart& start);

// From the current version of the template's trials and ok results on GPUs named gpu_name; empty
// when neither a trial at the shape nor another shape is recorded. A search for transposes or a
// batch (`kind`) starts from records tuned for them at other shapes, then from the plain
// product's (C = A * B) at the shape itself and others (the library's trials are of the plain
// product only).
WarmStart recorded_warm_start(const ResultStore& store, const std::string& gpu_name,
                              const std::string& template_name, const GemmShape& shape,
                              const std::vector<Configuration>& space, TunedFor kind = {});

}  // namespace tiletune

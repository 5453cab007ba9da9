// library_bench's command line: what it measures and where it writes, checked before any GPU work.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/core/gemm_shape.h"

namespace tiletune {

struct LibraryBenchOptions {
  std::string db;                // the tuned database (required)
  std::string kernel = "warp_tiled";
  std::string bundle;            // an exported bundle of the same database ("" : no bundle step)
  std::vector<GemmShape> shapes;  // the suite (default: `tiletune bench`'s)
  std::string out;               // the JSON report ("" : none)
  int batches = 200;             // overhead: batches of each kind
  int calls_per_batch = 100;     // overhead: calls enqueued between synchronisations

  // The shape whose per-call overhead and first-call cost are measured: the smallest of the suite
  // (the kernel's own time there hides nothing of the host's).
  GemmShape overhead_shape() const;
};

// Bad arguments: one line, exit 2.
class LibraryBenchUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// --help: the text to print, exit 0.
struct LibraryBenchHelp {
  std::string text;
};

// Parses and checks the arguments (argv[0] is the program). Throws LibraryBenchUsageError naming
// what is wrong, LibraryBenchHelp for --help.
LibraryBenchOptions parse_library_bench_options(int argc, const char* const* argv);

}  // namespace tiletune

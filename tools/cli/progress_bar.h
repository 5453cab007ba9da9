// The progress of a long tune on stderr: a bar, configurations settled out of the total, the rate
// and the time left, and what is happening now. On a terminal it is redrawn in place and each
// finished configuration's line stays above it; elsewhere (CI logs) only those lines are written.
#pragma once

#include <chrono>
#include <string>

namespace tiletune::cli {

class ProgressBar {
 public:
  explicit ProgressBar(int total);

  // `settled` of the total are done; `current` says what happens now. `keep` prints the line for
  // good (a finished configuration).
  void update(int settled, const std::string& current, bool keep);
  // Clears the bar on a terminal.
  void finish();

  // "[######------] 123/496 7.1/s ETA 0:52": the figures alone, for tests.
  static std::string render(int settled, int total, double seconds, int width = 24);

 private:
  int total_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool terminal_;
};

}  // namespace tiletune::cli

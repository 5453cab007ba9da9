#include "tools/cli/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace tiletune::cli {
namespace {

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

ProgressBar::ProgressBar(int total)
    : total_(std::max(total, 1)), start_(std::chrono::steady_clock::now()),
      terminal_(isatty(STDERR_FILENO)) {}

std::string ProgressBar::render(int settled, int total, double seconds, int width) {
  total = std::max(total, 1);
  settled = std::clamp(settled, 0, total);
  const int filled = int(std::int64_t(width) * settled / total);
  std::string line = fmt::format("[{:#<{}}{:-<{}}] {}/{}", "", filled, "", width - filled, settled, total);
  if (settled > 0 && seconds > 0) {
    const double rate = settled / seconds;
    line += fmt::format(" {:.1f}/s ETA {}", rate, clock_text((total - settled) / rate));
  }
  return line;
}

void ProgressBar::update(int settled, const std::string& current, bool keep) {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const std::string line = render(settled, total_, seconds) + "  " + current;
  if (terminal_) {
    // Redrawing costs a write; ten times a second is smooth enough.
    if (!keep && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), keep ? "\n" : "");
  } else if (keep) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (terminal_) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace tiletune::cli

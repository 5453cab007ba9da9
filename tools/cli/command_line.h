// What every tiletune subcommand shares: how it fails and what it exits with.
//
// Exit codes: 0 success; 1 the command ran and found a problem (a failing configuration, a compile
// error, no recorded result); 2 bad input (arguments, shapes, template declarations, database
// path); 3 the environment cannot do it (no GPU, no CUDA driver, no NVRTC).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/core/kernel_template.h"

namespace tiletune::cli {

enum ExitCode { kSuccess = 0, kFindings = 1, kBadInput = 2, kEnvironment = 3 };

// Bad input found by a command itself: reported as one line, exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The longest --watchdog: a week. Milliseconds beyond would overflow into a negative timeout.
constexpr double kMaxWatchdogSeconds = 7 * 24 * 3600;

// Loads every template file named; a bad one is a TemplateError (exit 2).
std::vector<KernelTemplate> load_templates(const std::vector<std::string>& paths);

// Parses every --shape, each once in the order first given; throws ShapeError.
std::vector<GemmShape> parse_shapes(const std::vector<std::string>& texts);

// Reads --precision; throws UsageError naming the precisions there are.
Precision parse_precision_option(const std::string& text);

// Throws UsageError when `out` (the value of `option`) is the database `db` or one of its
// companion files (-wal, -shm, -journal): writing there would destroy what is recorded.
void refuse_output_over_database(const std::string& option, const std::string& out,
                                 const std::string& db);

// Progress goes to stderr, rewritten in place on a terminal, one line per step elsewhere.
void progress_line(const std::string& text, bool final_for_item);

}  // namespace tiletune::cli

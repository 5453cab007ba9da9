#include "tools/cli/command_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace tiletune::cli {

std::vector<KernelTemplate> load_templates(const std::vector<std::string>& paths) {
  std::vector<KernelTemplate> templates;
  for (const std::string& path : paths) templates.push_back(load_template(path));
  return templates;
}

std::vector<GemmShape> parse_shapes(const std::vector<std::string>& texts) {
  std::vector<GemmShape> shapes;
  for (const std::string& text : texts) {
    const GemmShape shape = GemmShape::parse(text);
    // A shape given twice is tuned once (a second search of it would be recorded as the first).
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
  }
  return shapes;
}

Precision parse_precision_option(const std::string& text) {
  const std::optional<Precision> precision = parse_precision(text);
  if (!precision) {
    throw UsageError("--precision " + text + ": not one of " + kPrecisionNames);
  }
  return *precision;
}

void refuse_output_over_database(const std::string& option, const std::string& out,
                                 const std::string& db) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path written = fs::weakly_canonical(out, error);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = db + suffix;
    const bool same = fs::exists(out, error) && fs::exists(file, error)
                          ? fs::equivalent(out, file, error)  // hard links and symlinks too
                          : written == fs::weakly_canonical(file, error);
    if (same) {
      throw UsageError(fmt::format("{} {}: that is the database {}{}, which it would overwrite; "
                                   "choose another file", option, out, db,
                                   *suffix ? std::string(" (its ") + suffix + " file)" : ""));
    }
  }
}

void progress_line(const std::string& text, bool final_for_item) {
  static const bool terminal = isatty(STDERR_FILENO);
  if (terminal) {
    std::fprintf(stderr, "\r\033[K%s%s", text.c_str(), final_for_item ? "\n" : "");
  } else if (final_for_item) {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

}  // namespace tiletune::cli

#include "tuner/core/local_includes.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {
namespace fs = std::filesystem;
namespace {

std::string read_header(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string expand(const std::string& source, const fs::path& file, std::set<fs::path>& included,
                   int depth) {
  if (depth > 64) throw std::runtime_error("local includes nested more than 64 deep at " + file.string());
  static const std::regex local_include(R"re(^\s*#\s*include\s*"([^"]+)"\s*(//.*)?$)re");
  static const std::regex pragma_once(R"(^\s*#\s*pragma\s+once\s*$)");
  std::string out;
  std::istringstream lines(source);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    std::smatch match;
    if (depth > 0 && std::regex_match(line, pragma_once)) {
      out += '\n';
      continue;
    }
    if (std::regex_match(line, match, local_include)) {
      const fs::path header = file.parent_path() / match[1].str();
      std::error_code error;
      if (fs::is_regular_file(header, error)) {
        const fs::path canonical = fs::weakly_canonical(header, error);
        if (included.insert(error ? header : canonical).second) {
          std::string text = expand(read_header(header), header, included, depth + 1);
          if (!text.empty() && text.back() != '\n') text += '\n';
          out += fmt::format("// included here: {}\n{}#line {}\n", match[1].str(), text, number + 1);
        } else {
          out += '\n';  // included once already
        }
        continue;
      }
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

std::string inline_local_includes(const std::string& source, const fs::path& file) {
  static const std::regex any_local_include(R"(#\s*include\s*")");
  if (!std::regex_search(source, any_local_include)) return source;  // unchanged, byte for byte
  std::set<fs::path> included;
  return expand(source, file, included, 0);
}

}  // namespace tiletune

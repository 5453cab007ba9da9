#include "tuner/core/local_includes.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/core/source_limits.h"

namespace tiletune {
namespace fs = std::filesystem;
namespace {

// A header's text, refused when a line is too long for the include regex (source_limits.h).
std::string read_header(const fs::path& path) {
  std::string text = read_source_file(path);
  if (auto why = overlong_line(text)) throw std::runtime_error(fmt::format("{}: {}", path.string(), *why));
  return text;
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

bool may_include(std::string_view source, std::string_view opening) {
  const auto skip_blanks = [&](std::size_t at) {
    while (at < source.size() && (source[at] == ' ' || source[at] == '\t' || source[at] == '\r' ||
                                  source[at] == '\v' || source[at] == '\f')) {
      ++at;
    }
    return at;
  };
  for (std::size_t hash = source.find('#'); hash != std::string_view::npos;
       hash = source.find('#', hash + 1)) {
    std::size_t at = skip_blanks(hash + 1);
    if (source.substr(at, 7) != "include") continue;
    at = skip_blanks(at + 7);
    if (source.substr(at, opening.size()) == opening) return true;
  }
  return false;
}

std::string inline_local_includes(const std::string& source, const fs::path& file) {
  if (!may_include(source, "\"")) return source;  // unchanged, byte for byte
  std::set<fs::path> included;
  return expand(source, file, included, 0);
}

}  // namespace tiletune

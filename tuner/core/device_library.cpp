#include "tuner/core/device_library.h"

#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "tuner/core/local_includes.h"  // may_include

namespace tiletune {
namespace {

std::string known_names() {
  std::string names;
  for (const DeviceLibraryHeader& header : device_library_headers()) {
    names += (names.empty() ? "<" : ", <") + std::string(header.name) + ">";
  }
  return names;
}

// Copies `text` into `out` with library includes expanded. `line` is the presumed line number
// (as the compiler counts it, #line directives included) of the line being copied.
void expand(std::string_view text, std::set<std::string>& included, std::string& out, int depth) {
  static const std::regex library_include(R"re(^\s*#\s*include\s*<(tiletune/[^>]+)>\s*(//.*)?$)re");
  static const std::regex line_directive(R"(^\s*#\s*line\s+(\d+)\b.*$)");
  static const std::regex pragma_once(R"(^\s*#\s*pragma\s+once\s*$)");
  std::istringstream lines{std::string(text)};
  long next_line = 1;
  for (std::string line; std::getline(lines, line);) {
    const long number = next_line++;
    std::smatch match;
    if (std::regex_match(line, match, line_directive)) {
      next_line = std::stol(match[1].str());
    } else if (depth > 0 && std::regex_match(line, pragma_once)) {
      out += '\n';
      continue;
    } else if (std::regex_match(line, match, library_include)) {
      const std::string name = match[1].str();
      const std::optional<std::string_view> header = device_library_header(name);
      if (!header) {
        throw std::runtime_error(fmt::format("#include <{}>: tiletune's device library has {}",
                                             name, known_names()));
      }
      if (included.insert(name).second) {
        out += fmt::format("// included here: <{}>\n", name);
        expand(*header, included, out, depth + 1);
        if (!out.empty() && out.back() != '\n') out += '\n';
        out += fmt::format("#line {}\n", number + 1);
      } else {
        out += '\n';  // included once already
      }
      continue;
    }
    out += line;
    out += '\n';
  }
}

}  // namespace

std::optional<std::string_view> device_library_header(std::string_view name) {
  for (const DeviceLibraryHeader& header : device_library_headers()) {
    if (header.name == name) return header.text;
  }
  return std::nullopt;
}

std::string inline_device_library(const std::string& source) {
  if (!may_include(source, "<tiletune/")) return source;  // unchanged, byte for byte
  std::set<std::string> included;
  std::string out;
  expand(source, included, out, 0);
  return out;
}

}  // namespace tiletune

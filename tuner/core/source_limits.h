// What tiletune reads as a template's text, whoever wrote it (a file, a database row, a bundle),
// is bounded: std::regex, which the include and declaration parsers use on each line, recurses
// once per character (about 300 bytes of stack each), so a line of 100,000 characters would
// overflow the stack; 4096 leave room on a thread's stack of 2 MiB. Past these limits one line
// names the file and the line instead.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tiletune {

constexpr std::size_t kMaxSourceLineLength = 4096;         // characters in one line
constexpr std::uintmax_t kMaxSourceFileBytes = 16u << 20;  // bytes in a template or header file

// "line L has N characters; tiletune reads lines of at most 4096" for the first line of `text`
// that is too long; nothing when none is.
std::optional<std::string> overlong_line(std::string_view text);

// The text of a template or header file. Throws std::runtime_error ("cannot read PATH: why") when
// it cannot be read, is not a regular file (a FIFO or a device would block or never end), or holds
// more than kMaxSourceFileBytes.
std::string read_source_file(const std::filesystem::path& path);

}  // namespace tiletune

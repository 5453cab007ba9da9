#include "tuner/core/source_limits.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

namespace tiletune {

std::optional<std::string> overlong_line(std::string_view text) {
  std::size_t number = 1;
  for (std::size_t start = 0; start < text.size(); ++number) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (end - start > kMaxSourceLineLength) {
      return fmt::format("line {} has {} characters; tiletune reads lines of at most {}", number,
                         end - start, kMaxSourceLineLength);
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string read_source_file(const std::filesystem::path& path) {
  const auto fail = [&](std::string_view reason) {
    throw std::runtime_error(fmt::format("cannot read {}: {}", path.string(), reason));
  };
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status)) fail("is a directory");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    fail("not a regular file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) fail(std::strerror(errno));
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  if (!error && bytes > kMaxSourceFileBytes) {
    fail(fmt::format("{} bytes; tiletune reads files of at most {} bytes", bytes, kMaxSourceFileBytes));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) fail("read error");
  return std::move(contents).str();
}

}  // namespace tiletune

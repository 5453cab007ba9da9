#include "tools/cli/shell_command.h"

#include <algorithm>
#include <string_view>

namespace tiletune::cli {
namespace {

bool left_alone_by_the_shell(char c) {
  constexpr std::string_view kPlain = "_-./,=:+@%";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         kPlain.find(c) != std::string_view::npos;
}

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), left_alone_by_the_shell)) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string shell_command(const std::vector<std::string>& words) {
  std::string command;
  for (const std::string& word : words) command += (command.empty() ? "" : " ") + shell_quote(word);
  return command;
}

}  // namespace tiletune::cli

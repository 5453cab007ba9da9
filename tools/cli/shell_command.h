// Commands printed for the user to run again (a failure's replay line): every argument quoted for
// the shell, so that a path with spaces or quotes, or a case with them, replays as printed.
#pragma once

#include <string>
#include <vector>

namespace tiletune::cli {

// The word as /bin/sh reads it back unchanged: as it is when it holds only characters the shell
// leaves alone (letters, digits, and _ - . / , = : + @ %), else in single quotes, a single quote
// inside written '\''.
std::string shell_quote(const std::string& word);

// The words quoted and joined by spaces: "tiletune fuzz 'my dir/k.cu' --case '...'".
std::string shell_command(const std::vector<std::string>& words);

}  // namespace tiletune::cli

// A template may include headers beside it (`#include "helpers.h"`). NVRTC and the host compiler
// compile a template's text, not its file, and every cache and the database key on that text: so
// the local headers are put into the text itself when the template is loaded. A changed header
// is then a new version of the template (never a stale kernel from a cache), and the database
// keeps everything needed to rebuild a winner.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tiletune {

// `source` (read from `file`) with every `#include "NAME"` whose NAME is a file relative to the
// including file's folder replaced by that file's text, recursively; each file is put in once (as
// include guards or `#pragma once` would have it), its `#pragma once` left out. A `#line`
// directive after each one keeps the including file's own line numbers. Includes of other forms
// (<...>, or a name not found there) are left to the compiler. Throws std::runtime_error when a
// header cannot be read.
std::string inline_local_includes(const std::string& source, const std::filesystem::path& file);

// Whether some line of `source` may be an include of a name that starts with `opening` ("\"" or
// "<tiletune/"): '#', blanks, "include", blanks, then `opening`. A scan, not a regex over the whole
// text: std::regex recurses once per character it matches, and a text may come from anyone.
bool may_include(std::string_view source, std::string_view opening);

}  // namespace tiletune

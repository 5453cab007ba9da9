// The source tree's folders that tests read (TILETUNE_SOURCE_DIR: every test's compile definition).
#pragma once

#include <filesystem>

namespace tiletune::testing_support {

// The shipped kernel templates.
inline const std::filesystem::path kTemplates = std::filesystem::path(TILETUNE_SOURCE_DIR) / "kernels_src";

}  // namespace tiletune::testing_support

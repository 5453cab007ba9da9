// SKIP_WITHOUT_NVRTC(): skips the calling test, with the loader's reason, where NVRTC cannot be
// loaded; fails it instead when TILETUNE_REQUIRE_NVRTC is set (to anything but 0), so that a CI
// machine meant to have NVRTC cannot pass by skipping.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tuner/backend/gpu/nvrtc_compiler.h"

namespace tiletune {

inline bool nvrtc_required() {
  const char* value = std::getenv("TILETUNE_REQUIRE_NVRTC");
  return value != nullptr && std::string(value) != "" && std::string(value) != "0";
}

}  // namespace tiletune

#define SKIP_WITHOUT_NVRTC()                                                                   \
  do {                                                                                         \
    try {                                                                                      \
      ::tiletune::nvrtc_version();                                                             \
    } catch (const ::tiletune::NvrtcError& e) {                                                \
      if (::tiletune::nvrtc_required()) FAIL() << "TILETUNE_REQUIRE_NVRTC is set: " << e.what(); \
      GTEST_SKIP() << "no NVRTC: " << e.what();                                                \
    }                                                                                          \
  } while (0)

// Checks of numeric options that say what is wrong in words. CLI11's own PositiveNumber and
// NonNegativeNumber are ranges up to the largest double, which their message prints in full
// (309 digits).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace tiletune::cli {

namespace number_checks_detail {
inline CLI::Validator sign_check(bool zero_allowed, const char* name, const char* wanted) {
  return CLI::Validator(
      [zero_allowed, wanted](std::string& text) -> std::string {
        const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value)) {
          return "'" + shown + "' is not a number";
        }
        if (value < 0 || (value == 0 && !zero_allowed)) return "must be " + std::string(wanted) + ", not " + shown;
        return {};
      },
      name);
}
}  // namespace number_checks_detail

// > 0.
inline const CLI::Validator kPositive = number_checks_detail::sign_check(false, "POSITIVE", "positive");
// >= 0.
inline const CLI::Validator kNonNegative = number_checks_detail::sign_check(true, "NONNEGATIVE", "0 or more");

}  // namespace tiletune::cli

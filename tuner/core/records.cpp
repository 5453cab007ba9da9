#include "tuner/core/records.h"

#include <array>
#include <stdexcept>
#include <utility>

namespace tiletune {
namespace {

// The names stored in results.status: db/schema.sql's CHECK must list the same.
constexpr std::array<std::pair<ResultStatus, const char*>, 8> kStatusNames{{
    {ResultStatus::ok, "ok"},
    {ResultStatus::compile_error, "compile_error"},
    {ResultStatus::wrong_result, "wrong_result"},
    {ResultStatus::launch_error, "launch_error"},
    {ResultStatus::device_limit, "device_limit"},
    {ResultStatus::timeout, "timeout"},
    {ResultStatus::crashed, "crashed"},
    {ResultStatus::pruned, "pruned"},
}};

}  // namespace

const char* to_string(ResultStatus status) {
  for (const auto& [value, name] : kStatusNames) {
    if (value == status) return name;
  }
  throw std::invalid_argument("invalid ResultStatus " + std::to_string(static_cast<int>(status)));
}

ResultStatus parse_result_status(const std::string& text) {
  for (const auto& [value, name] : kStatusNames) {
    if (text == name) return value;
  }
  throw std::invalid_argument("unknown result status '" + text + "'");
}

}  // namespace tiletune

#include "fuzz/gemm_case.h"

#include <charconv>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace tiletune {

namespace {

// The whole text as a non-negative integer, or an exception (no sign, no trailing characters).
template <typename Integer>
Integer whole_number(const std::string& text) {
  Integer value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw std::invalid_argument(text);
  }
  return value;
}

}  // namespace

const char* to_string(InputKind kind) {
  switch (kind) {
    case InputKind::small_integers: return "small_integers";
    case InputKind::real: return "real";
    case InputKind::sparse_real: return "sparse_real";
  }
  return "unknown";
}

std::string GemmCase::to_string() const {
  return fmt::format("{} inputs={} data={} schedule={}", problem.to_string(),
                     tiletune::to_string(inputs), data_seed, schedule_seed);
}

GemmCase GemmCase::parse(std::string_view text) {
  std::istringstream words{std::string(text)};
  std::string shape;
  if (!(words >> shape)) throw std::invalid_argument("empty case: expected 'MxNxK lda=.. ...'");
  GemmCase result;
  result.problem = GemmProblem::packed(GemmShape::parse(shape));
  std::string word;
  while (words >> word) {
    const auto equals = word.find('=');
    if (equals == std::string::npos) {
      throw std::invalid_argument(fmt::format("case item '{}' is not key=value", word));
    }
    const std::string key = word.substr(0, equals), value = word.substr(equals + 1);
    try {
      if (key == "lda") result.problem.lda = whole_number<std::int64_t>(value);
      else if (key == "ldb") result.problem.ldb = whole_number<std::int64_t>(value);
      else if (key == "ldc") result.problem.ldc = whole_number<std::int64_t>(value);
      else if (key == "data") result.data_seed = whole_number<std::uint64_t>(value);
      else if (key == "schedule") result.schedule_seed = whole_number<std::uint64_t>(value);
      else if (key == "inputs" && value == "small_integers") result.inputs = InputKind::small_integers;
      else if (key == "inputs" && value == "real") result.inputs = InputKind::real;
      else if (key == "inputs" && value == "sparse_real") result.inputs = InputKind::sparse_real;
      else if (!result.problem.parse_contract_item(key, value)) throw std::invalid_argument("unknown");
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format(
          "case item '{}' not understood (keys: lda, ldb, ldc, inputs=small_integers|real|sparse_real, "
          "data, schedule, op=nn|nt|tn|tt, alpha, beta, batch, stride_a, stride_b, stride_c, "
          "epilogue=none|bias|relu|bias_relu|gelu|bias_gelu)", word));
    }
  }
  if (!result.problem.valid()) {
    // Quoted with escapes: the text may hold a line break, and an error is one line.
    throw std::invalid_argument(
        fmt::format("case {:?}: {}", text, result.problem.invalid_reason()));
  }
  return result;
}

}  // namespace tiletune

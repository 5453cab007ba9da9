#include "tuner/core/kernel_template.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "tuner/core/device_library.h"
#include "tuner/core/local_includes.h"
#include "tuner/core/source_limits.h"
#include "tuner/core/splitmix64.h"

namespace tiletune {
namespace {

constexpr std::string_view kDirectivePrefix = "// tiletune:";
constexpr std::string_view kDirectiveList =
    "name, entry, param, require, tune_if, block, grid, shared, zero_output, precision, arch, "
    "tile, tensor_map, copy_unaligned, supports, specializes";
constexpr std::string_view kContractFeatures = "op_a, op_b, alpha, beta, alpha_beta, batch, epilogue";
// The macros' names (after TT_) of a build's specialized parts.
constexpr std::string_view kSpecializedParts[] = {"OP_A", "OP_B", "ALPHA", "BETA", "BATCH",
                                                  "EPILOGUE"};
constexpr std::string_view kCopyUnaligned = "copy_unaligned";
constexpr std::string_view kBlanks = " \t\r\f\v";
constexpr std::string_view kProblemSizes[] = {"M", "N", "K"};
constexpr std::string_view kLeadingDimensions[] = {"lda", "ldb", "ldc"};

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

// Splits off the first blank-separated word; the rest comes back trimmed.
std::pair<std::string_view, std::string_view> split_word(std::string_view s) {
  s = trim(s);
  const std::size_t end = std::min(s.find_first_of(kBlanks), s.size());
  return {s.substr(0, end), trim(s.substr(end))};
}

bool is_problem_size(std::string_view name) {
  return std::find(std::begin(kProblemSizes), std::end(kProblemSizes), name) !=
         std::end(kProblemSizes);
}

bool is_leading_dimension(std::string_view name) {
  return std::find(std::begin(kLeadingDimensions), std::end(kLeadingDimensions), name) !=
         std::end(kLeadingDimensions);
}

// Whether the expression reads a size of the problem (M, N, K, lda, ldb, ldc).
bool reads_problem(const Expression& expression) {
  return std::any_of(expression.names().begin(), expression.names().end(), [](const std::string& name) {
    return is_problem_size(name) || is_leading_dimension(name);
  });
}

bool is_specialized_part(std::string_view name) {
  return std::find(std::begin(kSpecializedParts), std::end(kSpecializedParts), name) !=
         std::end(kSpecializedParts);
}

// A requirement that decides which builds exist: it reads a build's part (OP_A, ...) and no
// problem size, so that it holds or fails for the build whatever the shape.
bool restricts_builds(const Expression& expression) {
  return !reads_problem(expression) &&
         std::any_of(expression.names().begin(), expression.names().end(), is_specialized_part);
}

std::optional<std::int64_t> parse_integer(std::string_view s) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// Splits "ceil_div(N, T), M" into its items: commas inside parentheses separate function arguments.
std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      items.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  items.push_back(trim(s.substr(start)));
  return items;
}

// A file's stem as a template name: names go into file paths (caches, --cubin-dir), so they are
// identifiers; any other character becomes '_' ("my-kernel.cu" is my_kernel), as does a leading
// digit's place ("3mm.cu" is _3mm).
std::string name_from_stem(const std::string& origin) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string name = std::filesystem::path(origin).stem().string();
  for (char& c : name) {
    if (!digit(c) && !is_identifier(std::string(1, c))) c = '_';
  }
  if (name.empty() || digit(name.front())) name = "_" + name;
  return name;
}

std::string join_names(const std::vector<Parameter>& parameters) {
  std::string names;
  for (const Parameter& p : parameters) names += (names.empty() ? "" : ", ") + p.name;
  return names.empty() ? "none" : names;
}

class TemplateParser {
 public:
  TemplateParser(std::string source, const std::string& origin) : origin_(origin) {
    tmpl_.source = std::move(source);
    tmpl_.name = name_from_stem(origin);
  }

  KernelTemplate parse() {
    std::string_view rest = tmpl_.source;
    bool any_declaration = false;
    for (std::size_t line = 1; !rest.empty(); ++line) {
      const std::size_t end = std::min(rest.find('\n'), rest.size());
      std::string_view text = rest.substr(0, end);
      rest.remove_prefix(std::min(end + 1, rest.size()));

      text.remove_prefix(std::min(text.find_first_not_of(kBlanks), text.size()));
      if (!text.starts_with(kDirectivePrefix)) continue;
      any_declaration = true;
      const auto [word, argument] = split_word(text.substr(kDirectivePrefix.size()));
      directive(line, word, argument);
    }

    if (!any_declaration) fail("no '// tiletune:' declarations found");
    check_names();
    for (std::string_view required : {"entry", "block", "grid"}) {
      if (!first_line_.contains(required)) {
        fail(fmt::format("missing '// tiletune: {}' declaration", required));
      }
    }
    if (!first_line_.contains("shared")) tmpl_.dynamic_shared_bytes = Expression::parse("0");
    if (!first_line_.contains("zero_output")) tmpl_.zero_output = Expression::parse("0");
    check_specializations();
    check_tensor_maps();
    check_unaligned_copies();
    tmpl_.source_hash = fnv1a_hex(tmpl_.source);
    return std::move(tmpl_);
  }

 private:
  [[noreturn]] void fail(std::size_t line, std::string_view why) const {
    throw TemplateError(fmt::format("{}:{}: {}", origin_, line, why));
  }
  [[noreturn]] void fail(std::string_view why) const {
    throw TemplateError(fmt::format("{}: {}", origin_, why));
  }

  void directive(std::size_t line, std::string_view word, std::string_view argument) {
    if (word.empty()) {
      fail(line, fmt::format("missing directive (expected one of {})", kDirectiveList));
    }
    const bool known = word == "name" || word == "entry" || word == "param" || word == "require" ||
                       word == "tune_if" || word == "block" || word == "grid" ||
                       word == "shared" || word == "tile" || word == "zero_output" || word == "precision" ||
                       word == "arch" || word == "tensor_map" || word == "copy_unaligned" ||
                       word == "supports" || word == "specializes";
    if (!known) {
      fail(line, fmt::format("unknown directive '{}' (expected one of {})", word, kDirectiveList));
    }
    if (argument.empty()) fail(line, fmt::format("'{}' needs an argument", word));

    if (word == "param") {
      parameter(line, argument);
      return;
    }
    if (word == "require") {
      tmpl_.requirements.push_back(expression(line, word, argument));
      requirement_lines_.insert(line);
      part_lines_.insert(line);
      return;
    }
    if (word == "tune_if") {
      tmpl_.tuning_limits.push_back(expression(line, word, argument));
      return;
    }
    if (word == "tensor_map") {
      tensor_map(line, argument);
      part_lines_.insert(line);
      return;
    }
    if (word == "copy_unaligned") {
      unaligned_copy(line, argument);
      part_lines_.insert(line);
      return;
    }

    // The rest may appear once each.
    const auto [first, inserted] = first_line_.emplace(std::string(word), line);
    if (!inserted) {
      fail(line, fmt::format("duplicate '{}' (first declared on line {})", word, first->second));
    }
    if (word == "name") {
      if (argument.find_first_of(kBlanks) != std::string_view::npos) {
        fail(line, fmt::format("name '{}' must be a single word", argument));
      }
      // The name goes into file paths: nothing but an identifier may reach them.
      if (!is_identifier(argument)) {
        fail(line, fmt::format("name '{}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", argument));
      }
      tmpl_.name = std::string(argument);
    } else if (word == "entry") {
      if (!is_identifier(argument)) {
        fail(line, fmt::format("entry '{}' is not a C identifier", argument));
      }
      tmpl_.entry = std::string(argument);
    } else if (word == "shared") {
      tmpl_.dynamic_shared_bytes = expression(line, word, argument);
      part_lines_.insert(line);
    } else if (word == "tile") {
      const std::vector<std::string_view> extents = split_top_level(argument);
      if (extents.size() != 2 && extents.size() != 3) {
        fail(line, fmt::format("tile '{}' is not two or three extents (expected 'tile ROWS, COLUMNS[, DEPTH]')",
                               argument));
      }
      for (const std::string_view extent : extents) tmpl_.tile.push_back(expression(line, word, extent));
      parameter_only_lines_.insert(line);
    } else if (word == "zero_output") {
      tmpl_.zero_output = expression(line, word, argument);
      sm_count_lines_.insert(line);
    } else if (word == "precision") {
      const std::optional<Precision> precision = parse_precision(argument);
      if (!precision) {
        fail(line, fmt::format("unknown precision '{}' (expected one of {})", argument, kPrecisionNames));
      }
      tmpl_.precision = *precision;
    } else if (word == "arch") {
      static const std::regex feature_target(R"(sm_[0-9]+a)");
      if (!std::regex_match(std::string(argument), feature_target)) {
        fail(line, fmt::format("arch '{}' is not an architecture-specific target like sm_90a",
                               argument));
      }
      tmpl_.feature_arch = std::string(argument);
    } else if (word == "supports") {
      supports(line, argument);
    } else if (word == "specializes") {
      specializes(line, argument);
    } else {
      dimensions(line, word, argument, word == "block" ? tmpl_.block : tmpl_.grid);
      if (word == "grid") {
        sm_count_lines_.insert(line);
        part_lines_.insert(line);
      }
    }
  }

  void parameter(std::size_t line, std::string_view argument) {
    auto [name, values] = split_word(argument);
    if (!is_identifier(name)) {
      fail(line,
           fmt::format("parameter name '{}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", name));
    }
    if (is_problem_size(name) || is_leading_dimension(name)) {
      fail(line, fmt::format("parameter name '{}' is reserved for the problem size", name));
    }
    if (name == kSmCountName) {
      fail(line, fmt::format("parameter name '{}' is reserved for the GPU's multiprocessor count",
                             name));
    }
    const auto [first, inserted] = parameter_lines_.emplace(std::string(name), line);
    if (!inserted) {
      fail(line, fmt::format("duplicate parameter '{}' (first declared on line {})", name,
                             first->second));
    }
    Parameter parameter{std::string(name), {}};
    while (!values.empty()) {
      const auto [word, rest] = split_word(values);
      values = rest;
      const std::optional<std::int64_t> value = parse_integer(word);
      if (!value) {
        fail(line,
             fmt::format("bad value '{}' for parameter '{}' (expected an integer)", word, name));
      }
      if (std::find(parameter.values.begin(), parameter.values.end(), *value) !=
          parameter.values.end()) {
        fail(line, fmt::format("duplicate value {} for parameter '{}'", *value, name));
      }
      parameter.values.push_back(*value);
    }
    if (parameter.values.empty()) {
      fail(line, fmt::format("parameter '{}' has no candidate values", name));
    }
    tmpl_.parameters.push_back(std::move(parameter));
  }

  // "op_a op_b alpha_beta batch epilogue": the parts of the BLAS contract the entry serves.
  void supports(std::size_t line, std::string_view argument) {
    contract_parts(line, "supports", argument, tmpl_.supports);
  }

  // "op_a op_b alpha beta batch epilogue": the supported parts each build compiles in.
  void specializes(std::size_t line, std::string_view argument) {
    contract_parts(line, "specializes", argument, tmpl_.specializes);
    specializes_line_ = line;
  }

  void contract_parts(std::size_t line, std::string_view directive, std::string_view argument,
                      ContractSupport& parts) {
    while (!argument.empty()) {
      const auto [word, rest] = split_word(argument);
      argument = rest;
      std::vector<bool*> flags;
      if (word == "op_a") flags = {&parts.op_a};
      if (word == "op_b") flags = {&parts.op_b};
      if (word == "alpha" || word == "alpha_beta") flags.push_back(&parts.alpha);
      if (word == "beta" || word == "alpha_beta") flags.push_back(&parts.beta);
      if (word == "batch") flags = {&parts.batch};
      if (word == "epilogue") flags = {&parts.epilogue};
      if (flags.empty()) {
        fail(line, fmt::format("{} '{}' (expected some of {})", directive, word, kContractFeatures));
      }
      for (bool* flag : flags) {
        if (*flag) fail(line, fmt::format("{} '{}' twice", directive, word));
        *flag = true;
      }
    }
  }

  // "A tf32 swizzle128 [copy_unaligned] 32, BM": operand, the builds it is for (op_a=t or op_b=t:
  // those where the operand is stored transposed), element, layout, whether the launcher may copy
  // the operand, then the box's two extents.
  void tensor_map(std::size_t line, std::string_view argument) {
    constexpr std::string_view kForm =
        "expected 'tensor_map A|B [op_a=t|op_b=t] fp32|tf32 dense|swizzle128 [copy_unaligned] "
        "INNER, OUTER'";
    const auto [operand, after_operand] = split_word(argument);
    if (operand != "A" && operand != "B") {
      fail(line, fmt::format("tensor_map of '{}': only A and B have one ({})", operand, kForm));
    }
    auto [element, after_element] = split_word(after_operand);
    // The builds' qualifier is a keyword ahead of the element type.
    const bool transposed = element.starts_with("op_");
    if (transposed) {
      const std::string_view own = operand == "A" ? "op_a=t" : "op_b=t";
      if (element != own) {
        fail(line, fmt::format("tensor_map {} {}: a map of {} is qualified '{}' (the builds whose "
                               "{} is stored transposed)",
                               operand, element, operand, own, operand));
      }
      std::tie(element, after_element) = split_word(after_element);
    }
    auto [layout, box] = split_word(after_element);
    // The option is a keyword ahead of the extents (a parameter so named would read as it).
    const auto [option, after_option] = split_word(box);
    const bool copy_unaligned = option == kCopyUnaligned;
    if (copy_unaligned) box = after_option;
    if (element != "fp32" && element != "tf32") {
      fail(line, fmt::format("tensor_map element '{}' ({})", element, kForm));
    }
    if (layout != "dense" && layout != "swizzle128") {
      fail(line, fmt::format("tensor_map layout '{}' ({})", layout, kForm));
    }
    for (const TensorMapDeclaration& other : tmpl_.tensor_maps) {
      if (other.operand == operand[0] && other.transposed == transposed) {
        fail(line, fmt::format("a second tensor_map of {}{}", operand,
                               transposed ? (operand == "A" ? " op_a=t" : " op_b=t") : ""));
      }
    }
    const std::vector<std::string_view> extents = split_top_level(box);
    if (extents.size() != 2) {
      fail(line, fmt::format("tensor_map box '{}' is not two extents ({})", box, kForm));
    }
    tmpl_.tensor_maps.push_back({operand[0], element == "tf32", layout == "swizzle128",
                                 copy_unaligned, expression(line, "tensor_map", extents[0]),
                                 expression(line, "tensor_map", extents[1]), transposed});
    tensor_map_lines_.push_back(line);
    // TMA reads rows that start 16-byte aligned: its global strides are multiples of 16 bytes.
    // With copy_unaligned the launcher makes them so (operand_staging.h). (Both maps of an
    // operand declare it alike, check_tensor_maps: a requirement holds for every build.)
    if (!copy_unaligned && !transposed) {
      tmpl_.requirements.push_back(Expression::parse(operand == "A" ? "lda % 4 == 0" : "ldb % 4 == 0"));
    }
  }

  // "B !OP_B && ceil_div(M, BM) >= 16": the operand, then when the launcher copies it (default 1).
  void unaligned_copy(std::size_t line, std::string_view argument) {
    const auto [operand, when] = split_word(argument);
    if (operand != "A" && operand != "B") {
      fail(line, fmt::format("copy_unaligned of '{}': only A and B are copied (expected "
                             "'copy_unaligned A|B [EXPRESSION]')",
                             operand));
    }
    for (const UnalignedCopyDeclaration& other : tmpl_.unaligned_copies) {
      if (other.operand == operand[0]) fail(line, fmt::format("a second copy_unaligned of {}", operand));
    }
    tmpl_.unaligned_copies.push_back(
        {operand[0], when.empty() ? Expression::parse("1") : expression(line, "copy_unaligned", when)});
    unaligned_copy_lines_.push_back(line);
  }

  void dimensions(std::size_t line, std::string_view word, std::string_view argument,
                  std::array<Expression, 3>& out) {
    const std::vector<std::string_view> items = split_top_level(argument);
    if (items.size() > out.size()) {
      fail(line, fmt::format("'{}' takes 1 to 3 comma-separated expressions, got {}", word,
                             items.size()));
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = i < items.size() ? expression(line, word, items[i]) : Expression::parse("1");
    }
  }

  // Parses now; the names it reads are checked once every parameter is known.
  Expression expression(std::size_t line, std::string_view word, std::string_view text) {
    try {
      Expression parsed = Expression::parse(text);
      expression_lines_.emplace_back(line, parsed);
      return parsed;
    } catch (const ExpressionError& error) {
      fail(line, fmt::format("bad '{}' expression: {}", word, error.what()));
    }
  }

  void check_names() const {
    for (const auto& [line, expression] : expression_lines_) {
      for (const std::string& name : expression.names()) {
        if (parameter_only_lines_.contains(line) && !parameter_lines_.contains(name)) {
          fail(line, fmt::format("expression '{}' reads '{}': 'tile' reads the parameters alone ({})",
                                 expression.text(), name, join_names(tmpl_.parameters)));
        }
        if (is_leading_dimension(name) && !requirement_lines_.contains(line)) {
          fail(line, fmt::format("expression '{}' reads '{}': only 'require' may read the leading "
                                 "dimensions lda, ldb, ldc",
                                 expression.text(), name));
        }
        if (name == kSmCountName) {
          if (!sm_count_lines_.contains(line)) {
            fail(line, fmt::format("expression '{}' reads '{}': only 'grid' and 'zero_output' may "
                                   "read the GPU's multiprocessor count",
                                   expression.text(), name));
          }
          continue;
        }
        if (const std::string_view* part = specialized_part(name)) {
          if (!part_lines_.contains(line)) {
            fail(line, fmt::format("expression '{}' reads '{}': only 'require', 'grid', 'shared', "
                                   "'tensor_map' and 'copy_unaligned' may read a build's "
                                   "specialized parts",
                                   expression.text(), *part));
          }
          continue;
        }
        if (!is_problem_size(name) && !is_leading_dimension(name) &&
            !parameter_lines_.contains(name)) {
          fail(line, fmt::format("expression '{}' reads '{}', which is neither a parameter ({}) "
                                 "nor a problem size (M, N, K, and in 'require' lda, ldb, ldc)",
                                 expression.text(), name, join_names(tmpl_.parameters)));
        }
      }
    }
  }

  // Only supported parts; their macros' names are no parameter's.
  void check_specializations() const {
    const ContractSupport& s = tmpl_.specializes;
    const ContractSupport& served = tmpl_.supports;
    const std::pair<bool, bool> parts[] = {{s.op_a, served.op_a}, {s.op_b, served.op_b},
                                           {s.alpha, served.alpha}, {s.beta, served.beta},
                                           {s.batch, served.batch}, {s.epilogue, served.epilogue}};
    for (const auto& [specialized, supported] : parts) {
      if (specialized && !supported) {
        fail(specializes_line_, fmt::format("specializes {} but supports {}: a build specializes "
                                            "only what the template serves", s.to_string(),
                                            served.to_string()));
      }
    }
    for (const Parameter& parameter : tmpl_.parameters) {
      for (std::string_view bound : kSpecializedParts) {
        if (parameter.name == bound) {
          fail(parameter_lines_.at(parameter.name),
               fmt::format("parameter name '{}' is reserved for a specialized part of the contract",
                           bound));
        }
      }
    }
  }

  // A map for the builds of a transposed operand (op_a=t, op_b=t) comes with the operand's plain
  // map (the entry's parameter) and alike in copy_unaligned, for a template that specializes the
  // transpose; and a template that serves a transposed operand with a map of it has such a map
  // (the map describes the operand as the build stores it).
  void check_tensor_maps() const {
    const ContractSupport& s = tmpl_.specializes;
    const ContractSupport& served = tmpl_.supports;
    for (std::size_t i = 0; i < tmpl_.tensor_maps.size(); ++i) {
      const TensorMapDeclaration& map = tmpl_.tensor_maps[i];
      const bool is_a = map.operand == 'A';
      const std::string_view op = is_a ? "op_a" : "op_b";
      const bool specialized = is_a ? s.op_a : s.op_b;
      const auto other = std::find_if(tmpl_.tensor_maps.begin(), tmpl_.tensor_maps.end(),
                                      [&](const TensorMapDeclaration& d) {
                                        return d.operand == map.operand && d.transposed != map.transposed;
                                      });
      const std::size_t line = tensor_map_lines_[i];
      if (map.transposed) {
        if (!specialized) {
          fail(line, fmt::format("tensor_map {} {}=t, but the template does not specialize {} "
                                 "('// tiletune: specializes {}'): no build stores {} transposed",
                                 map.operand, op, op, op, map.operand));
        }
        if (other == tmpl_.tensor_maps.end()) {
          fail(line, fmt::format("tensor_map {} {}=t without a tensor_map {} for the other builds",
                                 map.operand, op, map.operand));
        }
        if (other->copy_unaligned != map.copy_unaligned) {
          fail(line, fmt::format("tensor_map {} {}=t and tensor_map {} differ in copy_unaligned: "
                                 "declare it for both or neither",
                                 map.operand, op, map.operand));
        }
      } else if ((is_a ? served.op_a : served.op_b) &&
                 (!specialized || other == tmpl_.tensor_maps.end())) {
        fail(line, fmt::format("tensor_map {} of a template that serves {}: {} must be specialized "
                               "and a 'tensor_map {} {}=t' describe the transposed operand",
                               map.operand, op, op, map.operand, op));
      }
    }
  }

  // An operand a tensor map reads is copied as its map declares (tensor_map ... copy_unaligned).
  void check_unaligned_copies() const {
    for (std::size_t i = 0; i < tmpl_.unaligned_copies.size(); ++i) {
      const char operand = tmpl_.unaligned_copies[i].operand;
      const bool mapped = std::any_of(tmpl_.tensor_maps.begin(), tmpl_.tensor_maps.end(),
                                      [&](const TensorMapDeclaration& map) { return map.operand == operand; });
      if (mapped) {
        fail(unaligned_copy_lines_[i],
             fmt::format("copy_unaligned {} of an operand read through a tensor map: declare it "
                         "in the map ('tensor_map {} ... copy_unaligned ...')",
                         operand, operand));
      }
    }
  }

  // The macro name of a part this template specializes ("OP_B"), or nullptr.
  const std::string_view* specialized_part(std::string_view name) const {
    const ContractSupport& s = tmpl_.specializes;
    const bool parts[] = {s.op_a, s.op_b, s.alpha, s.beta, s.batch, s.epilogue};
    for (std::size_t i = 0; i < std::size(parts); ++i) {
      if (parts[i] && name == kSpecializedParts[i]) return &kSpecializedParts[i];
    }
    return nullptr;
  }

  const std::string& origin_;
  KernelTemplate tmpl_;
  std::size_t specializes_line_ = 0;
  std::vector<std::size_t> tensor_map_lines_;  // the line of each of tmpl_.tensor_maps
  std::vector<std::size_t> unaligned_copy_lines_;  // the line of each of tmpl_.unaligned_copies
  std::map<std::string, std::size_t, std::less<>> first_line_;       // once-only directives
  std::map<std::string, std::size_t, std::less<>> parameter_lines_;  // parameter -> its line
  std::vector<std::pair<std::size_t, Expression>> expression_lines_;
  std::set<std::size_t> requirement_lines_;  // the lines of 'require' declarations
  // Of 'require', 'grid', 'shared', 'tensor_map' and 'copy_unaligned', which may read a build's
  // parts (OP_A, ...):
  // each is evaluated for the build that runs (block and tune_if are the configuration's).
  std::set<std::size_t> part_lines_;
  std::set<std::size_t> sm_count_lines_;     // of 'grid' and 'zero_output', which may read SM_COUNT
  std::set<std::size_t> parameter_only_lines_;  // of 'tile', which reads the parameters alone
};

}  // namespace

bool is_identifier(std::string_view s) {
  const auto letter = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  return !s.empty() && letter(s.front()) && std::all_of(s.begin(), s.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

std::int64_t Configuration::at(std::string_view name) const {
  for (const auto& [key, value] : values) {
    if (key == name) return value;
  }
  throw std::out_of_range(
      fmt::format("configuration '{}' has no parameter '{}'", to_string(), name));
}

std::string Configuration::to_string() const {
  std::string text;
  for (const auto& [name, value] : values) {
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", name, value);
  }
  return text;
}

std::string KernelTemplate::compile_arch(const std::string& device_arch) const {
  if (feature_arch.empty()) return device_arch;
  return feature_arch == device_arch + "a" ? feature_arch : std::string();
}

std::vector<std::string> KernelTemplate::macro_definitions(const Configuration& config) const {
  std::vector<std::string> definitions;
  for (const auto& [name, value] : config.values) {
    definitions.push_back(fmt::format("-D{}{}={}", kParameterMacroPrefix, name, value));
  }
  return definitions;
}

Bindings KernelTemplate::bindings(const Configuration& config, const GemmShape* shape) const {
  Bindings result(config.values.begin(), config.values.end());
  if (specializes.any()) {
    // A build's parts, the plain build's (0) where the configuration is not a build's.
    for (std::string_view part : kSpecializedParts) result.emplace(std::string(part), 0);
  }
  if (shape != nullptr) {
    result["M"] = shape->m;
    result["N"] = shape->n;
    result["K"] = shape->k;
  }
  return result;
}

Bindings KernelTemplate::bindings(const Configuration& config, const GemmProblem& problem) const {
  Bindings result = bindings(config, &problem.shape);
  result["lda"] = problem.lda;
  result["ldb"] = problem.ldb;
  result["ldc"] = problem.ldc;
  return result;
}

bool KernelTemplate::requirements_read_problem() const {
  return std::any_of(requirements.begin(), requirements.end(), reads_problem);
}

const Expression* KernelTemplate::violated_requirement(const Configuration& config,
                                                       const GemmProblem* problem) const {
  const Bindings values = problem ? bindings(config, *problem) : bindings(config);
  for (const Expression& requirement : requirements) {
    if (problem == nullptr && reads_problem(requirement)) continue;
    try {
      if (requirement.evaluate(values) == 0) return &requirement;
    } catch (const ExpressionError& error) {
      // A division by zero or an overflow is the template's bug, not a point that fails.
      throw TemplateError(fmt::format("{} [{}]: requirement '{}' cannot be evaluated{}: {}", name,
                                      config.to_string(), requirement.text(),
                                      problem ? " for the problem " + problem->to_string() : "",
                                      error.what()));
    }
  }
  return nullptr;
}

const Expression* KernelTemplate::violated_requirement(const Bindings& values, const Configuration& config,
                                                       const GemmProblem& problem) const {
  for (const Expression& requirement : requirements) {
    try {
      if (requirement.evaluate(values) == 0) return &requirement;
    } catch (const ExpressionError& error) {
      throw TemplateError(fmt::format("{} [{}]: requirement '{}' cannot be evaluated for the problem {}: {}",
                                      name, config.to_string(), requirement.text(), problem.to_string(),
                                      error.what()));
    }
  }
  return nullptr;
}

void KernelTemplate::rebind(Bindings& values, const Configuration& config) {
  for (const auto& [parameter, value] : config.values) {
    const auto bound = values.find(parameter);
    if (bound != values.end()) bound->second = value;
    else values.emplace(parameter, value);
  }
}

void KernelTemplate::check_requirements(const Configuration& config,
                                        const GemmProblem& problem) const {
  if (const Expression* unmet = violated_requirement(config, &problem)) {
    throw RequirementNotMet(fmt::format("{} [{}]: the problem {} does not meet requirement '{}'",
                                        name, config.to_string(), problem.to_string(),
                                        unmet->text()));
  }
}

bool KernelTemplate::satisfies_requirements(const Configuration& config,
                                            const GemmProblem& problem) const {
  return violated_requirement(config, &problem) == nullptr;
}

bool KernelTemplate::worth_tuning(const Configuration& config, const GemmShape& shape) const {
  return worth_tuning(bindings(config, &shape));
}

bool KernelTemplate::worth_tuning(const Bindings& values) const {
  return std::all_of(tuning_limits.begin(), tuning_limits.end(), [&](const Expression& limit) {
    try {
      return limit.evaluate(values) != 0;
    } catch (const ExpressionError&) {
      return false;  // e.g. a division by zero for this configuration: not worth a measurement
    }
  });
}

bool KernelTemplate::satisfies_requirements(const Configuration& config,
                                            const GemmShape* shape) const {
  if (shape == nullptr) return violated_requirement(config) == nullptr;
  return satisfies_requirements(config, GemmProblem::packed(*shape));
}

LaunchGeometry KernelTemplate::launch_geometry(const Configuration& config, const GemmShape& shape,
                                               int sm_count) const {
  Bindings values = bindings(config, &shape);
  if (sm_count > 0) {
    values[kSmCountName] = sm_count;
  } else if (reads_sm_count()) {
    throw TemplateError(fmt::format("{}: its launch geometry reads {}, the GPU's multiprocessor "
                                    "count, and this launch has no GPU to take it from",
                                    name, kSmCountName));
  }
  LaunchGeometry geometry = launch_geometry(values, config, shape);
  geometry.epilogue_pass = geometry.zero_output || may_add_into_c(config);
  return geometry;
}

LaunchGeometry KernelTemplate::launch_geometry(const Bindings& values, const Configuration& config,
                                               const GemmShape& shape) const {
  const auto evaluate = [&](const Expression& expression, std::string_view what,
                            std::int64_t low) -> std::uint32_t {
    constexpr std::int64_t kHigh = std::numeric_limits<std::uint32_t>::max();
    // Formatted only for an error: a plan evaluates geometries by the hundred.
    const auto context = [&] {
      return fmt::format("{}: {} for {} at {}", name, what, config.to_string(), shape.to_string());
    };
    std::int64_t value = 0;
    try {
      value = expression.evaluate(values);
    } catch (const ExpressionError& error) {
      throw TemplateError(fmt::format("{}: {}", context(), error.what()));
    }
    if (value < low || value > kHigh) {
      throw TemplateError(fmt::format("{}: '{}' is {}, outside [{}, {}]", context(),
                                      expression.text(), value, low, kHigh));
    }
    return static_cast<std::uint32_t>(value);
  };

  constexpr std::string_view kGridAxes[] = {"grid x", "grid y", "grid z"};
  constexpr std::string_view kBlockAxes[] = {"block x", "block y", "block z"};
  LaunchGeometry geometry;
  for (std::size_t i = 0; i < 3; ++i) {
    geometry.grid[i] = evaluate(grid[i], kGridAxes[i], 1);
    geometry.block[i] = evaluate(block[i], kBlockAxes[i], 1);
  }
  geometry.dynamic_shared_bytes = evaluate(dynamic_shared_bytes, "shared", 0);
  geometry.zero_output = evaluate(zero_output, "zero_output", 0) != 0;
  // One map per operand (the entry's parameters, in the order of their plain declarations): the
  // op_a=t or op_b=t declaration where the build transposes the operand (its OP_A or OP_B).
  const auto built = [&](std::string_view part) {
    const auto found = values.find(part);
    return found != values.end() && found->second != 0;
  };
  for (const TensorMapDeclaration& plain : tensor_maps) {
    if (plain.transposed) continue;
    const bool transposed = built(plain.operand == 'A' ? "OP_A" : "OP_B");
    const auto declared = std::find_if(tensor_maps.begin(), tensor_maps.end(), [&](const auto& d) {
      return d.operand == plain.operand && d.transposed == transposed;
    });
    if (declared == tensor_maps.end()) {
      throw TemplateError(fmt::format("{}: tensor_map {} for {}: no map of the transposed operand",
                                      name, plain.operand, config.to_string()));
    }
    const TensorMapDeclaration& map = *declared;
    const std::string what = fmt::format("tensor_map {}{}", map.operand,
                                         !transposed ? "" : map.operand == 'A' ? " op_a=t" : " op_b=t");
    TensorMapBox box{map.operand, map.tf32, map.swizzle128, map.copy_unaligned,
                     evaluate(map.inner, what + " inner extent", 1),
                     evaluate(map.outer, what + " outer extent", 1), transposed};
    const auto refuse = [&](std::string_view why) {
      throw TemplateError(fmt::format("{}: {} for {}: box {} x {} {}", name, what,
                                      config.to_string(), box.inner, box.outer, why));
    };
    if (box.inner > 256 || box.outer > 256) refuse("has an extent above 256 (TMA's most)");
    if (box.inner * 4 % 16 != 0) refuse("has rows that are not a multiple of 16 bytes");
    if (box.swizzle128 && box.inner * 4 != 128) refuse("has rows other than 128 bytes: swizzle128 swizzles 128-byte rows");
    geometry.tensor_maps.push_back(box);
  }
  for (const UnalignedCopyDeclaration& copy : unaligned_copies) {
    if (evaluate(copy.when, copy.operand == 'A' ? "copy_unaligned A" : "copy_unaligned B", 0) != 0) {
      geometry.aligned_copies.push_back({copy.operand, built(copy.operand == 'A' ? "OP_A" : "OP_B")});
    }
  }
  return geometry;
}

std::int64_t StoredOperand::width(const GemmShape& shape) const {
  if (operand == 'A') return transposed ? shape.m : shape.k;
  return transposed ? shape.k : shape.n;
}

std::int64_t StoredOperand::rows(const GemmShape& shape) const {
  if (operand == 'A') return transposed ? shape.k : shape.m;
  return transposed ? shape.n : shape.k;
}

std::size_t KernelTemplate::tensor_map_parameters() const {
  return std::size_t(std::count_if(tensor_maps.begin(), tensor_maps.end(),
                                   [](const TensorMapDeclaration& map) { return !map.transposed; }));
}

std::optional<BlockTile> KernelTemplate::block_tile(const Configuration& config) const {
  if (tile.empty()) return std::nullopt;
  const Bindings values = bindings(config);
  std::array<std::int64_t, 3> extents{1, 1, 1};
  for (std::size_t i = 0; i < tile.size(); ++i) {
    try {
      extents[i] = tile[i].evaluate(values);
    } catch (const ExpressionError& error) {
      throw TemplateError(fmt::format("{}: tile for {}: {}", name, config.to_string(), error.what()));
    }
    if (extents[i] < 1) {
      throw TemplateError(fmt::format("{}: tile for {}: '{}' is {}, below 1", name, config.to_string(),
                                      tile[i].text(), extents[i]));
    }
  }
  return BlockTile{extents[0], extents[1], extents[2]};
}

bool KernelTemplate::reads_sm_count() const {
  const auto reads = [](const Expression& e) { return e.references(kSmCountName); };
  return std::any_of(grid.begin(), grid.end(), reads) || reads(zero_output);
}

Configuration KernelTemplate::parse_configuration(std::string_view text) const {
  const auto fail = [&](std::string_view why) {
    throw TemplateError(fmt::format("{}: invalid configuration '{}': {}", name, text, why));
  };
  std::map<std::string, std::int64_t, std::less<>> given;
  if (!trim(text).empty()) {
    for (std::string_view item : split_top_level(text)) {
      const std::size_t equals = item.find('=');
      if (equals == std::string_view::npos) fail(fmt::format("'{}' is not NAME=VALUE", item));
      const std::string_view key = trim(item.substr(0, equals));
      const std::string_view value_text = trim(item.substr(equals + 1));

      const auto parameter = std::find_if(parameters.begin(), parameters.end(),
                                          [&](const Parameter& p) { return p.name == key; });
      if (parameter == parameters.end()) {
        fail(fmt::format("unknown parameter '{}' (parameters: {})", key, join_names(parameters)));
      }
      const std::optional<std::int64_t> value = parse_integer(value_text);
      if (!value) fail(fmt::format("value '{}' of {} is not an integer", value_text, key));
      if (std::find(parameter->values.begin(), parameter->values.end(), *value) ==
          parameter->values.end()) {
        fail(fmt::format("{} is not a candidate of {} (candidates: {})", *value, key,
                         fmt::join(parameter->values, ", ")));
      }
      if (!given.emplace(std::string(key), *value).second) {
        fail(fmt::format("parameter '{}' given twice", key));
      }
    }
  }

  Configuration config;
  for (const Parameter& parameter : parameters) {
    const auto found = given.find(parameter.name);
    if (found == given.end()) fail(fmt::format("missing parameter '{}'", parameter.name));
    config.values.emplace_back(parameter.name, found->second);
  }
  return config;
}

KernelTemplate parse_template(std::string source, const std::string& origin) {
  // Before any regex sees it: a text from a database or a bundle may have been written by anyone.
  if (auto why = overlong_line(source)) throw TemplateError(fmt::format("{}: {}", origin, *why));
  // tiletune's device library becomes part of its text (device_library.h), hence of its version.
  try {
    source = inline_device_library(source);
  } catch (const std::runtime_error& e) {
    throw TemplateError(fmt::format("{}: {}", origin, e.what()));
  }
  return TemplateParser(std::move(source), origin).parse();
}

KernelTemplate load_template(const std::filesystem::path& path) {
  const std::string contents = read_source_file(path);
  if (auto why = overlong_line(contents)) throw TemplateError(fmt::format("{}: {}", path.string(), *why));
  // Headers beside it become part of its text (local_includes.h), hence of its version.
  KernelTemplate tmpl = parse_template(inline_local_includes(contents, path), path.string());
  tmpl.path = path;
  return tmpl;
}

std::string ContractSupport::to_string() const {
  std::vector<std::string_view> parts;
  if (op_a) parts.push_back("op_a");
  if (op_b) parts.push_back("op_b");
  if (alpha) parts.push_back("alpha");
  if (beta) parts.push_back("beta");
  if (batch) parts.push_back("batch");
  if (epilogue) parts.push_back("epilogue");
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, " "));
}

const Expression* KernelTemplate::unmet_build_requirement(const Configuration& build) const {
  const Bindings values = bindings(build);
  for (const Expression& requirement : requirements) {
    if (restricts_builds(requirement) && requirement.evaluate(values) == 0) return &requirement;
  }
  return nullptr;
}

std::optional<std::string> KernelTemplate::unsupported(const GemmProblem& problem) const {
  const auto refuse = [&](std::string_view what) {
    return fmt::format("{} serves no {} (it supports {})", name, what,
                       supports.any() ? supports.to_string() : "plain C = A * B only");
  };
  if (problem.op_a == Op::t && !supports.op_a) return refuse("transposed A (op_a=t)");
  if (problem.op_b == Op::t && !supports.op_b) return refuse("transposed B (op_b=t)");
  if (problem.alpha != 1 && !supports.alpha) return refuse(fmt::format("alpha={}", problem.alpha));
  if (problem.beta != 0 && !supports.beta) {
    return refuse(fmt::format("beta={} (it does not read C)", problem.beta));
  }
  if (problem.batch != 1 && !supports.batch) return refuse(fmt::format("batch={}", problem.batch));
  if (problem.epilogue != Epilogue::none && !supports.epilogue) {
    return refuse(fmt::format("epilogue={}", tiletune::to_string(problem.epilogue)));
  }
  // A requirement of the parts alone ("OP_A == 0 || OP_B == 1") leaves the build out of every
  // configuration; one that also reads a parameter is the configuration's (below).
  if (specializes.any()) {
    const Specialization build = specialization(problem);
    const Bindings parts = bindings(with_parts(Configuration{}, build));
    for (const Expression& requirement : requirements) {
      const std::set<std::string>& names = requirement.names();
      const bool parts_only = !names.empty() && std::all_of(names.begin(), names.end(), is_specialized_part);
      if (parts_only && requirement.evaluate(parts) == 0) {
        return fmt::format("{} has no build {} (its requirement '{}')", name, build.to_string(),
                           requirement.text());
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> KernelTemplate::unsupported(const GemmProblem& problem,
                                                       const Configuration& config) const {
  if (std::optional<std::string> why = unsupported(problem)) return why;
  if (specializes.any()) {
    const Specialization build = specialization(problem);
    if (const Expression* unmet = unmet_build_requirement(build_configuration(config, build))) {
      return fmt::format("{} [{}] has no build {} (its requirement '{}')", name, config.to_string(),
                         build.to_string(), unmet->text());
    }
  }
  return std::nullopt;
}

std::string Specialization::to_string() const {
  std::vector<std::string> parts;
  if (op_a == Op::t) parts.push_back("op_a=t");
  if (op_b == Op::t) parts.push_back("op_b=t");
  if (alpha) parts.push_back("alpha");
  if (beta) parts.push_back("beta");
  if (batch) parts.push_back("batch");
  if (epilogue != Epilogue::none) parts.push_back(std::string("epilogue=") + tiletune::to_string(epilogue));
  return parts.empty() ? "plain" : fmt::format("{}", fmt::join(parts, " "));
}

Specialization Specialization::parse(std::string_view text) {
  Specialization build;
  for (std::string_view rest = text; !trim(rest).empty();) {
    const auto [word, after] = split_word(rest);
    rest = after;
    if (word == "plain") continue;
    if (word == "op_a=t") build.op_a = Op::t;
    else if (word == "op_b=t") build.op_b = Op::t;
    else if (word == "alpha") build.alpha = true;
    else if (word == "beta") build.beta = true;
    else if (word == "batch") build.batch = true;
    else if (word.starts_with("epilogue=") && parse_epilogue(word.substr(9))) {
      build.epilogue = *parse_epilogue(word.substr(9));
    } else {
      throw std::invalid_argument(fmt::format(
          "build '{}': unknown part '{}' (expected plain, op_a=t, op_b=t, alpha, beta, batch, "
          "epilogue=NAME)", text, word));
    }
  }
  return build;
}

Specialization KernelTemplate::specialization(const GemmProblem& problem) const {
  Specialization build;
  if (specializes.op_a) build.op_a = problem.op_a;
  if (specializes.op_b) build.op_b = problem.op_b;
  if (specializes.alpha) build.alpha = problem.alpha != 1;
  if (specializes.beta) build.beta = problem.beta != 0;
  if (specializes.batch) build.batch = problem.batch != 1;
  if (specializes.epilogue) build.epilogue = problem.epilogue;
  return build;
}

Specialization KernelTemplate::kernel_build(const Configuration& config, Specialization build) const {
  if ((build.beta || build.epilogue != Epilogue::none) && may_add_into_c(config)) {
    build.beta = false;
    build.epilogue = Epilogue::none;
  }
  return build;
}

Configuration KernelTemplate::build_configuration(const Configuration& config,
                                                  const Specialization& build) const {
  return with_parts(config, kernel_build(config, build));
}

Configuration KernelTemplate::with_parts(const Configuration& config, const Specialization& build) const {
  Configuration built = config;
  const auto add = [&](std::string_view name, std::int64_t value) {
    if (value != 0) built.values.emplace_back(std::string(name), value);
  };
  add(kSpecializedParts[0], build.op_a == Op::t);
  add(kSpecializedParts[1], build.op_b == Op::t);
  add(kSpecializedParts[2], build.alpha);
  add(kSpecializedParts[3], build.beta);
  add(kSpecializedParts[4], build.batch);
  add(kSpecializedParts[5], std::int64_t(build.epilogue));
  return built;
}

std::vector<Specialization> KernelTemplate::builds(const Configuration& config) const {
  const auto values = [](bool part) { return part ? 2 : 1; };
  std::vector<Specialization> all;
  for (int op_a = 0; op_a < values(specializes.op_a); ++op_a) {
    for (int op_b = 0; op_b < values(specializes.op_b); ++op_b) {
      for (int alpha = 0; alpha < values(specializes.alpha); ++alpha) {
        for (int beta = 0; beta < values(specializes.beta); ++beta) {
          for (int batch = 0; batch < values(specializes.batch); ++batch) {
            for (int epilogue = 0; epilogue < (specializes.epilogue ? 6 : 1); ++epilogue) {
              const Specialization build{Op(op_a), Op(op_b), alpha != 0, beta != 0, batch != 0,
                                         Epilogue(epilogue)};
              if (!unmet_build_requirement(build_configuration(config, build))) all.push_back(build);
            }
          }
        }
      }
    }
  }
  return all;
}

bool KernelTemplate::may_add_into_c(const Configuration& config) const {
  try {
    return zero_output.evaluate(bindings(config)) != 0;
  } catch (const std::exception&) {
    return true;  // it reads the problem or the GPU
  }
}

std::string fnv1a_hex(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // the 64-bit FNV offset basis
  for (const unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;  // the 64-bit FNV prime
  }
  return fmt::format("{:016x}", hash);
}

int drawn_sm_count(std::uint64_t seed) { return 1 + int(splitmix64_mix(seed) % 4); }

}  // namespace tiletune

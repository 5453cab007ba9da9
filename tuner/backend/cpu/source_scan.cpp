#include "tuner/backend/cpu/source_scan.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

namespace tiletune {
namespace {

struct Feature {
  std::string_view name;
  std::string_view what;
};

// Identifiers whose meaning depends on warps, PTX or hardware units a fiber does not have. The
// *_sync shuffles and votes, __syncwarp and __activemask are emulated (cuda_on_cpu.h); the warp
// intrinsics without a mask were removed from CUDA for sm_70 and newer.
constexpr Feature kUnsupported[] = {
    {"asm", "inline assembly"},
    {"__asm", "inline assembly"},
    {"__asm__", "inline assembly"},
    {"__shfl", "warp shuffle"},
    {"__shfl_up", "warp shuffle"},
    {"__shfl_down", "warp shuffle"},
    {"__shfl_xor", "warp shuffle"},
    {"__ballot", "warp vote"},
    {"__any", "warp vote"},
    {"__all", "warp vote"},
    {"__uni_sync", "warp vote"},
    {"__match_any_sync", "warp match"},
    {"__match_all_sync", "warp match"},
    {"__reduce_add_sync", "warp reduction"},
    {"__reduce_min_sync", "warp reduction"},
    {"__reduce_max_sync", "warp reduction"},
    {"__reduce_and_sync", "warp reduction"},
    {"__reduce_or_sync", "warp reduction"},
    {"__reduce_xor_sync", "warp reduction"},
    {"__syncthreads_count", "barrier with a predicate"},
    {"__syncthreads_and", "barrier with a predicate"},
    {"__syncthreads_or", "barrier with a predicate"},
    {"__pipeline_memcpy_async", "asynchronous copy"},
    {"__pipeline_commit", "asynchronous copy"},
    {"__pipeline_wait_prior", "asynchronous copy"},
    {"memcpy_async", "asynchronous copy"},
    {"__cvta_generic_to_shared", "shared-memory address for PTX"},
    {"wmma", "warp matrix multiply-accumulate"},
    {"nvcuda", "warp matrix multiply-accumulate"},
    {"cooperative_groups", "cooperative groups"},
};

struct Token {
  std::string text;
  bool identifier = false;
};

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Skips a string or character literal starting at text[i] (the quote); returns the index past it.
std::size_t skip_quoted(std::string_view text, std::size_t i) {
  const char quote = text[i++];
  while (i < text.size() && text[i] != quote && text[i] != '\n') {
    i += text[i] == '\\' ? 2 : 1;
  }
  return std::min(i + 1, text.size());
}

// Skips a raw string literal whose opening quote is text[i]: R"delim( ... )delim".
std::size_t skip_raw_string(std::string_view text, std::size_t i) {
  const std::size_t open = text.find('(', i);
  if (open == std::string_view::npos) return text.size();
  const std::string close = ")" + std::string(text.substr(i + 1, open - i - 1)) + "\"";
  const std::size_t end = text.find(close, open);
  return end == std::string_view::npos ? text.size() : end + close.size();
}

// C++ tokens, literals left out: only identifiers and punctuation matter to the scan.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (identifier_start(c)) {
      const std::size_t start = i;
      while (i < text.size() && identifier_char(text[i])) ++i;
      const std::string_view word = text.substr(start, i - start);
      const bool raw_prefix =
          word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
      if (i < text.size() && text[i] == '"') {
        i = raw_prefix ? skip_raw_string(text, i) : skip_quoted(text, i);
      } else {
        tokens.push_back({std::string(word), true});
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < text.size() &&
                std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      // A pp-number: digits, letters, '.', digit separators and exponent signs.
      ++i;
      while (i < text.size() && (identifier_char(text[i]) || text[i] == '.' || text[i] == '\'' ||
                                 ((text[i] == '+' || text[i] == '-') &&
                                  std::strchr("eEpP", text[i - 1]) != nullptr))) {
        ++i;
      }
    } else if (c == '"' || c == '\'') {
      i = skip_quoted(text, i);
    } else if (c == ':' && i + 1 < text.size() && text[i + 1] == ':') {
      tokens.push_back({"::", false});
      i += 2;
    } else {
      tokens.push_back({std::string(1, c), false});
      ++i;
    }
  }
  return tokens;
}

// The lines that came from `origin`, following the preprocessor's line markers.
std::string lines_from(std::string_view preprocessed, std::string_view origin) {
  std::string kept;
  bool inside = false;
  std::size_t start = 0;
  while (start < preprocessed.size()) {
    std::size_t end = preprocessed.find('\n', start);
    if (end == std::string_view::npos) end = preprocessed.size();
    const std::string_view line = preprocessed.substr(start, end - start);
    start = end + 1;
    if (line.size() > 2 && line[0] == '#' && line[1] == ' ' &&
        std::isdigit(static_cast<unsigned char>(line[2]))) {
      const std::size_t open = line.find('"');
      const std::size_t close = line.rfind('"');
      inside = open != close && line.substr(open + 1, close - open - 1) == origin;
    } else if (inside) {
      kept.append(line).push_back('\n');
    }
  }
  return kept;
}

// Removes the alignment and attribute groups from a declaration: __attribute__((...)),
// alignas(...).
std::vector<Token> without_attributes(const std::vector<Token>& declaration) {
  std::vector<Token> kept;
  for (std::size_t i = 0; i < declaration.size(); ++i) {
    const std::string& word = declaration[i].text;
    if ((word == "__attribute__" || word == "alignas") && i + 1 < declaration.size() &&
        declaration[i + 1].text == "(") {
      int depth = 0;
      for (++i; i < declaration.size(); ++i) {
        if (declaration[i].text == "(") ++depth;
        if (declaration[i].text == ")" && --depth == 0) break;
      }
    } else {
      kept.push_back(declaration[i]);
    }
  }
  return kept;
}

}  // namespace

KernelSourceScan scan_preprocessed_kernel(std::string_view preprocessed, std::string_view origin) {
  KernelSourceScan scan;
  const std::vector<Token> tokens = tokenize(lines_from(preprocessed, origin));
  // The namespaces open at each token: their names and the brace depth each was opened at.
  struct OpenNamespace {
    std::vector<std::string> names;  // `namespace a::b {` opens two
    int depth;
  };
  std::vector<OpenNamespace> open;
  int depth = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = tokens[i];
    if (token.text == "{") ++depth;
    if (token.text == "}") {
      --depth;
      while (!open.empty() && open.back().depth == depth) open.pop_back();
    }
    if (token.text == "namespace") {
      std::vector<std::string> names;
      std::size_t j = i + 1;
      for (; j < tokens.size() && (tokens[j].identifier || tokens[j].text == "::"); ++j) {
        if (tokens[j].identifier && tokens[j].text != "inline") names.push_back(tokens[j].text);
      }
      if (j < tokens.size() && tokens[j].text == "{") {  // not an alias
        if (names.empty()) names.push_back("");
        open.push_back({names, depth});
        ++depth;
        i = j;
        continue;
      }
    }
    if (!token.identifier) continue;
    if (token.text == "cuda" && i + 2 < tokens.size() && tokens[i + 1].text == "::") {
      scan.unsupported = "libcu++ (cuda::" + tokens[i + 2].text + ")";
      return scan;
    }
    for (const Feature& feature : kUnsupported) {
      if (token.text == feature.name) {
        scan.unsupported = std::string(feature.what) + " (" + token.text + ")";
        return scan;
      }
    }
    // `extern __shared__` reaches the preprocessor's output as `extern thread_local`.
    if (token.text == "extern" && i + 1 < tokens.size() && tokens[i + 1].text == "thread_local") {
      std::vector<Token> declaration;
      std::size_t end = i + 2;
      while (end < tokens.size() && tokens[end].text != ";") declaration.push_back(tokens[end++]);
      declaration = without_attributes(declaration);
      const std::size_t n = declaration.size();
      if (n < 4 || !declaration[n - 3].identifier || declaration[n - 2].text != "[" ||
          declaration[n - 1].text != "]") {
        std::string text = "extern __shared__";
        for (const Token& t : declaration) text += " " + t.text;
        scan.unsupported =
            "a dynamic shared memory declaration of another form than "
            "`extern __shared__ T name[];` (" +
            text + ";)";
        return scan;
      }
      DynamicSharedArray array;
      for (std::size_t k = 0; k + 3 < n; ++k) {
        array.type += (k == 0 ? "" : " ") + declaration[k].text;
      }
      array.name = declaration[n - 3].text;
      for (const OpenNamespace& space : open) {
        array.scope.insert(array.scope.end(), space.names.begin(), space.names.end());
      }
      const bool known = std::any_of(
          scan.dynamic_shared.begin(), scan.dynamic_shared.end(),
          [&](const DynamicSharedArray& a) { return a.name == array.name && a.scope == array.scope; });
      if (!known) scan.dynamic_shared.push_back(array);
      i = end;
    }
  }
  return scan;
}

std::optional<std::string> unsupported_in_compiler_log(std::string_view log) {
  // NVRTC compiles templates with its built-in CUDA headers; the host compiler has none of them.
  // GCC: "fatal error: mma.h: No such file or directory"; Clang: "fatal error: 'mma.h' file not
  // found".
  static const std::regex missing_header(
      R"(fatal error: (?:([^:\s]+): No such file or directory|'([^']+)' file not found))");
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(log.begin(), log.end(), match, missing_header)) {
    return "the CUDA header <" + (match[1].matched ? match[1] : match[2]).str() + ">";
  }
  return std::nullopt;
}

}  // namespace tiletune

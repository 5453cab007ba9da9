#include "tuner/core/gemm_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <utility>

namespace tiletune {
namespace {

// Kernels take their sizes and strides as int.
constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();

}  // namespace

double log_distance(const GemmShape& a, const GemmShape& b) {
  const double dm = std::log2(double(a.m) / double(b.m)), dn = std::log2(double(a.n) / double(b.n)),
               dk = std::log2(double(a.k) / double(b.k));
  return std::sqrt(dm * dm + dn * dn + dk * dk);
}

GemmShape GemmShape::parse(std::string_view text) {
  const auto fail = [text](std::string_view why) {
    throw ShapeError(
        fmt::format("invalid shape '{}': {} (expected MxNxK, e.g. 4096x4096x4096)", text, why));
  };
  if (std::count_if(text.begin(), text.end(), [](char c) { return c == 'x' || c == 'X'; }) != 2) {
    fail("it needs exactly three sizes");
  }

  std::array<std::int64_t, 3> sizes{};
  std::string_view rest = text;
  for (std::int64_t& size : sizes) {
    const std::size_t separator = std::min(rest.find_first_of("xX"), rest.size());
    const std::string_view part = rest.substr(0, separator);
    rest.remove_prefix(std::min(separator + 1, rest.size()));

    if (part.empty()) fail("sizes must be whole numbers >= 1");
    for (const char c : part) {
      if (c < '0' || c > '9') fail("sizes must be whole numbers >= 1");
      size = size * 10 + (c - '0');  // cannot overflow: size <= kMaxSize before each step
      if (size > kMaxSize) fail(fmt::format("sizes must be at most {}", kMaxSize));
    }
    if (size == 0) fail("sizes must be whole numbers >= 1");
  }
  return {sizes[0], sizes[1], sizes[2]};
}

std::string GemmShape::to_string() const { return fmt::format("{}x{}x{}", m, n, k); }

char to_char(Op op) { return op == Op::n ? 'n' : 't'; }

std::string Transposes::to_string() const { return {to_char(a), to_char(b)}; }

std::optional<Transposes> Transposes::parse(std::string_view text) {
  const auto op = [](char c) -> std::optional<Op> {
    if (c == 'n') return Op::n;
    if (c == 't') return Op::t;
    return std::nullopt;
  };
  if (text.size() != 2) return std::nullopt;
  const auto a = op(text[0]), b = op(text[1]);
  if (!a || !b) return std::nullopt;
  return Transposes{*a, *b};
}

std::string TunedFor::to_string() const {
  std::string text = op.none() ? "" : "op=" + op.to_string();
  if (batch != 1) text += (text.empty() ? "batch=" : " batch=") + std::to_string(batch);
  return text;
}

GemmProblem GemmProblem::packed(GemmShape s, TunedFor kind) {
  GemmProblem p = packed(s);
  p.op_a = kind.op.a;
  p.op_b = kind.op.b;
  p.lda = p.a_columns();
  p.ldb = p.b_columns();
  if (kind.batch != 1) {
    p.batch = kind.batch;
    p.pack_entries();
  }
  return p;
}

const char* to_string(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::none: return "none";
    case Epilogue::bias: return "bias";
    case Epilogue::relu: return "relu";
    case Epilogue::bias_relu: return "bias_relu";
    case Epilogue::gelu: return "gelu";
    case Epilogue::bias_gelu: return "bias_gelu";
  }
  return "unknown";
}

std::optional<Epilogue> parse_epilogue(std::string_view text) {
  for (Epilogue e : {Epilogue::none, Epilogue::bias, Epilogue::relu, Epilogue::bias_relu,
                     Epilogue::gelu, Epilogue::bias_gelu}) {
    if (text == to_string(e)) return e;
  }
  return std::nullopt;
}

bool adds_bias(Epilogue epilogue) {
  return epilogue == Epilogue::bias || epilogue == Epilogue::bias_relu ||
         epilogue == Epilogue::bias_gelu;
}

double activate(Epilogue epilogue, double x) {
  switch (epilogue) {
    case Epilogue::relu:
    case Epilogue::bias_relu: return x > 0 ? x : 0;
    case Epilogue::gelu:
    case Epilogue::bias_gelu:
      return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Epilogue::none:
    case Epilogue::bias: return x;
  }
  return x;
}

std::string GemmProblem::invalid_reason() const {
  const auto size = [](const char* name, std::int64_t value) -> std::string {
    if (value < 1 || value > kMaxSize) return fmt::format("{}={} is not in [1, {}]", name, value, kMaxSize);
    return {};
  };
  for (auto [name, value] : {std::pair{"M", shape.m}, {"N", shape.n}, {"K", shape.k}}) {
    if (std::string why = size(name, value); !why.empty()) return why;
  }
  const auto leading = [](const char* name, std::int64_t value, std::int64_t least,
                          const char* what) -> std::string {
    if (value < least || value > kMaxSize) {
      return fmt::format("{}={} is not in [{}, {}] ({})", name, value, least, kMaxSize, what);
    }
    return {};
  };
  if (std::string why = leading("lda", lda, a_columns(), op_a == Op::n ? "K, A as stored" : "M, A transposed");
      !why.empty()) {
    return why;
  }
  if (std::string why = leading("ldb", ldb, b_columns(), op_b == Op::n ? "N, B as stored" : "K, B transposed");
      !why.empty()) {
    return why;
  }
  if (std::string why = leading("ldc", ldc, shape.n, "N"); !why.empty()) return why;
  if (batch < 1 || batch > kMaxSize) return fmt::format("batch={} is not in [1, {}]", batch, kMaxSize);
  if (batch > 1) {
    if (stride_a < 0 || stride_b < 0) {
      return fmt::format("stride_a={} stride_b={}: a batch stride is not >= 0", stride_a, stride_b);
    }
    if (stride_c < c_span()) {
      return fmt::format("stride_c={} is below the {} elements one C spans: entries would overlap",
                         stride_c, c_span());
    }
    // Every element index of the batch fits in int64 (a kernel adds i * stride to a pointer).
    constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int64_t>::max() / 4;
    for (auto [name, stride] : {std::pair{"stride_a", stride_a}, {"stride_b", stride_b},
                                {"stride_c", stride_c}}) {
      if (stride > kMaxIndex / batch) return fmt::format("{}={} x batch={} overflows", name, stride, batch);
    }
  }
  return {};
}

bool GemmProblem::valid() const { return invalid_reason().empty(); }

bool GemmProblem::plain() const {
  return op_a == Op::n && op_b == Op::n && alpha == 1 && beta == 0 && batch == 1 &&
         epilogue == Epilogue::none;
}

std::string GemmProblem::contract_text() const {
  std::string text;
  if (op_a != Op::n || op_b != Op::n) text += fmt::format(" op={}{}", to_char(op_a), to_char(op_b));
  if (alpha != 1) text += fmt::format(" alpha={}", alpha);
  if (beta != 0) text += fmt::format(" beta={}", beta);
  if (batch != 1) {
    text += fmt::format(" batch={} stride_a={} stride_b={} stride_c={}", batch, stride_a, stride_b,
                        stride_c);
  }
  if (epilogue != Epilogue::none) text += fmt::format(" epilogue={}", tiletune::to_string(epilogue));
  return text;
}

std::string GemmProblem::to_string() const {
  return fmt::format("{} lda={} ldb={} ldc={}{}", shape.to_string(), lda, ldb, ldc, contract_text());
}

bool GemmProblem::parse_contract_item(std::string_view key, std::string_view value) {
  const auto bad = [&] {
    return std::invalid_argument(fmt::format("{}={} not understood", key, value));
  };
  const auto number = [&](auto& out) {
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (error != std::errc() || end != value.data() + value.size()) throw bad();
  };
  if (key == "op") {
    const std::optional<Transposes> op = Transposes::parse(value);
    if (!op) throw bad();
    op_a = op->a;
    op_b = op->b;
  } else if (key == "alpha") {
    number(alpha);
  } else if (key == "beta") {
    number(beta);
  } else if (std::int64_t* field = key == "batch"      ? &batch
                                   : key == "stride_a" ? &stride_a
                                   : key == "stride_b" ? &stride_b
                                   : key == "stride_c" ? &stride_c
                                                       : nullptr) {
    number(*field);
  } else if (key == "epilogue") {
    const std::optional<Epilogue> e = parse_epilogue(value);
    if (!e) throw bad();
    epilogue = *e;
  } else {
    return false;
  }
  return true;
}

}  // namespace tiletune

// The problem a kernel solves, in FP32, row-major: C[M x N] = act(alpha * op(A) * op(B) + beta * C
// + bias), each matrix a strided view with its leading dimension, `batch` times over matrices
// `stride_*` elements apart. The plain problem (no transpose, alpha 1, beta 0, one matrix, no
// epilogue) is C = A * B, what every template computes; the rest is the BLAS contract, served by
// the templates that declare it (`// tiletune: supports`, kernel_template.h).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tuner/runtime/include/tiletune/gemm_contract.h"  // Op, Epilogue: shared with the public API

namespace tiletune {

class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;

  // "4096x4096x4096" (also "4096X4096X4096"); every size a whole number in [1, 2^31 - 1].
  // Throws ShapeError with the offending text otherwise.
  static GemmShape parse(std::string_view text);
  std::string to_string() const;  // "MxNxK"
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  // TFLOP/s of this multiplication done in `ms` milliseconds; 0 for no time.
  double tflops(double ms) const { return ms > 0 ? flops() / (ms * 1e-3) / 1e12 : 0; }

  friend bool operator==(const GemmShape&, const GemmShape&) = default;
  friend auto operator<=>(const GemmShape&, const GemmShape&) = default;
};

// How far apart two shapes are for a kernel's choices: the Euclidean distance of their
// (log2 M, log2 N, log2 K), so that 1000^3 is near 1024^3 and 64x4096x4096 far from 4096^3.
double log_distance(const GemmShape& a, const GemmShape& b);

char to_char(Op op);                        // 'n', 't'

// A problem's transposes as BLAS names them: "nn" (C = A * B), "nt", "tn", "tt". Besides its
// shape, what a record is tuned for: the transposes change which configuration is fastest.
struct Transposes {
  Op a = Op::n, b = Op::n;

  std::string to_string() const;  // "nt"
  // "nt" -> {n, t}; nothing for another text.
  static std::optional<Transposes> parse(std::string_view text);
  bool none() const { return a == Op::n && b == Op::n; }
  friend bool operator==(const Transposes&, const Transposes&) = default;
  friend auto operator<=>(const Transposes&, const Transposes&) = default;
};

// Everything besides its shape that a record is tuned for, because it changes which configuration
// is fastest: the transposes, and the batch of a strided batch (its entries packed one after
// another). The database keys results by both; a Transposes is one of batch 1.
struct TunedFor {
  Transposes op;
  std::int64_t batch = 1;

  TunedFor() = default;
  TunedFor(Transposes op, std::int64_t batch = 1) : op(op), batch(batch) {}  // NOLINT: implicit
  bool plain() const { return op.none() && batch == 1; }
  // What differs from a plain record, as tiletune prints it: "", "op=nt", "op=nt batch=96".
  std::string to_string() const;
  friend bool operator==(const TunedFor&, const TunedFor&) = default;
  friend auto operator<=>(const TunedFor&, const TunedFor&) = default;
};

const char* to_string(Epilogue epilogue);   // "none", "bias_relu", ...
// "bias_relu" -> Epilogue::bias_relu; nothing for another word.
std::optional<Epilogue> parse_epilogue(std::string_view text);
bool adds_bias(Epilogue epilogue);  // bias, bias_relu, bias_gelu
// The epilogue's activation of x in double: ReLU, GELU in its tanh form, or x itself. What the
// references judge a kernel's float epilogue by.
double activate(Epilogue epilogue, double x);

// A shape with the strides of its three matrices and the rest of the BLAS contract: the unit the
// fuzzer generates and a kernel runs.
struct GemmProblem {
  GemmShape shape;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  // op(A) is M x K: A stored M x K (lda >= K), or transposed, stored K x M (lda >= M). op(B) is
  // K x N: B stored K x N (ldb >= N), or stored N x K (ldb >= K).
  Op op_a = Op::n, op_b = Op::n;
  float alpha = 1, beta = 0;  // beta 0: C is written, never read (NaN there stays out)
  // Entry i of a batch multiplies A + i * stride_a by B + i * stride_b into C + i * stride_c. A
  // stride of A or B may be 0 (one matrix for every entry); C's entries must not overlap.
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  Epilogue epilogue = Epilogue::none;

  static GemmProblem packed(GemmShape s) { return {s, s.k, s.n, s.n}; }
  // Packed with these transposes and batch: each operand's rows as long as its stored layout's,
  // each entry of the batch right after the one before.
  static GemmProblem packed(GemmShape s, TunedFor kind);
  Transposes transposes() const { return {op_a, op_b}; }
  TunedFor tuned_for() const { return {transposes(), batch}; }
  // Strides that put each entry of the batch right after the one before, at the leading dimensions
  // set.
  void pack_entries() {
    stride_a = a_span();
    stride_b = b_span();
    stride_c = c_span();
  }
  // Sizes >= 1, leading dimensions at least op's rows' lengths, batch >= 1 with strides >= 0 and
  // C's entries apart, all within int range (strides and batch: int64).
  bool valid() const;
  // Why it is not valid, in one line naming the value, or empty.
  std::string invalid_reason() const;
  // C = A * B of one matrix: what every template computes.
  bool plain() const;

  // The stored extents of one entry's A and B (rows x columns, the leading dimension apart), and
  // the elements one entry of each spans: (rows - 1) * ld + columns.
  std::int64_t a_rows() const { return op_a == Op::n ? shape.m : shape.k; }
  std::int64_t a_columns() const { return op_a == Op::n ? shape.k : shape.m; }
  std::int64_t b_rows() const { return op_b == Op::n ? shape.k : shape.n; }
  std::int64_t b_columns() const { return op_b == Op::n ? shape.n : shape.k; }
  std::int64_t a_span() const { return (a_rows() - 1) * lda + a_columns(); }
  std::int64_t b_span() const { return (b_rows() - 1) * ldb + b_columns(); }
  std::int64_t c_span() const { return (shape.m - 1) * ldc + shape.n; }
  // The elements each operand spans over the whole batch.
  std::int64_t a_elements() const { return (batch - 1) * stride_a + a_span(); }
  std::int64_t b_elements() const { return (batch - 1) * stride_b + b_span(); }
  std::int64_t c_elements() const { return (batch - 1) * stride_c + c_span(); }

  // "MxNxK lda=.. ldb=.. ldc=..", followed by what differs from the plain problem: " op=tn
  // alpha=2 beta=0.5 batch=3 stride_a=.. stride_b=.. stride_c=.. epilogue=bias_relu".
  std::string to_string() const;
  // " op=tn alpha=2 ...": the part of to_string after the strides (empty for a plain problem).
  std::string contract_text() const;
  // Sets one item of contract_text ("op=tn", "alpha=2", "batch=3", "epilogue=bias"); false for a
  // key that is not one of them; throws std::invalid_argument for a value it cannot read.
  bool parse_contract_item(std::string_view key, std::string_view value);
  friend bool operator==(const GemmProblem&, const GemmProblem&) = default;
};

}  // namespace tiletune

#include "fuzz/gemm_oracle.h"

#include <bit>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "fuzz/poison.h"
#include "tuner/core/error_bound.h"

namespace tiletune {
namespace {

// Multiply-adds from which a reference is worth spreading over threads.
constexpr double kParallelJudgeWork = 1 << 22;

// The bound's factor on sum |a||b|: none for small integers, whose sums are exact.
double bound_factor(InputKind kind, Precision precision, std::int64_t k_size) {
  return kind == InputKind::small_integers ? 0.0 : relative_error_bound(precision, k_size);
}

// Where in a guarded buffer an index falls, for the message.
std::string place(const GuardedMatrix& m, std::size_t index) {
  if (index < m.guard) return "the guard before it";
  const std::size_t offset = index - m.guard;
  if (offset >= std::size_t(m.rows) * std::size_t(m.ld)) return "the guard after it";
  if (!m.in_entry(std::int64_t(offset / m.ld))) {
    return fmt::format("the gap between two entries of the batch, row {}", offset / m.ld);
  }
  return fmt::format("padding at row {} column {} (width {}, leading dimension {})",
                     offset / m.ld, offset % m.ld, m.cols, m.ld);
}

bool inside_region(const GuardedMatrix& m, std::size_t index) {
  if (index < m.guard) return false;
  const std::size_t offset = index - m.guard;
  return offset < std::size_t(m.rows) * std::size_t(m.ld) && std::int64_t(offset % m.ld) < m.cols &&
         m.in_entry(std::int64_t(offset / m.ld));
}

std::optional<Finding> first_change(const GuardedMatrix& before, const GuardedMatrix& after,
                                    const char* name, bool skip_region) {
  for (std::size_t i = 0; i < before.storage.size(); ++i) {
    if (skip_region && inside_region(before, i)) continue;
    if (std::bit_cast<std::uint32_t>(before.storage[i]) !=
        std::bit_cast<std::uint32_t>(after.storage[i])) {
      Finding finding;
      finding.what = skip_region ? fmt::format("write outside C: {}", place(before, i))
                                 : fmt::format("input {} overwritten at {}", name,
                                               inside_region(before, i) ? "an element"
                                                                        : place(before, i));
      finding.got = after.storage[i];
      return finding;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string Finding::to_string() const {
  if (row < 0) return what;
  std::string text = fmt::format("{} at C[{}][{}]: got {}, expected {}", what, row, col, got, expected);
  if (bound > 0) text += fmt::format(" (allowed error {:.3g})", bound);
  if (wrong_elements > 1) text += fmt::format("; {} elements wrong in all", wrong_elements);
  return text;
}

namespace {

// One element from A's row and B's column, both contiguous: the sum in double and its bound.
// The sum runs in kLanes interleaved partial sums, so that the additions do not wait on each other
// (and vectorize): the reference is the fuzz's main cost. The order changes nothing that matters:
// small-integer sums are exact in double in any order, and for reals double's rounding is far below
// the smallest bound (fp32's). Where the CPU has AVX2 a clone of it built for AVX2 runs, chosen at
// load time (about four times the speed of the baseline x86-64 build; the GPU hosts have it, CI
// may not).
constexpr std::int64_t kLanes = 8;

__attribute__((target_clones("avx2", "default")))
ReferenceElement dot(const float* a_row, const float* b_column, std::int64_t k_size,
                     double bound_factor) {
  double sums[kLanes] = {}, magnitudes[kLanes] = {};
  std::int64_t k = 0;
  for (; k + kLanes <= k_size; k += kLanes) {
    for (std::int64_t lane = 0; lane < kLanes; ++lane) {
      const double product = double(a_row[k + lane]) * double(b_column[k + lane]);
      sums[lane] += product;
      magnitudes[lane] += std::fabs(product);
    }
  }
  for (; k < k_size; ++k) {
    const double product = double(a_row[k]) * double(b_column[k]);
    sums[0] += product;
    magnitudes[0] += std::fabs(product);
  }
  double sum = 0, magnitude = 0;
  for (std::int64_t lane = 0; lane < kLanes; ++lane) {
    sum += sums[lane];
    magnitude += magnitudes[lane];
  }
  return {sum, bound_factor * magnitude};
}

// B's columns as contiguous rows: the reference then streams both operands.
std::vector<float> columns_of(const GuardedMatrix& b) {
  std::vector<float> columns(std::size_t(b.rows * b.cols));
  for (std::int64_t k = 0; k < b.rows; ++k) {
    for (std::int64_t c = 0; c < b.cols; ++c) columns[std::size_t(c * b.rows + k)] = b.at(k, c);
  }
  return columns;
}

}  // namespace

ReferenceElement reference_element(const GemmOperands& inputs, InputKind kind, Precision precision,
                                   std::int64_t row, std::int64_t col) {
  std::vector<float> column(std::size_t(inputs.b.rows));
  for (std::int64_t k = 0; k < inputs.b.rows; ++k) column[std::size_t(k)] = inputs.b.at(k, col);
  return dot(inputs.a.data() + row * inputs.a.ld, column.data(), inputs.a.cols,
             bound_factor(kind, precision, inputs.a.cols));
}

namespace {

std::atomic<unsigned> reference_threads{0};  // 0: the cores

// How many bands of rows a reference of `multiply_adds` is spread over: one a thread once it is
// large (tiles of 256 and their remainders), else one, on the calling thread.
std::int64_t bands_for(std::int64_t rows, double multiply_adds) {
  if (multiply_adds < kParallelJudgeWork) return 1;
  const unsigned set = reference_threads.load();
  const std::int64_t threads = set > 0 ? set : std::thread::hardware_concurrency();
  return std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(rows, 1));
}

// Runs run_rows(begin, end, band) for each of `bands` bands of `rows` rows, one thread a band.
void in_bands(std::int64_t rows, std::int64_t bands,
              const std::function<void(std::int64_t, std::int64_t, std::size_t)>& run_rows) {
  std::vector<std::jthread> threads;
  for (std::int64_t b = 1; b < bands; ++b) {
    threads.emplace_back(run_rows, rows * b / bands, rows * (b + 1) / bands, std::size_t(b));
  }
  run_rows(0, rows / bands, 0);
}

}  // namespace

void set_reference_threads(unsigned threads) { reference_threads = threads; }

ReferenceTable compute_reference(const GemmOperands& inputs) {
  ReferenceTable table;
  table.rows = inputs.a.rows;
  table.cols = inputs.b.cols;
  table.depth = inputs.a.cols;
  table.value.resize(std::size_t(table.rows * table.cols));
  table.magnitude.resize(table.value.size());
  const std::vector<float> b_columns = columns_of(inputs.b);
  const double work = double(table.rows) * double(table.cols) * double(table.depth);
  const auto fill_rows = [&](std::int64_t begin, std::int64_t end, std::size_t) {
    for (std::int64_t r = begin; r < end; ++r) {
      for (std::int64_t c = 0; c < table.cols; ++c) {
        const ReferenceElement e = dot(inputs.a.data() + r * inputs.a.ld,
                                       b_columns.data() + c * table.depth, table.depth, 1.0);
        table.value[std::size_t(r * table.cols + c)] = e.value;
        table.magnitude[std::size_t(r * table.cols + c)] = e.bound;
      }
    }
  };
  in_bands(table.rows, bands_for(table.rows, work), fill_rows);
  return table;
}

namespace {

// The whole BLAS contract (gemm_shape.h), element by element: act(alpha * op(A) op(B) + beta * C0
// + bias), in double, against each entry of the batch. The bound adds to the dot product's (times
// |alpha|, and where alpha is no unit the fp32 bound of a sum of K terms: a split-K kernel scales
// each slice's partial sum and adds the slices in float) a few roundings of each float operation
// after it; none where every one is exact (small integers, alpha and beta in {-1, 0, 1}, no GELU):
// such a case is compared bit for bit.
std::optional<Finding> judge_contract(const GemmCase& gemm_case, Precision precision,
                                      const GemmOperands& before, const GemmOperands& after) {
  const GemmProblem& p = gemm_case.problem;
  const std::int64_t k_size = p.shape.k;
  const double factor = bound_factor(gemm_case.inputs, precision, k_size);
  const auto unit = [](float x) { return x == 0 || x == 1 || x == -1; };
  const int activation = int(p.epilogue) >> 1;  // 1: ReLU, 2: GELU (TT_EPILOGUE_*)
  const bool exact = gemm_case.inputs == InputKind::small_integers && unit(p.alpha) &&
                     unit(p.beta) && activation != 2;
  constexpr double u = 0x1p-24;
  // alpha other than 1, 0 or -1 rounds each product it scales; a kernel that splits K scales each
  // slice's partial sum and adds the slices in float: at most K of them.
  const double scale_factor = unit(p.alpha) ? 0.0 : relative_error_bound(Precision::fp32, k_size);
  std::optional<Finding> first;
  std::int64_t wrong = 0;
  // One entry's op(A) as rows and op(B) as columns, contiguous: the reference then runs on dot.
  std::vector<float> a_rows(std::size_t(p.shape.m * k_size)), b_columns(std::size_t(p.shape.n * k_size));
  for (std::int64_t e = 0; e < p.batch; ++e) {
    const std::int64_t a_entry = before.a.entry_stride_rows == 0 ? 0 : e;
    const std::int64_t b_entry = before.b.entry_stride_rows == 0 ? 0 : e;
    for (std::int64_t r = 0; r < p.shape.m; ++r) {
      for (std::int64_t k = 0; k < k_size; ++k) {
        a_rows[std::size_t(r * k_size + k)] =
            p.op_a == Op::n ? before.a.at(a_entry, r, k) : before.a.at(a_entry, k, r);
      }
    }
    for (std::int64_t c = 0; c < p.shape.n; ++c) {
      for (std::int64_t k = 0; k < k_size; ++k) {
        b_columns[std::size_t(c * k_size + k)] =
            p.op_b == Op::n ? before.b.at(b_entry, k, c) : before.b.at(b_entry, c, k);
      }
    }
    for (std::int64_t r = 0; r < p.shape.m; ++r) {
      for (std::int64_t c = 0; c < p.shape.n; ++c) {
        const ReferenceElement dot_product =
            dot(a_rows.data() + r * k_size, b_columns.data() + c * k_size, k_size, 1.0);
        const double sum = dot_product.value, magnitude = dot_product.bound;
        const double scaled = double(p.alpha) * sum;
        const double prior = p.beta != 0 ? double(p.beta) * before.c.at(e, r, c) : 0.0;
        const double bias = adds_bias(p.epilogue) ? double(before.bias.at(0, c)) : 0.0;
        double value = scaled + prior + bias;
        double bound = exact ? 0.0
                             : std::fabs(p.alpha) * (factor + scale_factor) * magnitude +
                                   3 * u * (std::fabs(scaled) + std::fabs(prior) + std::fabs(bias));
        const double x = value;
        value = activate(p.epilogue, x);
        if (activation == 2) {
          // GELU's slope is at most 1.13; the kernels' exp2f and division (gemm_contract.h) add a few
          // units in the last place.
          bound = 1.2 * bound + 8 * u * (std::fabs(x) + std::fabs(value));
        }
        const float got = after.c.at(e, r, c);
        const char* what = nullptr;
        if (is_poison(got)) what = "element never written, or computed from poisoned memory";
        else if (std::isnan(got)) what = "NaN in C";
        else if (std::isinf(got)) what = "Inf in C";
        else if (std::fabs(double(got) - value) > bound) what = "wrong element";
        if (what == nullptr) continue;
        ++wrong;
        if (!first) {
          first = Finding{p.batch > 1 ? fmt::format("{} (batch entry {})", what, e) : std::string(what),
                          r, c, got, value, bound, 0};
        }
      }
    }
  }
  if (first) first->wrong_elements = wrong;
  return first;
}

}  // namespace

std::optional<Finding> judge_launch(const GemmCase& gemm_case, Precision precision,
                                    const GemmOperands& before, const GemmOperands& after,
                                    const ReferenceTable* reference) {
  if (!gemm_case.problem.plain()) {
    if (auto finding = first_change(before.c, after.c, "C", /*skip_region=*/true)) return finding;
    if (auto finding = first_change(before.a, after.a, "A", false)) return finding;
    if (auto finding = first_change(before.b, after.b, "B", false)) return finding;
    if (auto finding = first_change(before.bias, after.bias, "bias", false)) return finding;
    return judge_contract(gemm_case, precision, before, after);
  }
  if (reference && (reference->rows != after.c.rows || reference->cols != after.c.cols ||
                    reference->depth != before.a.cols)) {
    throw std::invalid_argument(fmt::format("a reference of {}x{}x{} for a launch of {}x{}x{}",
                                            reference->rows, reference->cols, reference->depth,
                                            after.c.rows, after.c.cols, before.a.cols));
  }
  if (auto finding = first_change(before.c, after.c, "C", /*skip_region=*/true)) return finding;
  if (auto finding = first_change(before.a, after.a, "A", false)) return finding;
  if (auto finding = first_change(before.b, after.b, "B", false)) return finding;

  // Without a reference given it costs M x N x K multiply-adds: large cases are judged on all
  // cores, in bands of rows; the first finding stays row-major.
  struct Band {
    std::optional<Finding> first;
    std::int64_t wrong = 0;
  };
  const std::int64_t k_size = before.a.cols;
  const double factor = bound_factor(gemm_case.inputs, precision, k_size);
  const std::vector<float> b_columns = reference ? std::vector<float>() : columns_of(before.b);
  const auto reference_at = [&](std::int64_t r, std::int64_t c) {
    if (!reference) {
      return dot(before.a.data() + r * before.a.ld, b_columns.data() + c * k_size, k_size, factor);
    }
    const std::size_t i = std::size_t(r * reference->cols + c);
    return ReferenceElement{reference->value[i], factor * reference->magnitude[i]};
  };
  const std::int64_t rows = after.c.rows;
  const std::int64_t bands =
      bands_for(rows, double(rows) * double(after.c.cols) * double(reference ? 1 : k_size));
  std::vector<Band> results(static_cast<std::size_t>(bands));
  in_bands(rows, bands, [&](std::int64_t begin, std::int64_t end, std::size_t b) {
    Band& band = results[b];
    for (std::int64_t r = begin; r < end; ++r) {
      for (std::int64_t c = 0; c < after.c.cols; ++c) {
        const float got = after.c.at(r, c);
        const ReferenceElement ref = reference_at(r, c);
        const char* what = nullptr;
        // On the CPU a NaN keeps its payload through arithmetic, so poison in C's region is
        // either never written or computed from poisoned padding or guards.
        if (is_poison(got)) what = "element never written, or computed from poisoned memory";
        else if (std::isnan(got)) what = "NaN in C";
        else if (std::isinf(got)) what = "Inf in C";
        else if (std::fabs(double(got) - ref.value) > ref.bound) what = "wrong element";
        if (what == nullptr) continue;
        ++band.wrong;
        if (!band.first) band.first = Finding{what, r, c, got, ref.value, ref.bound, 0};
      }
    }
  });
  std::optional<Finding> first;
  std::int64_t wrong = 0;
  for (const Band& band : results) {
    if (!first) first = band.first;
    wrong += band.wrong;
  }
  if (first) first->wrong_elements = wrong;
  return first;
}

}  // namespace tiletune

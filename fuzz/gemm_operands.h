// The host side of one launch: A, B and C as strided matrices inside guard bands.
//
// Every buffer is laid out as [guard | rows x ld | guard] (guard_elements(ld) wide). The guards and the padding columns
// between a matrix's width and its leading dimension are poisoned with NaN before the launch:
// a kernel that reads them gets NaN into its result, and one that writes them is caught by
// comparing them afterwards. C's own region is poisoned too, so an element left unwritten stays
// NaN and fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/gemm_case.h"

namespace tiletune {

// A kernel that forgets a mask overruns its matrix by less than one block tile: at most
// kMaxTileReach rows and columns. Guards that wide turn such a write into a finding instead of a
// write into whatever lies beside the buffer (on the CPU backend: the fuzzer's own heap).
inline constexpr std::int64_t kMaxTileReach = 256;
inline constexpr std::size_t kMinGuardElements = 64;
std::size_t guard_elements(std::int64_t ld);  // max(kMinGuardElements, kMaxTileReach * (ld + 1))

// A matrix, or a batch of them: `entries` matrices of entry_rows x cols, entry_stride_rows rows
// apart (0: one matrix serves every entry), in one buffer of `rows` rows. Rows between entries are
// a gap, poisoned like the padding.
struct GuardedMatrix {
  std::int64_t rows = 0, cols = 0, ld = 0;
  std::int64_t entry_rows = 0, entry_stride_rows = 0;
  std::size_t guard = 0;       // elements of each guard band
  std::vector<float> storage;  // guard + rows * ld + guard

  GuardedMatrix() = default;
  GuardedMatrix(std::int64_t rows, std::int64_t cols, std::int64_t ld);  // all NaN
  // `entries` of entry_rows x cols, entry_stride_rows apart (0: one matrix), all NaN.
  GuardedMatrix(std::int64_t entries, std::int64_t entry_rows, std::int64_t entry_stride_rows,
                std::int64_t cols, std::int64_t ld);

  float* data() { return storage.data() + guard; }  // element (0, 0)
  const float* data() const { return storage.data() + guard; }
  float& at(std::int64_t r, std::int64_t c) { return data()[r * ld + c]; }
  float at(std::int64_t r, std::int64_t c) const { return data()[r * ld + c]; }
  // Element (r, c) of batch entry `entry`.
  float at(std::int64_t entry, std::int64_t r, std::int64_t c) const {
    return data()[(entry * entry_stride_rows + r) * ld + c];
  }
  float& at(std::int64_t entry, std::int64_t r, std::int64_t c) {
    return data()[(entry * entry_stride_rows + r) * ld + c];
  }
  // Whether buffer row r belongs to an entry (else it is a gap between two).
  bool in_entry(std::int64_t r) const {
    return entry_stride_rows == 0 ? r < entry_rows : r % entry_stride_rows < entry_rows;
  }
};

struct GemmOperands {
  GuardedMatrix a, b, c;
  GuardedMatrix bias;  // 1 x N where the epilogue adds a bias, else empty
};

// A and B filled from the case's data seed (padding, gaps and guards NaN); C entirely NaN where
// beta is 0 (so an element never written, or one read although beta is 0, shows), else filled too;
// the bias filled where the epilogue reads one. A batched problem's strides are whole rows apart
// (stride = ld * entry_stride_rows: what the case generator draws); throws std::invalid_argument
// otherwise.
GemmOperands make_operands(const GemmCase& gemm_case);

}  // namespace tiletune

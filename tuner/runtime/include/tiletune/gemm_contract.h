// The BLAS contract's choices beyond C = A * B, part of tiletune's public API (tiletune.h) and
// shared with its internals: op(A) and op(B), and the epilogue applied to C.
#pragma once

#include <cstdint>

namespace tiletune {

// op(X): X as stored (n), or its transpose (t).
enum class Op : std::uint8_t { n, t };

// What is applied to each element of C after alpha * op(A) * op(B) + beta * C: a bias (a vector of
// N floats added to every row), an activation (ReLU, or GELU in its tanh form), or both, bias first.
enum class Epilogue : std::uint8_t { none, bias, relu, bias_relu, gelu, bias_gelu };

}  // namespace tiletune

// The inputs A and B that a configuration is verified and timed on at the full tuning shape.
//
// Each element is a function of the tune's data seed, the matrix and the element's index alone
// (SplitMix64 at that position), never of the order it is drawn in: every lane of a tune, on
// whichever device and with however many threads, works on the same matrices, and they are drawn
// on all cores at once (a sequential generator took most of a second per 4096x4096 pair, in every
// lane, for every shape).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tiletune {

// bias: an epilogue's N floats, drawn as the matrices are.
enum class FullShapeMatrix { a, b, bias };

// One element: in (-1, 1), never zero, exact in float.
float full_shape_value(FullShapeMatrix matrix, std::uint64_t seed, std::size_t index);

// Elements 0 .. elements - 1 of the matrix, on `threads` threads (0: the cores, at most 16).
std::vector<float> full_shape_matrix(FullShapeMatrix matrix, std::uint64_t seed,
                                     std::size_t elements, unsigned threads = 0);

}  // namespace tiletune

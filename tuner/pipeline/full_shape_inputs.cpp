#include "tuner/pipeline/full_shape_inputs.h"

#include <algorithm>
#include <thread>

#include "tuner/core/splitmix64.h"

namespace tiletune {
namespace {

// The start of the matrix's SplitMix64 sequence: A, B and the bias of one seed draw from unrelated
// streams.
std::uint64_t stream(FullShapeMatrix matrix, std::uint64_t seed) {
  const std::uint64_t salt = matrix == FullShapeMatrix::a ? 0x0a : matrix == FullShapeMatrix::b ? 0x0b : 0x0c;
  return splitmix64_mix(splitmix64_mix(seed) ^ salt);
}

// 24 random bits j as (2j + 1) / 2^24 - 1: odd over a power of two, so never zero and exact.
float value_at(std::uint64_t start, std::size_t index) {
  // The sequence's element index, reached directly: state start + (index + 1) gamma.
  const std::uint64_t bits =
      splitmix64_mix(start + (std::uint64_t(index) + 1) * kSplitMix64Gamma) >> 40;
  return float(double(2 * bits + 1) / double(1 << 24) - 1.0);
}

}  // namespace

float full_shape_value(FullShapeMatrix matrix, std::uint64_t seed, std::size_t index) {
  return value_at(stream(matrix, seed), index);
}

std::vector<float> full_shape_matrix(FullShapeMatrix matrix, std::uint64_t seed,
                                     std::size_t elements, unsigned threads) {
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  // Below a million elements a thread costs more than it saves.
  threads = unsigned(std::clamp<std::size_t>(elements >> 20, 1, threads));
  std::vector<float> values(elements);
  const std::uint64_t start = stream(matrix, seed);
  const auto fill = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) values[i] = value_at(start, i);
  };
  {
    std::vector<std::jthread> helpers;
    for (unsigned t = 1; t < threads; ++t) {
      helpers.emplace_back(fill, elements * t / threads, elements * (t + 1) / threads);
    }
    fill(0, elements / threads);
  }
  return values;
}

}  // namespace tiletune

// The standard SGEMM suite of `tiletune bench` and library_bench: square sizes, sizes just off a
// power of two, and the skinny shapes a volume-keyed choice confuses.
#pragma once

namespace tiletune {

inline constexpr const char* kBenchSuite[] = {
    "1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "1000x1000x1000",
    "4095x4097x4093", "3001x2999x1537", "8191x8191x8191", "64x4096x4096",   "4096x64x4096",
    "4096x4096x64",   "127x129x8191",   "17x33x65"};

}  // namespace tiletune

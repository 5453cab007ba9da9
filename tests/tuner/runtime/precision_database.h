// A tiletune database of one template of each kind of arithmetic the library tells apart: naive
// (kernels_src/naive.cu, fp32) and tf32_naive (tests/fixtures/kernels/tf32_naive.cu, tf32, which
// the CPU backend runs), both recorded on an H100 at 256x256x256, each registered with its
// declared precision as a tune registers it.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "db/result_store.h"
#include "tuner/core/kernel_template.h"

namespace tiletune::testing_support {

inline const std::filesystem::path kTf32NaivePath =
    std::filesystem::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels" / "tf32_naive.cu";
inline const std::filesystem::path kNaivePath =
    std::filesystem::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu";
inline const std::string kPrecisionGpu = "NVIDIA H100 80GB HBM3";
inline const GemmShape kPrecisionShape{256, 256, 256};

inline void write_precision_database(const std::filesystem::path& path) {
  ResultStore store(path);
  GpuRecord gpu;
  gpu.name = kPrecisionGpu;
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  gpu.memory_bytes = 80ULL << 30;
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  const std::int64_t gpu_id = store.register_gpu(gpu);
  for (const std::filesystem::path& file : {kNaivePath, kTf32NaivePath}) {
    std::ifstream in(file, std::ios::binary);
    const std::string source{std::istreambuf_iterator<char>(in), {}};
    const KernelTemplate tmpl = parse_template(source, file.string());
    // The text as parsed (its library includes put in): what a tune records and the hash is of.
    store.register_template({tmpl.name, tmpl.source_hash, file.string(), tmpl.source, tmpl.precision});
    ResultRecord r;
    r.template_name = tmpl.name;
    r.template_hash = tmpl.source_hash;
    r.config = "BLOCK_X=16,BLOCK_Y=4";
    r.shape = kPrecisionShape;
    r.median_ms = r.min_ms = r.max_ms = 1.0;
    r.runs = 20;
    r.tflops = kPrecisionShape.flops() / 1e-3 / 1e12;
    store.record_result(gpu_id, gpu, r);
  }
}

}  // namespace tiletune::testing_support

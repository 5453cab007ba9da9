// A tiletune database for the export and bundle tests: the shipped templates tiled and naive
// registered from kernels_src/, plus naive_aligned (naive with a requirement on lda for wide
// blocks, so that some of its configurations do not fit every problem), results recorded on an
// H100 (sm_90) and an A100 (sm_80) at two shapes.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "db/result_store.h"
#include "tuner/core/kernel_template.h"

namespace tiletune::testing_support {

inline const std::filesystem::path kShippedTemplates =
    std::filesystem::path(TILETUNE_SOURCE_DIR) / "kernels_src";
inline const std::string kH100 = "NVIDIA H100 80GB HBM3";
inline const std::string kA100 = "NVIDIA A100-SXM4-80GB";
inline const GemmShape kSmallShape{256, 256, 256};
inline const GemmShape kLargeShape{1024, 512, 2048};

inline std::string shipped_source(const std::string& file) {
  std::ifstream in(kShippedTemplates / file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// naive, renamed, with BLOCK_X >= 32 requiring lda % 4 == 0.
inline std::string naive_aligned_source() {
  std::string source = shipped_source("naive.cu");
  const std::string name = "// tiletune: name naive";
  source.replace(source.find(name), name.size(),
                 "// tiletune: name naive_aligned\n// tiletune: require BLOCK_X < 32 || lda % 4 == 0");
  return source;
}

inline GpuRecord test_gpu(const std::string& name, int cc_major, int cc_minor) {
  GpuRecord gpu;
  gpu.name = name;
  gpu.cc_major = cc_major;
  gpu.cc_minor = cc_minor;
  gpu.sm_count = cc_major == 9 ? 132 : 108;
  gpu.memory_bytes = 80ULL << 30;
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  return gpu;
}

inline void register_source(ResultStore& store, const std::string& source, const std::string& path) {
  const KernelTemplate tmpl = parse_template(source, path);
  store.register_template({tmpl.name, tmpl.source_hash, path, tmpl.source});  // as parsed: includes put in
}

inline void record(ResultStore& store, const GpuRecord& gpu, const std::string& template_source,
                   const std::string& config, GemmShape shape, double median_ms,
                   ResultStatus status = ResultStatus::ok) {
  const KernelTemplate tmpl = parse_template(template_source, "test");
  ResultRecord r;
  r.template_name = tmpl.name;
  r.template_hash = tmpl.source_hash;
  r.config = config;
  r.shape = shape;
  r.status = status;
  r.median_ms = median_ms;
  r.min_ms = median_ms * 0.9;
  r.max_ms = median_ms * 1.1;
  r.runs = 20;
  r.tflops = shape.flops() / (median_ms * 1e-3) / 1e12;
  r.registers = 32;
  r.static_shared_bytes = 1024;
  store.record_result(store.register_gpu(gpu), gpu, r);
}

// tiled: 5 configurations at each shape on the H100, 2 at the small shape on the A100 (and one
// compile error, never exported). naive_aligned on the H100 at the small shape: its two fastest
// need lda % 4 == 0, the third fits every problem.
inline void write_export_database(const std::filesystem::path& path) {
  ResultStore store(path);
  const std::string tiled = shipped_source("tiled.cu"), aligned = naive_aligned_source();
  register_source(store, tiled, (kShippedTemplates / "tiled.cu").string());
  register_source(store, aligned, "naive_aligned.cu");
  const GpuRecord h100 = test_gpu(kH100, 9, 0), a100 = test_gpu(kA100, 8, 0);
  const char* tiled_configs[] = {"TILE=8,PAD=0,SWIZZLE=0", "TILE=16,PAD=0,SWIZZLE=0",
                                 "TILE=16,PAD=1,SWIZZLE=0", "TILE=32,PAD=0,SWIZZLE=1",
                                 "TILE=32,PAD=1,SWIZZLE=0"};
  for (int i = 0; i < 5; ++i) {
    record(store, h100, tiled, tiled_configs[i], kSmallShape, 1.0 + i);         // TILE=8 fastest
    record(store, h100, tiled, tiled_configs[i], kLargeShape, 10.0 - i);        // TILE=32,PAD=1 fastest
  }
  record(store, a100, tiled, "TILE=16,PAD=0,SWIZZLE=0", kSmallShape, 2.0);
  record(store, a100, tiled, "TILE=8,PAD=0,SWIZZLE=0", kSmallShape, 3.0);
  record(store, a100, tiled, "TILE=32,PAD=0,SWIZZLE=0", kSmallShape, 0.1, ResultStatus::compile_error);
  record(store, h100, aligned, "BLOCK_X=64,BLOCK_Y=4", kSmallShape, 1.0);
  record(store, h100, aligned, "BLOCK_X=32,BLOCK_Y=8", kSmallShape, 1.5);
  record(store, h100, aligned, "BLOCK_X=16,BLOCK_Y=8", kSmallShape, 2.0);
  record(store, h100, aligned, "BLOCK_X=8,BLOCK_Y=16", kSmallShape, 3.0);
}

}  // namespace tiletune::testing_support

// fuzz_host_cost: what a fuzz case costs the host, apart from running the kernel.
//
// Tuning fuzzes every configuration (30 cases each), and on a GPU most of that time is host work:
// drawing the case, laying out the guarded and poisoned operands, copying them, and judging the
// result against the double-precision reference. This program draws cases as a GPU fuzz of one
// configuration does (its tile sizes as moduli, crowded cases included) and times each of those
// steps, so that a change to any of them can be measured on any machine, without a GPU.
//
//   build/tools/fuzz_host_cost [--config BM=128,BN=64,...] [--cases 300] [--seed 1]
//
// C is left as zeros (no kernel runs): the judge computes every reference element either way.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <rapidcheck.h>

#include "fuzz/case_generator.h"
#include "fuzz/gemm_operands.h"
#include "fuzz/gemm_oracle.h"
#include "tools/cli/number_checks.h"

namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// "A=1,B=2" as a configuration (the moduli only need the values).
tiletune::Configuration parse_values(const std::string& text) {
  tiletune::Configuration config;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string pair = text.substr(begin, end - begin);
    const std::size_t equals = pair.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("not NAME=VALUE: " + pair);
    config.values.emplace_back(pair.substr(0, equals), std::stoll(pair.substr(equals + 1)));
    begin = end + 1;
  }
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_text = "BM=128,BN=64,BK=16,TM=8,TN=8,STAGES=2,SWIZZLE=0,SPLIT_K=1";
  int cases = 300;
  int seed = 1;
  CLI::App app("what a fuzz case costs the host, apart from running the kernel");
  app.add_option("--config", config_text, "the configuration whose tile sizes shape the cases")
      ->capture_default_str();
  app.add_option("--cases", cases, "cases to draw")->capture_default_str()->check(tiletune::cli::kPositive);
  app.add_option("--seed", seed, "seed of the cases")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  tiletune::Configuration config;
  try {
    config = parse_values(config_text);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fuzz_host_cost: --config: {}\n", e.what());
    return 2;
  }
  tiletune::CaseLimits limits;
  limits.crowded_cases = true;  // as on a GPU
  const auto generator = tiletune::gen_gemm_case(tiletune::remainder_moduli(config), limits);

  double draw_ms = 0, operands_ms = 0, copy_ms = 0, judge_ms = 0, multiply_adds = 0;
  for (int i = 0; i < cases; ++i) {
    Clock::time_point start = Clock::now();
    const rc::Random random(std::uint64_t(seed) * 1000003 + std::uint64_t(i));
    const tiletune::GemmCase gemm_case = generator(random, 100).value();
    draw_ms += milliseconds_since(start);
    start = Clock::now();
    const tiletune::GemmOperands before = tiletune::make_operands(gemm_case);
    operands_ms += milliseconds_since(start);
    start = Clock::now();
    tiletune::GemmOperands after = before;
    copy_ms += milliseconds_since(start);
    for (std::int64_t r = 0; r < after.c.rows; ++r) {
      for (std::int64_t c = 0; c < after.c.cols; ++c) after.c.at(r, c) = 0;
    }
    start = Clock::now();
    (void)tiletune::judge_launch(gemm_case, tiletune::Precision::fp32, before, after);
    judge_ms += milliseconds_since(start);
    const tiletune::GemmShape& s = gemm_case.problem.shape;
    multiply_adds += double(s.m) * double(s.n) * double(s.k);
  }
  fmt::print("{} cases of {} (crowded cases included), mean M*N*K {:.2f} million\n", cases,
             config_text, multiply_adds / cases / 1e6);
  fmt::print("per case: draw {:.3f} ms, operands {:.3f} ms, copy {:.3f} ms, judge {:.3f} ms; "
             "total {:.3f} ms\n",
             draw_ms / cases, operands_ms / cases, copy_ms / cases, judge_ms / cases,
             (draw_ms + operands_ms + copy_ms + judge_ms) / cases);
  return 0;
}

// library_bench: what the runtime library costs an application, on the GPU host.
//
//   build/tools/library_bench --db DB [--kernel warp_tiled] [--bundle DIR] [--shape MxNxK ...]
//                             [--out FILE.json]
//
// First-call cost: from an empty cubin cache (NVRTC compiles), from the cache that call filled,
// from a bundle, and the second call. Per-call overhead once warm: gemm.run against the same cubin
// launched with the driver API, host time around the enqueues only. The suite: the library's run
// and bench's direct launch of the database's best configuration, each verified at the full shape,
// timed with cuBLAS SGEMM in the same run as `tiletune bench` times them (its ratios should match).
// The first-call cost is measured first, before anything else in the process compiles.
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <tiletune/tiletune.h>

#include "db/result_store.h"
#include "tools/bench/cublas_sgemm.h"
#include "tools/bench/library_bench_options.h"
#include "tools/bench/library_bench_report.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/backend/gpu/kernel_timer.h"
#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/pipeline/shape_verifier.h"

namespace tiletune {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const float* host_view(CUdeviceptr pointer) { return reinterpret_cast<const float*>(pointer); }
float* host_view_mutable(CUdeviceptr pointer) { return reinterpret_cast<float*>(pointer); }

Problem to_problem(const GemmProblem& p) {
  return Problem{p.shape.m, p.shape.n, p.shape.k, p.lda, p.ldb, p.ldc};
}

void synchronize() { check_cuda(cuda_driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize"); }

// The version of a template the database keeps, by its source hash.
KernelTemplate stored_template(const ResultStore& store, const std::string& name,
                               const std::string& hash) {
  for (const TemplateRecord& t : store.templates()) {
    if (t.name == name && t.source_hash == hash) {
      return parse_template(t.source, t.path.empty() ? t.name : t.path);
    }
  }
  throw std::runtime_error(fmt::format("the database lacks the source of {} {}", name, hash));
}

// A configuration launched as an application would without the library: NVRTC, the cubin loaded
// with cuModuleLoadData, and the launch the tuner enqueues (enqueue_gemm_launch).
class DirectLaunch {
 public:
  DirectLaunch(const KernelTemplate& tmpl, const std::string& config_text, const GemmProblem& problem,
               const DeviceProperties& device)
      : problem_(problem), form_(entry_form(tmpl)) {
    const CudaDriver& cu = cuda_driver();
    const Configuration config = tmpl.parse_configuration(config_text);
    tmpl.check_requirements(config, problem);
    const Configuration build = tmpl.build_configuration(config, problem);
    geometry_ = tmpl.launch_geometry(build, problem.shape, device.sm_count);
    const CompiledKernelImage image = compile_configuration(tmpl, build, device.arch());
    check_cuda(cu.cuModuleLoadData(&module_, image.cubin.data()), "cuModuleLoadData");
    check_cuda(cu.cuModuleGetFunction(&function_, module_, tmpl.entry.c_str()), "cuModuleGetFunction");
    if (geometry_.dynamic_shared_bytes > 48 * 1024) {
      check_cuda(cu.cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       int(geometry_.dynamic_shared_bytes)),
                 "cuFuncSetAttribute");
    }
  }
  ~DirectLaunch() { cuda_driver().cuModuleUnload(module_); }
  DirectLaunch(const DirectLaunch&) = delete;
  DirectLaunch& operator=(const DirectLaunch&) = delete;

  void launch(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream) const {
    enqueue_gemm_launch(function_, geometry_, a, b, c, problem_, stream, staging_, form_);
  }

 private:
  GemmProblem problem_;
  EntryForm form_;
  LaunchGeometry geometry_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  mutable StagingBuffers staging_;
};

void require_right(const std::optional<std::string>& wrong, const std::string& what) {
  if (wrong) throw std::runtime_error(fmt::format("{} is wrong: {}", what, *wrong));
}

// A folder of its own under $TMPDIR, removed with the object.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "library_bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error(fmt::format("cannot make a temporary folder {}", pattern));
    }
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Opened {
  Library library;
  Gemm gemm;
  double ms;
};

// The kernel measured is named, so whatever precision it declares is accepted.
Options accepting_any_precision() {
  Options options;
  options.lowest_precision = Precision::tf32;
  return options;
}

// Library::open, gemm, the first run on A, B, C and its synchronisation, timed.
Opened first_call(const std::string& source, const std::string& cache_dir, const std::string& kernel,
                  const GemmProblem& problem, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  Options library_options = accepting_any_precision();
  library_options.cache_dir = cache_dir;
  const Clock::time_point start = Clock::now();
  Library library = Library::open(source, library_options);
  Gemm gemm = library.gemm(kernel);
  gemm.run(to_problem(problem), host_view(a), host_view(b), host_view_mutable(c));
  synchronize();
  return Opened{library, gemm, milliseconds_since(start)};
}

// The library's run of the verifier's problem, checked against its reference.
void verify_run(ShapeVerifier& verifier, const Gemm& gemm, const std::string& what) {
  const Problem problem = to_problem(verifier.problem());
  require_right(verifier.verify([&](CUstream stream) {
    gemm.run(problem, host_view(verifier.a()), host_view(verifier.b()), host_view_mutable(verifier.c()), stream);
  }, gemm.precision()), what);
}

// The first-call cost at the verifier's problem. The cold call comes before anything else in the
// process compiles (the verifier's reference loads NVRTC), on operands of its own; every Library's
// output is verified after its timed call.
FirstCallResult measure_first_call(const LibraryBenchOptions& options, const GpuDevice& device,
                                   std::unique_ptr<ShapeVerifier>& verifier) {
  const GemmProblem problem = GemmProblem::packed(options.overhead_shape());
  std::mt19937_64 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(std::size_t(problem.shape.m * problem.lda)), b(std::size_t(problem.shape.k * problem.ldb));
  for (float& v : a) v = uniform(random);
  for (float& v : b) v = uniform(random);
  const DeviceBuffer a_buffer = DeviceBuffer::from(a), b_buffer = DeviceBuffer::from(b);
  const DeviceBuffer c_buffer(std::size_t(problem.shape.m * problem.ldc) * sizeof(float));

  FirstCallResult result;
  const TemporaryFolder cache;
  const Opened cold = first_call(options.db, cache.path(), options.kernel, problem, a_buffer.get(),
                                 b_buffer.get(), c_buffer.get());
  result.cold_ms = cold.ms;
  verifier = std::make_unique<ShapeVerifier>(device, problem, 7);
  verify_run(*verifier, cold.gemm, "the library's first call from an empty cache");

  const auto on_verifier = [&](const std::string& source, const std::string& cache_dir) {
    return first_call(source, cache_dir, options.kernel, problem, verifier->a(), verifier->b(), verifier->c());
  };
  const Opened warm = on_verifier(options.db, cache.path());
  result.warm_disk_ms = warm.ms;
  verify_run(*verifier, warm.gemm, "the library's first call from the filled cache");
  if (!options.bundle.empty()) {
    const TemporaryFolder empty_cache;  // a cubin from the cache would hide one missing from the bundle
    const Opened bundled = on_verifier(options.bundle, empty_cache.path());
    result.bundle_ms = bundled.ms;
    verify_run(*verifier, bundled.gemm, "the library's first call from the bundle");
  }
  const Clock::time_point start = Clock::now();
  warm.gemm.run(to_problem(problem), host_view(verifier->a()), host_view(verifier->b()),
                host_view_mutable(verifier->c()));
  synchronize();
  result.second_call_ms = milliseconds_since(start);
  return result;
}

// Host time per call of `calls` enqueues, the queue drained before and after (outside the time).
template <class Call>
double batch_us_per_call(int calls, const Call& call) {
  synchronize();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < calls; ++i) call();
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  synchronize();
  return us / calls;
}

OverheadResult measure_overhead(const LibraryBenchOptions& options, const Gemm& gemm,
                                const KernelTemplate& tmpl, const DeviceProperties& device,
                                ShapeVerifier& verifier) {
  const Problem problem = to_problem(verifier.problem());
  const Plan plan = gemm.plan(problem);
  const DirectLaunch direct(tmpl, plan.config, verifier.problem(), device);
  const auto direct_call = [&] { direct.launch(verifier.a(), verifier.b(), verifier.c(), nullptr); };
  const auto library_call = [&] {
    gemm.run(problem, host_view(verifier.a()), host_view(verifier.b()), host_view_mutable(verifier.c()));
  };
  require_right(verifier.verify([&](CUstream) { direct_call(); }, tmpl.precision),
                "the direct launch");
  require_right(verifier.verify([&](CUstream) { library_call(); }, tmpl.precision),
                "the library's run");

  OverheadResult result;
  result.shape = verifier.problem().shape;
  result.config = plan.config;
  result.batches = options.batches;
  result.calls_per_batch = options.calls_per_batch;
  batch_us_per_call(options.calls_per_batch, direct_call);  // warm-up of both paths
  batch_us_per_call(options.calls_per_batch, library_call);
  std::vector<double> direct_us, library_us;
  for (int batch = 0; batch < options.batches; ++batch) {
    // Alternating which goes first, so that neither always follows the other's drained queue.
    if (batch % 2 == 0) direct_us.push_back(batch_us_per_call(options.calls_per_batch, direct_call));
    library_us.push_back(batch_us_per_call(options.calls_per_batch, library_call));
    if (batch % 2 == 1) direct_us.push_back(batch_us_per_call(options.calls_per_batch, direct_call));
  }
  result.direct_us = median(direct_us);
  result.library_us = median(library_us);
  return result;
}

// The suite as `tiletune bench` measures it (default TimingSettings, the null stream, no L2
// flush), with the library's run verified and timed beside bench's direct launch.
void measure_suite(const LibraryBenchOptions& options, const Gemm& gemm, const ResultStore& store,
                   const GpuDevice& device, LibraryBenchReport& report) {
  const DeviceProperties& gpu = device.properties();
  const CublasSgemm cublas(gemm.precision());  // the yardstick of its precision
  const TimingSettings timing;
  for (const GemmShape& shape : options.shapes) {
    const std::optional<ResultRecord> best =
        store.best(gpu.name, shape, options.kernel, gemm.precision());
    if (!best) {
      report.unrecorded.push_back(shape);
      continue;
    }
    const GemmProblem packed = GemmProblem::packed(shape);
    const Problem problem = to_problem(packed);
    const Plan plan = gemm.plan(problem);
    const KernelTemplate tmpl = stored_template(store, best->template_name, best->template_hash);
    const Configuration config = tmpl.parse_configuration(best->config);
    tmpl.check_requirements(config, packed);
    const GpuKernel kernel(compile_configuration(tmpl, config, gpu.arch()), tmpl.entry,
                           entry_form(tmpl));
    const LaunchGeometry geometry = tmpl.launch_geometry(config, shape, gpu.sm_count);

    ShapeVerifier verifier(device, packed, 7);
    const auto direct = [&](CUstream s) {
      kernel.launch(geometry, verifier.a(), verifier.b(), verifier.c(), packed, s);
    };
    const auto library = [&](CUstream s) {
      gemm.run(problem, host_view(verifier.a()), host_view(verifier.b()), host_view_mutable(verifier.c()), s);
    };
    require_right(verifier.verify(kernel, geometry, tmpl.precision),
                  fmt::format("{} [{}]", tmpl.name, best->config));
    require_right(verifier.verify(library, tmpl.precision),
                  fmt::format("the library's run of {} [{}]", plan.template_name, plan.config));

    SuiteRow row;
    row.shape = shape;
    row.plan_config = plan.config;
    row.plan_exact = plan.exact;
    row.bench_config = best->config;
    row.direct_ms = time_launches(direct, nullptr, timing).median_ms;
    row.cublas_ms = time_launches([&](CUstream s) {
      cublas.run(packed, verifier.a(), verifier.b(), verifier.c(), s);
    }, nullptr, timing).median_ms;
    row.library_ms = time_launches(library, nullptr, timing).median_ms;
    report.suite.push_back(row);
    std::fprintf(stderr, "%s: library %.3f, direct %.3f of cuBLAS\n", shape.to_string().c_str(),
                 row.library_ratio(), row.direct_ratio());
  }
}

int run(const LibraryBenchOptions& options) {
  const GpuDevice device;  // the primary context, current: the library uses it too
  const DeviceProperties& gpu = device.properties();
  const ResultStore store(options.db, ResultStore::Access::read_only);
  LibraryBenchReport report;
  report.gpu = gpu.name;
  report.db = options.db;
  report.kernel = options.kernel;
  report.bundle = options.bundle;
  fmt::print("{} ({} SMs, {:.0f} MHz), libtiletune {}, {} from {}\n\n", gpu.name, gpu.sm_count,
             gpu.clock_khz / 1e3, version(), options.kernel, options.db);

  std::unique_ptr<ShapeVerifier> small_verifier;  // made once the cold call is measured
  report.first_call = measure_first_call(options, device, small_verifier);
  const GemmProblem& small = small_verifier->problem();
  fmt::print("{}\n", first_call_table(*report.first_call));
  std::fflush(stdout);

  const Library library = Library::open(options.db, accepting_any_precision());
  const Gemm gemm = library.gemm(options.kernel);
  const Plan small_plan = gemm.plan(to_problem(small));
  const KernelTemplate tmpl = stored_template(store, small_plan.template_name, small_plan.template_hash);
  report.overhead = measure_overhead(options, gemm, tmpl, gpu, *small_verifier);
  fmt::print("{}\n", overhead_table(*report.overhead));
  std::fflush(stdout);

  measure_suite(options, gemm, store, device, report);
  fmt::print("{}\n{}", suite_table(report), summary_table(report));
  if (!options.out.empty()) {
    std::ofstream out(options.out);
    out << report_json(report).dump(2) << '\n';
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", options.out));
  }
  return report.unrecorded.empty() ? 0 : 1;
}

}  // namespace
}  // namespace tiletune

int main(int argc, char** argv) {
  using namespace tiletune;
  const auto fail = [](const std::string& message, int code) {
    std::fprintf(stderr, "library_bench: %s\n", message.c_str());
    return code;
  };
  try {
    return run(parse_library_bench_options(argc, argv));
  } catch (const LibraryBenchHelp& help) {
    std::fputs(help.text.c_str(), stdout);
    return 0;
  } catch (const LibraryBenchUsageError& e) {
    return fail(e.what(), 2);
  } catch (const GpuUnavailable& e) {
    return fail(e.what(), 3);
  } catch (const NvrtcError& e) {
    return fail(e.what(), 3);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
}

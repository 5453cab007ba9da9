// tiletune profile [--db PATH] [--kernel NAME] [--shape MxNxK ...] [--top N | --config C ...]
//
// Reads hardware counters of recorded configurations with Nsight Compute (tuner/profiling): for
// each chosen ok configuration of this GPU (default: the fastest 3 of every recorded shape), ncu
// runs `tiletune profile-launch` (hidden), which compiles that configuration (cubin cache) and
// launches it a few times at that shape on random inputs. The median of each metric over the
// launches is recorded per configuration, GPU and shape under tiletune's counter names
// (tuner/profiling/counter_metrics.h), and printed as a table.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>

#include "db/result_store.h"
#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/backend/gpu/device_buffer.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/gpu_kernel.h"
#include "tuner/pipeline/tuning_run.h"
#include "tuner/profiling/counter_metrics.h"
#include "tuner/profiling/nsight_compute.h"

namespace tiletune::cli {
namespace {

namespace fs = std::filesystem;

struct ProfileOptions {
  std::string db = "tiletune.db";
  std::string kernel;
  std::vector<std::string> shapes;
  int top = 3;
  std::vector<std::string> configs;
  int launches = 3;
};

// What profile-launch is told: one configuration of a recorded template version at one shape.
struct LaunchOptions {
  std::string db;
  std::string kernel;
  std::string template_hash;
  std::string config;
  std::string shape;
  int launches = 3;
};

// The counters a table shows, by short name (the others are stored and in query --json).
constexpr const char* kShown[] = {"shared_ld_excessive_wavefronts", "shared_copy_excessive_wavefronts",
                                  "shared_ld_bank_conflicts",       "global_ld_requests",
                                  "global_ld_sectors",              "dram_read_bytes",
                                  "achieved_occupancy_pct",         "sm_throughput_pct",
                                  "registers"};

KernelTemplate recorded_template(const ResultStore& store, const std::string& name,
                                 const std::string& hash) {
  for (const TemplateRecord& t : store.templates(false)) {
    if (t.name == name && t.source_hash == hash) {
      return parse_template(t.source, t.path.empty() ? t.name : t.path);
    }
  }
  throw UsageError(fmt::format("the database keeps no template {} version {}", name, hash));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// The median of each ncu metric over the launches (a metric missing from one launch counts from
// the others).
std::map<std::string, double> median_metrics(const std::vector<ProfiledLaunch>& launches) {
  std::map<std::string, std::vector<double>> values;
  for (const ProfiledLaunch& launch : launches) {
    for (const auto& [metric, value] : launch.metrics) values[metric].push_back(value);
  }
  std::map<std::string, double> medians;
  for (const auto& [metric, list] : values) medians[metric] = median(list);
  return medians;
}

std::string format_value(double value) {
  if (value == std::floor(value) && std::abs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{:.2f}", value);
}

int run(const ProfileOptions& options) {
  if (options.top < 1) throw UsageError(fmt::format("--top must be at least 1, not {}", options.top));
  if (options.launches < 1 || options.launches > 100) {
    throw UsageError(fmt::format("--launches must be from 1 to 100, not {}", options.launches));
  }
  const std::vector<GemmShape> asked_shapes = parse_shapes(options.shapes);
  if (!fs::exists(options.db)) {
    throw UsageError(fmt::format("{}: no such database (run 'tiletune tune' first)", options.db));
  }
  try {
    const NsightCompute ncu = NsightCompute::find();
    GpuDevice device;
    const DeviceProperties& gpu = device.properties();
    ResultStore store(options.db);
    const std::optional<std::string> only =
        options.kernel.empty() ? std::nullopt : std::optional(options.kernel);

    // The configurations to profile: per shape, the fastest --top, or those named by --config.
    std::vector<ResultRecord> chosen;
    const std::vector<GemmShape> shapes =
        asked_shapes.empty() ? store.shapes_with_results(gpu.name, only) : asked_shapes;
    const std::set<std::string> named(options.configs.begin(), options.configs.end());
    for (const GemmShape& shape : shapes) {
      int taken = 0;
      for (const ResultRecord& result : store.ranking(gpu.name, shape, only)) {
        if (named.empty() ? taken++ < options.top : named.contains(result.config)) {
          chosen.push_back(result);
        }
      }
    }
    if (chosen.empty()) {
      fmt::print(stderr, "tiletune: no recorded ok configuration {}on {}{} in {}\n",
                 named.empty() ? "" : "of those named by --config ", gpu.name,
                 options.kernel.empty() ? "" : " of template " + options.kernel, options.db);
      return kFindings;
    }

    const std::string ncu_version = ncu.version();
    const std::vector<std::string> metrics = ncu_metrics_of(counter_metrics());
    const std::int64_t gpu_id = store.register_gpu(make_gpu_record(gpu));
    const fs::path self = fs::read_symlink("/proc/self/exe");
    fmt::print("{}: Nsight Compute {} ({}), the median of {} launches per configuration\n",
               gpu.name, ncu_version, ncu.executable().string(), options.launches);
    fmt::print("{:<16} {:<10} {:<40}", "shape", "template", "config");
    for (const char* name : kShown) fmt::print(" {:>14}", name);
    fmt::print("\n");
    std::set<std::string> lacking;
    for (const ResultRecord& result : chosen) {
      const KernelTemplate tmpl = recorded_template(store, result.template_name, result.template_hash);
      std::vector<std::string> missing;
      const std::vector<ProfiledLaunch> launches = ncu.profile(
          {self.string(), "profile-launch", "--db", fs::absolute(options.db).string(), "--kernel",
           result.template_name, "--template-hash", result.template_hash, "--config", result.config,
           "--shape", result.shape.to_string(), "--launches", std::to_string(options.launches)},
          metrics, "^" + tmpl.entry + "$", &missing);
      lacking.insert(missing.begin(), missing.end());
      if (launches.empty()) {
        throw ProfilerUnavailable(fmt::format("ncu profiled no launch of {} [{}]", tmpl.entry, result.config));
      }
      CounterRecord counters;
      counters.gpu_name = gpu.name;
      counters.template_name = result.template_name;
      counters.template_hash = result.template_hash;
      counters.config = result.config;
      counters.shape = result.shape;
      counters.values = counter_values(median_metrics(launches));
      counters.ncu_version = ncu_version;
      store.record_counters(gpu_id, counters);
      fmt::print("{:<16} {:<10} {:<40}", result.shape.to_string(), result.template_name, result.config);
      for (const char* name : kShown) {
        const auto value = counters.values.find(name);
        fmt::print(" {:>14}", value == counters.values.end() ? "-" : format_value(value->second));
      }
      fmt::print("\n");
    }
    if (!lacking.empty()) {
      fmt::print("this GPU's ncu lacks {} (so no {})\n", fmt::join(lacking, ", "),
                 fmt::join(counters_needing(lacking), ", "));
    }
    fmt::print("recorded {} configurations' counters in {}\n", chosen.size(), options.db);
    return kSuccess;
  } catch (const ProfilerUnavailable& e) {
    fmt::print(stderr, "tiletune: {}\n", e.what());
    return kEnvironment;
  }
}

// Compiles the configuration (cubin cache) and launches it at the shape on random inputs, as ncu
// watches: nothing is printed, nothing is measured here.
int run_launches(const LaunchOptions& options) {
  const GemmShape shape = GemmShape::parse(options.shape);
  const ResultStore store(options.db, ResultStore::Access::read_only);
  const KernelTemplate tmpl = recorded_template(store, options.kernel, options.template_hash);
  const Configuration config = tmpl.parse_configuration(options.config);
  const GemmProblem problem = GemmProblem::packed(shape);
  tmpl.check_requirements(config, problem);
  GpuDevice device;
  const std::string arch = device.properties().arch();
  CubinCache cache(default_cubin_cache_dir());
  const CubinKey key = CubinKey::of(tmpl, config, arch);
  std::optional<CompileOutcome> outcome = cache.load(key);
  if (!outcome || !outcome->image) {
    outcome = CompileOutcome{compile_configuration(tmpl, config, arch), "", ""};
    cache.store(key, *outcome);
  }
  const GpuKernel kernel(*outcome->image, tmpl.entry, entry_form(tmpl));
  const LaunchGeometry geometry = tmpl.launch_geometry(config, shape, device.properties().sm_count);

  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  auto random_buffer = [&](std::int64_t count) {
    std::vector<float> host(static_cast<std::size_t>(count));
    for (float& x : host) x = value(random);
    DeviceBuffer buffer(host.size() * sizeof(float));
    buffer.upload(host.data(), host.size() * sizeof(float));
    return buffer;
  };
  const DeviceBuffer a = random_buffer(shape.m * shape.k);
  const DeviceBuffer b = random_buffer(shape.k * shape.n);
  const DeviceBuffer c = random_buffer(shape.m * shape.n);
  for (int i = 0; i < options.launches; ++i) {
    kernel.launch(geometry, a.get(), b.get(), c.get(), problem, nullptr);
  }
  check_cuda(cuda_driver().cuCtxSynchronize(), "synchronizing after the profiled launches");
  return kSuccess;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* command = app.add_subcommand(
      "profile", "read hardware counters of recorded configurations with Nsight Compute (ncu)");
  command->add_option("--db", options->db, "SQLite database file")->capture_default_str();
  command->add_option("--kernel", options->kernel, "only this template (by name)");
  command->add_option("--shape", options->shapes, "problem sizes MxNxK (default: every recorded shape)");
  CLI::Option* top = command->add_option("--top", options->top, "the fastest N configurations per shape")
                         ->capture_default_str();
  command->add_option("--config", options->configs, "these configurations (as recorded) instead")
      ->excludes(top);
  command->add_option("--launches", options->launches, "launches profiled per configuration (median)")
      ->capture_default_str();
  command->callback([options, &exit_code] { exit_code = run(*options); });

  auto launch = std::make_shared<LaunchOptions>();
  CLI::App* hidden = app.add_subcommand("profile-launch", "launches one configuration under ncu");
  hidden->group("");  // not listed: only profile starts it, under ncu
  hidden->add_option("--db", launch->db)->required();
  hidden->add_option("--kernel", launch->kernel)->required();
  hidden->add_option("--template-hash", launch->template_hash)->required();
  hidden->add_option("--config", launch->config)->required();
  hidden->add_option("--shape", launch->shape)->required();
  hidden->add_option("--launches", launch->launches);
  hidden->callback([launch, &exit_code] { exit_code = run_launches(*launch); });
}

}  // namespace tiletune::cli

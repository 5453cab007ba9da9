// `tiletune tune --devices` as a user meets it: the list refused in one line, and on the CPU
// backend (each number an evaluation worker with its fuzz pool, all of one model) the same rows
// recorded as with one device, faults costing only their configuration, and the table of what each
// device settled. On a machine with GPUs, a tune on every GPU (skipped here, saying why).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "db/result_store.h"
#include "tests/support/run_tiletune.h"
#include "tests/support/source_tree.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

using ::testing::HasSubstr;
using testing_tools::expect_one_line_failure;
using testing_tools::lines_of;
using testing_tools::run_tiletune;
using testing_tools::TiletuneRun;

namespace fs = std::filesystem;

using testing_support::kTemplates;
const fs::path kFixtureTemplates = fs::path(TILETUNE_SOURCE_DIR) / "tests" / "fixtures" / "kernels";
const GemmShape kShape{40, 36, 20};

// The CPU backend's worker slots: one per core.
unsigned cores() { return std::max(1u, std::thread::hardware_concurrency()); }

// What each device settled, from tune's devices table ("device GPU settled busy s", the GPU's
// name in words): by device number.
std::map<std::string, int> settled_per_device(const TiletuneRun& run) {
  std::map<std::string, int> settled;
  bool in_table = false;
  for (const std::string& line : lines_of(run.out)) {
    if (line.starts_with("device ")) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.empty()) break;
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    if (words.size() >= 4) settled[words.front()] = std::stoi(words[words.size() - 2]);
  }
  return settled;
}

// How many full-shape references the tune's workers computed, from its lines "device N by stage:
// ..., reference 0.1 s (2 computed), ...": over every device.
int references_computed(const TiletuneRun& run) {
  const std::regex computed(R"(reference [0-9.]+ s \(([0-9]+) computed\))");
  int count = 0;
  for (const std::string& line : lines_of(run.out)) {
    if (!line.starts_with("device ") || line.find(" by stage: ") == std::string::npos) continue;
    std::smatch found;
    if (std::regex_search(line, found, computed)) count += std::stoi(found[1]);
  }
  return count;
}

// A folder of its own for each test; the CPU backend's kernel cache and the cubin cache in the
// build folder, shared with the other CLI tests (never the user's).
class DevicesCli : public testing_tools::TiletuneFolderTest {
 protected:
  DevicesCli() : TiletuneFolderTest("tiletune_devices_cli_") {}

  // A CPU tune of `kernel` at kShape into `db`, with `extra` options.
  std::vector<std::string> cpu_tune(const fs::path& kernel, const std::string& db,
                                    std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"tune", kernel.string(), "--backend", "cpu", "--shape",
                                  kShape.to_string(), "--cases", "10", "--db", (dir_ / db).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // The recorded status of each configuration of `template_name` at kShape in `db`, ok results
  // checked to carry a time.
  std::map<std::string, std::string> recorded(const std::string& db, const std::string& template_name) const {
    ResultStore store(dir_ / db);
    const std::vector<GpuRecord> gpus = store.gpus();
    EXPECT_EQ(gpus.size(), 1u) << "devices of one model are one GPU identity";
    if (gpus.empty()) return {};
    const std::int64_t gpu_id = store.register_gpu(gpus[0]);
    std::map<std::string, std::string> statuses;
    for (const TemplateRecord& tmpl : store.templates()) {
      if (tmpl.name != template_name) continue;
      for (const auto& [config, result] : store.recorded_results(gpu_id, tmpl.source_hash, kShape)) {
        statuses[config] = to_string(result.status);
        if (result.status == ResultStatus::ok) {
          EXPECT_GT(result.median_ms, 0.0) << config;
        }
      }
    }
    return statuses;
  }
};

TEST_F(DevicesCli, ABadListIsOneLineAndExitTwoBeforeAnythingIsWritten) {
  const fs::path kernel = kTemplates / "naive.cu";
  for (const std::string list : {"0,0", "x", "0,", "", "-1", "1;2", "0,1,1"}) {
    SCOPED_TRACE(list);
    const TiletuneRun run = tiletune(cpu_tune(kernel, "bad.db", {"--devices", list}));
    expect_one_line_failure(run, 2);
    EXPECT_THAT(run.err, HasSubstr("--devices")) << run;
  }
  // A number the machine lacks: the CPU backend has one worker slot per core.
  const TiletuneRun beyond = tiletune(cpu_tune(kernel, "bad.db", {"--devices", "0,9999"}));
  expect_one_line_failure(beyond, 2);
  EXPECT_THAT(beyond.err, HasSubstr("no device 9999: this machine has")) << beyond;
  const TiletuneRun all = tiletune(cpu_tune(kernel, "bad.db", {"--devices", "all"}));
  expect_one_line_failure(all, 2);
  EXPECT_THAT(all.err, HasSubstr("--devices all counts GPUs")) << all;
  // On the GPU backend the list is read before any GPU is looked for.
  const TiletuneRun gpu =
      tiletune({"tune", kernel.string(), "--devices", "1,1", "--db", (dir_ / "bad.db").string()});
  expect_one_line_failure(gpu, 2);
  EXPECT_THAT(gpu.err, HasSubstr("device 1 is named twice")) << gpu;
  EXPECT_FALSE(fs::exists(dir_ / "bad.db"));
}

TEST_F(DevicesCli, TwoCpuDevicesRecordTheSameRowsAsOneAndEachSettlesSome) {
  if (cores() < 2) GTEST_SKIP() << "one core: the CPU backend has one worker slot";
  const fs::path kernel = kTemplates / "tiled.cu";
  // One device first: it also fills the compile cache, so that the two devices are handed
  // configurations as fast as they take them.
  const TiletuneRun one = tiletune(cpu_tune(kernel, "one.db", {"--fuzz-workers", "1"}));
  ASSERT_EQ(one.exit_code, 0) << one;
  const TiletuneRun two = tiletune(cpu_tune(kernel, "two.db", {"--fuzz-workers", "1", "--devices", "0,1"}));
  ASSERT_EQ(two.exit_code, 0) << two;
  EXPECT_THAT(two.err, HasSubstr("tuning on CPU backend (sm_90, ")) << two;
  EXPECT_THAT(two.err, HasSubstr("devices 0,1")) << two;
  EXPECT_THAT(two.out, HasSubstr("(2 fuzz workers)")) << "one fuzz worker per device";

  const std::map<std::string, std::string> rows = recorded("one.db", "tiled");
  EXPECT_EQ(rows.size(), 9u);  // tiled's space
  EXPECT_EQ(recorded("two.db", "tiled"), rows);
  const std::map<std::string, int> settled = settled_per_device(two);
  ASSERT_EQ(settled.size(), 2u) << two;
  EXPECT_GT(settled.at("0"), 0) << two;
  EXPECT_GT(settled.at("1"), 0) << "the second device was never handed work\n" << two;
  EXPECT_LE(settled.at("0") + settled.at("1"), 9) << "a configuration settled twice\n" << two;
}

// With several devices the best few of a shape are re-measured on one device while the others
// search the next shape: every shape's are, and recorded, before the tune ends.
TEST_F(DevicesCli, TheBestOfEveryShapeAreReMeasuredWhileTheNextShapeIsSearched) {
  if (cores() < 2) GTEST_SKIP() << "one core: the CPU backend has one worker slot";
  const std::vector<GemmShape> shapes{{40, 36, 20}, {36, 40, 24}, {20, 20, 20}};
  std::vector<std::string> args{"tune", (kTemplates / "tiled.cu").string(), "--backend", "cpu",
                                "--cases", "10", "--fuzz-workers", "1", "--devices", "0,1",
                                "--db", (dir_ / "shapes.db").string()};
  for (const GemmShape& shape : shapes) args.insert(args.end(), {"--shape", shape.to_string()});
  const TiletuneRun run = tiletune(args);
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(settled_per_device(run).size(), 2u) << run;
  ResultStore store(dir_ / "shapes.db");
  const std::int64_t gpu_id = store.register_gpu(store.gpus().at(0));
  const std::string hash = store.templates().at(0).source_hash;
  for (const GemmShape& shape : shapes) {
    int ok = 0, remeasured = 0;
    for (const auto& [config, result] : store.recorded_results(gpu_id, hash, shape)) {
      ok += result.status == ResultStatus::ok;
      remeasured += result.detail.starts_with("re-measured with the best 5");
    }
    EXPECT_GE(ok, 5) << shape.to_string();
    EXPECT_EQ(remeasured, 5) << shape.to_string() << "\n" << run;
  }
  const std::string out = run.out;
  std::size_t notes = 0;
  for (std::size_t at = out.find("the best 5 re-measured together"); at != std::string::npos;
       at = out.find("the best 5 re-measured together", at + 1)) {
    ++notes;
  }
  EXPECT_EQ(notes, shapes.size()) << run;
}

// Every lane verifies at a shape against the reference of the same inputs: it is computed once
// per shape for the whole tune, by the first lane that needs it, whatever the number of lanes, and
// the lanes record what one device records.
TEST_F(DevicesCli, EachShapesReferenceIsComputedOnceForTheWholeTune) {
  if (cores() < 2) GTEST_SKIP() << "one core: the CPU backend has one worker slot";
  const std::vector<GemmShape> shapes{kShape, {33, 17, 65}};
  const auto tune_on = [&](const std::string& devices, const std::string& db) {
    std::vector<std::string> args{"tune", (kTemplates / "tiled.cu").string(), "--backend", "cpu",
                                  "--cases", "10", "--fuzz-workers", "1", "--devices", devices,
                                  "--db", (dir_ / db).string()};
    for (const GemmShape& shape : shapes) args.insert(args.end(), {"--shape", shape.to_string()});
    return tiletune(args);
  };
  const TiletuneRun one = tune_on("0", "one.db");
  ASSERT_EQ(one.exit_code, 0) << one;
  EXPECT_EQ(references_computed(one), 2) << one;
  const TiletuneRun two = tune_on("0,1", "two.db");
  ASSERT_EQ(two.exit_code, 0) << two;
  EXPECT_EQ(settled_per_device(two).size(), 2u) << two;
  EXPECT_EQ(references_computed(two), 2) << "a reference computed per lane\n" << two;

  for (const GemmShape& shape : shapes) {
    std::map<std::string, std::string> rows[2];
    for (int i = 0; i < 2; ++i) {
      ResultStore store(dir_ / (i == 0 ? "one.db" : "two.db"));
      const std::int64_t gpu_id = store.register_gpu(store.gpus().at(0));
      for (const auto& [config, result] :
           store.recorded_results(gpu_id, store.templates().at(0).source_hash, shape)) {
        rows[i][config] = to_string(result.status);
      }
    }
    EXPECT_EQ(rows[0].size(), 9u) << shape.to_string();  // tiled's space
    EXPECT_EQ(rows[1], rows[0]) << shape.to_string();
  }
}

TEST_F(DevicesCli, EveryFaultCostsOnlyItsConfigurationOnItsDevice) {
  if (cores() < 2) GTEST_SKIP() << "one core: the CPU backend has one worker slot";
  const fs::path zoo = kFixtureTemplates / "fault_zoo.cu";
  const std::vector<std::string> options{"--watchdog", "2", "--fuzz-workers", "1"};
  std::vector<std::string> on_two = options;
  on_two.insert(on_two.end(), {"--devices", "0,1"});
  const TiletuneRun one = tiletune(cpu_tune(zoo, "one.db", options));
  const TiletuneRun two = tiletune(cpu_tune(zoo, "two.db", on_two));
  ASSERT_EQ(one.exit_code, 0) << one;
  ASSERT_EQ(two.exit_code, 0) << two;
  EXPECT_THAT(two.out, HasSubstr("settled: 2 compile_error, 2 crashed, 2 device_limit, 2 ok, 2 timeout"))
      << two;
  EXPECT_THAT(two.err, HasSubstr("TILE=8,FAULT=1: crashed: the worker died: killed by signal 11")) << two;
  EXPECT_EQ(recorded("two.db", "fault_zoo"), recorded("one.db", "fault_zoo"));

  const TiletuneRun again = tiletune(cpu_tune(zoo, "two.db", on_two));
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, HasSubstr("settled: 10 recorded earlier")) << "nothing is measured twice";
}

TEST_F(DevicesCli, FuzzWorkersCountPerDeviceAndAreCappedToTheCoresInAll) {
  if (cores() < 2) GTEST_SKIP() << "one core: the CPU backend has one worker slot";
  const std::string per_device = std::to_string(cores() / 2);
  const TiletuneRun run = tiletune(cpu_tune(
      kTemplates / "naive.cu", "capped.db", {"--fuzz-workers", "100000", "--devices", "0,1", "--budget", "4"}));
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.err, HasSubstr("tiletune: --fuzz-workers 100000 capped to " + per_device + " per device: "
                                 "this machine has " + std::to_string(cores()) + " cores for 2 devices\n"))
      << run;
  EXPECT_THAT(run.out, HasSubstr("(" + std::to_string(2 * (cores() / 2)) + " fuzz workers)")) << run;
}

// --- on the GPUs of this machine ---------------------------------------------------------------

int gpus_here(std::string& why) {
  try {
    int count = 0;
    check_cuda(cuda_driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
    return count;
  } catch (const GpuUnavailable& e) {
    why = e.what();
    return 0;
  }
}

TEST_F(DevicesCli, ATuneOnEveryGpuRecordsOneIdentityPerModelAndUsesEachGpu) {
  std::string why = "one GPU";
  const int gpus = gpus_here(why);
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs: " << why;
  const fs::path kernel = kTemplates / "naive.cu";
  const TiletuneRun run = tiletune({"tune", kernel.string(), "--shape", "512x512x512", "--devices", "all",
                                    "--cases", "10", "--db", (dir_ / "gpus.db").string()});
  ASSERT_EQ(run.exit_code, 0) << run;
  const std::map<std::string, int> settled = settled_per_device(run);
  EXPECT_EQ(int(settled.size()), gpus) << run;
  for (const auto& [device, count] : settled) EXPECT_GT(count, 0) << "GPU " << device << " idle\n" << run;
  std::map<std::string, int> names;
  for (const GpuRecord& gpu : ResultStore(dir_ / "gpus.db").gpus()) ++names[gpu.name];
  for (const auto& [name, rows] : names) EXPECT_EQ(rows, 1) << name << ": one row per model";
}

}  // namespace
}  // namespace tiletune

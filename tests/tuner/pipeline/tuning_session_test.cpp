// TuningSession and TuningRun driven as `tiletune tune --backend cpu` drives them, without the
// command line: the session's workers are the tiletune binary, the tune records into a database,
// and what it recorded is read back from the store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "db/result_store.h"
#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/test_folder.h"
#include "tuner/core/configurations.h"
#include "tuner/core/kernel_template.h"
#include "tuner/pipeline/recorded_warm_start.h"
#include "tuner/pipeline/tuning_session.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using testing_support::fresh_test_folder;

class TuningSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_test_folder("tuning-session");
    // The CPU kernel cache the CLI tests share in the build folder (never the user's): the
    // workers, started from this process, inherit it.
    const fs::path cache = fs::path(TILETUNE_BINARY_DIR) / "tests" / "tools" / "cpu-tune-cache";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    setenv("TILETUNE_CACHE_DIR", (cache / "cubins").c_str(), 1);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static SessionOptions cpu_session() {
    SessionOptions options;
    options.backend = "cpu";
    options.worker_program = TILETUNE_BINARY_DIR "/tools/tiletune";
    options.fuzz_workers = 0;  // the evaluation worker fuzzes: one process in all
    return options;
  }

  static TuningSettings quick_settings() {
    TuningSettings settings;
    settings.fuzz.cases = 5;
    settings.budget = SearchBudget::parse("3");
    settings.confirm_top = 2;
    settings.confirm_rounds = 1;
    return settings;
  }

  fs::path dir_;
};

TEST_F(TuningSessionTest, TunesATemplateOnTheCpuBackendIntoTheDatabase) {
  const KernelTemplate naive =
      load_template(fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu");
  const GemmShape shape{33, 65, 17};
  TuningSession session(cpu_session(), {});
  ResultStore store(dir_ / "tune.db");
  TuningRun& run = session.run(store, quick_settings());
  EXPECT_EQ(run.device().name, "CPU backend");

  std::vector<std::string> done;
  const TuningSummary summary = run.tune(naive, shape, [&](const TuningEvent& event) {
    if (event.stage == "done" && event.config != nullptr) done.push_back(event.config->to_string());
  });

  EXPECT_EQ(summary.settled, 3) << "the budget of 3 configurations";
  EXPECT_EQ(summary.evaluated, 3);
  EXPECT_EQ(done.size(), 3u);
  EXPECT_EQ(session.workers_started(), 1);
  ASSERT_TRUE(summary.best.has_value());
  const std::optional<ResultRecord> best = store.best("CPU backend", shape, "naive");
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->status, ResultStatus::ok);
  EXPECT_GT(best->median_ms, 0.0);
  EXPECT_THAT(done, ::testing::Contains(best->config));
}

// As the same command run again: a new session (a new run) over the same database.
TEST_F(TuningSessionTest, ATuneRunAgainReplaysWhatIsRecorded) {
  const KernelTemplate naive =
      load_template(fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "naive.cu");
  const GemmShape shape{17, 9, 40};
  ResultStore store(dir_ / "tune.db");
  const auto ignore = [](const TuningEvent&) {};
  TuningSummary first, again;
  {
    TuningSession session(cpu_session(), {});
    first = session.run(store, quick_settings()).tune(naive, shape, ignore);
  }
  {
    TuningSession session(cpu_session(), {});
    again = session.run(store, quick_settings()).tune(naive, shape, ignore);
  }

  EXPECT_EQ(first.recorded_earlier, 0);
  EXPECT_EQ(first.evaluated, 3);
  EXPECT_EQ(again.settled, first.settled);
  EXPECT_EQ(again.recorded_earlier, again.settled) << "nothing is evaluated twice";
  EXPECT_EQ(again.evaluated, 0);
  EXPECT_FALSE(again.measured_new);
}

// compile_ahead fills the disk cache with what the later searches are going to compile: every
// configuration the requirements allow at one of the shapes, and nothing more. NVRTC only, no GPU.
TEST_F(TuningSessionTest, CompileAheadFillsTheCubinCacheWithWhatTheSearchesWillCompile) {
  SKIP_WITHOUT_NVRTC();
  const KernelTemplate tiled = load_template(fs::path(TILETUNE_SOURCE_DIR) / "kernels_src" / "tiled.cu");
  SessionOptions options = cpu_session();
  options.cache_dir = (dir_ / "cubins").string();
  std::size_t entries = 0;
  {
    TuningSession session(options, {});
    session.compile_ahead(0, {{tiled, {GemmShape{64, 64, 64}}}});
    // It runs in the background: wait for it (tiled's nine compile in seconds).
    for (int wait = 0; wait < 600 && entries < 9; ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      entries = 0;
      if (fs::exists(options.cache_dir)) {
        for (const auto& e : fs::directory_iterator(options.cache_dir)) entries += e.path().extension() == ".entry";
      }
    }
  }  // the session ends: compile_ahead stops and is joined
  EXPECT_EQ(entries, 9u) << "tiled's nine configurations, each once";
}

// A guided tune of a missed shape starts from what the runtime library's first-call trial timed
// there (`tune --missed`): its candidates, fastest first, before the nearest shapes' winners.
TEST_F(TuningSessionTest, AGuidedSearchStartsFromTheFirstCallTrialAtItsShape) {
  const KernelTemplate tmpl = load_template(std::string(TILETUNE_SOURCE_DIR) + "/kernels_src/tiled.cu");
  const std::vector<Configuration> space = enumerate_configurations(tmpl);
  ASSERT_GE(space.size(), 4u);
  ResultStore store(dir_ / "misses.db");
  GpuRecord gpu;
  gpu.name = "GPU";
  const std::int64_t gpu_id = store.register_gpu(gpu);
  store.register_template({tmpl.name, tmpl.source_hash, tmpl.path.string(), tmpl.source});
  const GemmShape shape{300, 200, 100};
  const double times[] = {0.5, 0.2, 0.3};  // space[2] fastest, then space[3], then space[1]
  for (int i = 0; i < 3; ++i) {
    TraceRecord step;
    step.run_id = "0123456789abcdef";
    step.gpu_name = gpu.name;
    step.template_name = tmpl.name;
    step.template_hash = tmpl.source_hash;
    step.shape = shape;
    step.seq = i + 1;
    step.strategy = kTrialStrategy;
    step.config = space[std::size_t(i) + 1].to_string();
    step.median_ms = times[i];
    store.record_trace(gpu_id, step);
  }
  const WarmStart start = recorded_warm_start(store, gpu.name, tmpl.name, shape, space);
  EXPECT_EQ(start.points, (std::vector<std::size_t>{2, 3, 1}));
  EXPECT_EQ(start.trial_candidates, 3);
  EXPECT_EQ(describe(start), "3 configurations from the first-call trial at the shape (3)");
  EXPECT_TRUE(recorded_warm_start(store, gpu.name, tmpl.name, GemmShape{300, 200, 101}, space).points.empty())
      << "a trial at another shape is not this one's";
}

}  // namespace
}  // namespace tiletune

// tiletune export as a user runs it: a bundle from a database (read only), its filters, the cpp
// format, and every refusal as one "tiletune: " line with its exit code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run_tiletune.h"
#include "tests/support/skip_without_nvrtc.h"
#include "tests/support/test_folder.h"
#include "tests/tuner/runtime/export_database.h"
#include "tuner/runtime/performance_model.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;
using testing_tools::read_text;
using testing_tools::run_tiletune;
using testing_tools::TiletuneRun;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_support::fresh_test_folder("export-cli");
    testing_support::write_export_database(dir_ / "tiletune.db");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Its cubin cache in the test's folder, never the user's.
  TiletuneRun export_bundle(std::vector<std::string> args) {
    args.insert(args.begin(), {"export", "--cache-dir", (dir_ / "cache").string()});
    return run_tiletune(dir_, args);
  }
  nlohmann::json manifest(const fs::path& bundle) {
    return nlohmann::json::parse(read_text(bundle / "manifest.json"));
  }

  fs::path dir_;
};

TEST_F(ExportCli, WritesABundleAndLeavesTheDatabaseAsItWas) {
  SKIP_WITHOUT_NVRTC();
  const std::string database = read_text(dir_ / "tiletune.db");
  const TiletuneRun run = export_bundle({"--out", "bundle"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, "exported 2 templates, 2 GPUs, 2 shapes, 9 configurations, 18 cubins (" +
                         std::to_string([&] {
                           std::uintmax_t bytes = 0;
                           for (const auto& e : fs::recursive_directory_iterator(dir_ / "bundle" / "cubins")) {
                             if (e.is_regular_file()) bytes += e.file_size();
                           }
                           return bytes;
                         }()) + " bytes) to bundle\n");
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(read_text(dir_ / "tiletune.db"), database);

  const nlohmann::json m = manifest(dir_ / "bundle");
  EXPECT_EQ(m["format"], "tiletune-bundle");
  EXPECT_EQ(m["format_version"], 1);
  EXPECT_EQ(m["tiletune_version"], TILETUNE_VERSION);
  EXPECT_EQ(m["database"], "tiletune.db");
  EXPECT_EQ(m["gpus"].size(), 2u);
  EXPECT_EQ(m["choices"].size(), 14u);
  EXPECT_EQ(m["cubins"].size(), 18u);
  const std::string naive_source = m["templates"][0]["source_file"];
  EXPECT_THAT(naive_source, ::testing::MatchesRegex("sources/naive_aligned-[0-9a-f]{16}\\.cu"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "bundle" / naive_source));
  EXPECT_EQ(m["templates"][1]["declarations"]["grid"],
            nlohmann::json::array({"ceil_div(N, TILE)", "ceil_div(M, TILE)", "1"}));
  // A model for each GPU and template; at two shapes no configuration has its own fit, so the
  // database's models predict for none (the bundle's own fit would not either).
  EXPECT_EQ(m["performance_model"], runtime::kPerformanceModelVersion);
  ASSERT_EQ(m["models"].size(), 3u);
  EXPECT_EQ(m["models"][0]["configurations"], nlohmann::json::array());

  // Again over it: the previous bundle is replaced; the cubins come from the cache this time.
  const TiletuneRun again = export_bundle({"--out", "bundle", "--kernel", "tiled", "--per-shape", "1"});
  ASSERT_EQ(again.exit_code, 0) << again;
  EXPECT_THAT(again.out, HasSubstr("exported 1 templates, 2 GPUs, 2 shapes, 3 configurations, 6 cubins"));
  EXPECT_EQ(manifest(dir_ / "bundle")["cubins"].size(), 6u);
  // The previous bundle's files stay for one export (a reader may have just read its manifest).
  EXPECT_TRUE(fs::is_regular_file(dir_ / "bundle" / naive_source));
  ASSERT_EQ(export_bundle({"--out", "bundle", "--kernel", "tiled", "--per-shape", "1"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "bundle" / naive_source));
}

TEST_F(ExportCli, FiltersByGpu) {
  SKIP_WITHOUT_NVRTC();
  const TiletuneRun run = export_bundle({"--out", "a100", "--gpu", testing_support::kA100});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("exported 1 templates, 1 GPUs, 1 shapes, 2 configurations, 2 cubins"));
  const nlohmann::json m = manifest(dir_ / "a100");
  ASSERT_EQ(m["cubins"].size(), 2u);
  EXPECT_EQ(m["cubins"][0]["arch"], "sm_80");
}

TEST_F(ExportCli, TheCppFormatWritesOneSourceFile) {
  SKIP_WITHOUT_NVRTC();
  const TiletuneRun run =
      export_bundle({"--out", "src", "--format", "cpp", "--name", "gemm_bundle", "--kernel", "tiled"});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_THAT(run.out, HasSubstr("to src/gemm_bundle.cpp\n"));
  EXPECT_EQ(testing_support::sorted_names(dir_ / "src"), std::vector<std::string>{"gemm_bundle.cpp"});
  EXPECT_THAT(read_text(dir_ / "src" / "gemm_bundle.cpp"),
              HasSubstr("const tiletune::EmbeddedBundle& gemm_bundle() {"));
}

TEST_F(ExportCli, BadInputIsOneLineAndExitTwo) {
  const auto refused = [&](std::vector<std::string> args, const std::string& line) {
    const TiletuneRun run = export_bundle(args);
    EXPECT_EQ(run.exit_code, 2) << run;
    EXPECT_EQ(run.err, "tiletune: " + line + "\n") << run;
    EXPECT_EQ(run.out, "");
  };
  refused({"--db", "missing.db", "--out", "b"}, "missing.db: no such database (run 'tiletune tune' first)");
  refused({"--out", "b", "--kernel", "warp_tiled"}, "no record of template 'warp_tiled' to export");
  refused({"--out", "b", "--gpu", "Tesla V100"}, "no record of GPU 'Tesla V100' to export");
  refused({"--out", "b", "--format", "cpp", "--name", "not-a-name"}, "--name 'not-a-name' is not a C identifier");
  std::ofstream(dir_ / "shapes.txt") << "4096x768x768\n4096x768 3\n";
  for (const auto& [file, why] : {std::pair{"shapes.txt", "shapes.txt:2: invalid shape '4096x768'"},
                                  std::pair{"none.txt", "none.txt: cannot read the workload file"}}) {
    const TiletuneRun workload = export_bundle({"--out", "b", "--workload", file});
    EXPECT_EQ(workload.exit_code, 2) << workload;
    EXPECT_THAT(workload.err, MatchesRegex(std::string("tiletune: ") + why + "[^\n]*\n")) << workload;
  }
  const TiletuneRun format = export_bundle({"--out", "b", "--format", "zip"});
  EXPECT_EQ(format.exit_code, 2) << format;
  EXPECT_THAT(format.err, MatchesRegex("tiletune: --format: .*zip.*\n"));

  fs::create_directories(dir_ / "mine");
  std::ofstream(dir_ / "mine" / "thesis.tex") << "keep";
  refused({"--out", "mine"}, "mine: not empty and no tiletune bundle (no manifest.json); choose an empty folder");
  EXPECT_EQ(read_text(dir_ / "mine" / "thesis.tex"), "keep");
  EXPECT_FALSE(fs::exists(dir_ / "b"));
}

TEST_F(ExportCli, AConfigurationThatDoesNotCompileFailsTheExport) {
  SKIP_WITHOUT_NVRTC();
  // tiled with an #error for TILE=32: recorded as ok (as if another NVRTC had compiled it).
  std::string source = testing_support::shipped_source("tiled.cu");
  source.replace(source.find("// tiletune: name tiled"), 23,
                 "// tiletune: name tiled\n#if TT_TILE == 32\n#error no tile of 32 here\n#endif");
  {
    ResultStore store(dir_ / "tiletune.db");
    testing_support::register_source(store, source, "tiled.cu");
    testing_support::record(store, testing_support::test_gpu(testing_support::kH100, 9, 0), source,
                            "TILE=32,PAD=0,SWIZZLE=0", testing_support::kSmallShape, 1.0);
  }
  const TiletuneRun run = export_bundle({"--out", "bundle", "--kernel", "tiled"});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_THAT(run.err, MatchesRegex("tiletune: export failed: tiled \\[TILE=32,PAD=0,SWIZZLE=0\\] for "
                                    "sm_[89]0: [^\n]*does not compile[^\n]*\n"));
  EXPECT_FALSE(fs::exists(dir_ / "bundle"));
}

}  // namespace
}  // namespace tiletune

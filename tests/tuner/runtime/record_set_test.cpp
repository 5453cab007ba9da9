// A database written with ResultStore, read back as the runtime library's RecordSet
// (tuner/runtime/record_set.h): the ok results of the current template versions only, GPU rows
// kept apart, the fuzz cases each configuration passed, templates parsed where today's parser can;
// a schema version 1 or 2 file (no fuzz passes) read as it is and left unchanged.
#include "tuner/runtime/record_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "db/result_store.h"
#include "tests/support/result_records.h"

namespace tiletune::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kTiledSource =
    "// tiletune: name tiled\n"
    "// tiletune: entry k\n"
    "// tiletune: param TILE 16 32\n"
    "// tiletune: require lda % 4 == 0\n"
    "// tiletune: block TILE, TILE\n"
    "// tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)\n"
    "extern \"C\" __global__ void k() {}\n";

const GemmShape kShallow{4096, 4096, 64};  // kSquare: tests/support/result_records.h

GpuRecord gpu_record(const std::string& name, std::uint64_t memory_bytes, int sm_count) {
  GpuRecord gpu;
  gpu.name = name;
  gpu.cc_major = 9;
  gpu.cc_minor = 0;
  gpu.sm_count = sm_count;
  gpu.clock_khz = 1980000;
  gpu.memory_bytes = memory_bytes;
  gpu.driver_version = 13000;
  gpu.nvrtc_version = "13.0";
  return gpu;
}

ResultRecord result(const std::string& name, const std::string& hash, const std::string& config,
                    GemmShape shape, double median_ms, ResultStatus status = ResultStatus::ok) {
  ResultRecord r = make_result(name, hash, config, shape, status, median_ms);
  r.registers = 40;
  r.static_shared_bytes = 2048;
  r.dynamic_shared_bytes = 512;
  return r;
}

void exec(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

class RecordSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tiletune_record_set_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Two rows of one GPU name (80 and 94 GB) and an H200; tiled in two versions (h2 current),
  // "old" whose source today's parser refuses, results of every kind.
  fs::path write_database() {
    const fs::path path = dir_ / "tiletune.db";
    ResultStore store(path);
    const GpuRecord h100 = gpu_record("NVIDIA H100", 80'000'000'000ULL, 132);
    const GpuRecord h100_94 = gpu_record("NVIDIA H100", 94'000'000'000ULL, 132);
    const GpuRecord h200 = gpu_record("NVIDIA H200", 150'000'000'000ULL, 132);
    const auto h100_id = store.register_gpu(h100);
    const auto h100_94_id = store.register_gpu(h100_94);
    const auto h200_id = store.register_gpu(h200);
    const std::string current = fnv1a_hex(kTiledSource);
    store.register_template({"tiled", "00000000000000h1", "kernels_src/tiled.cu", "// tiled h1\n"});
    store.register_template(
        {"old", "00000000000000o1", "kernels_src/old.cu", "// old declarations\n"});
    store.record_result(h100_id, h100, result("tiled", "00000000000000h1", "TILE=8", kSquare, 0.1));
    store.register_template({"tiled", current, "kernels_src/tiled.cu", kTiledSource});
    store.record_result(h200_id, h200, result("tiled", current, "TILE=32", kShallow, 3.0));
    store.record_result(h100_id, h100, result("tiled", current, "TILE=16", kSquare, 2.0));
    store.record_result(h100_id, h100, result("tiled", current, "TILE=32", kSquare, 1.5));
    store.record_result(
        h100_id, h100, result("tiled", current, "TILE=32", kShallow, 0.5, ResultStatus::wrong_result));
    store.record_result(h100_94_id, h100_94, result("tiled", current, "TILE=16", kSquare, 1.9));
    store.record_result(h100_id, h100, result("old", "00000000000000o1", "X=1", kSquare, 4.0));
    store.record_fuzz_pass(h100_id, "tiled", current, "TILE=32", 500);
    store.record_fuzz_pass(h100_id, "tiled", current, "TILE=32", 200);  // the most is kept
    store.record_fuzz_pass(h200_id, "tiled", current, "TILE=16", 300);  // no result of it there
    return path;
  }

  fs::path dir_;
};

std::string describe(const RecordSet& records, const RecordedChoice& c) {
  const RecordedGpu& gpu = records.gpus.at(c.gpu);
  return gpu.name + "/" + std::to_string(gpu.memory_bytes / 1'000'000'000) + " " +
         records.templates.at(c.templ).name + " " + c.shape.to_string() + " " + c.config + " " +
         std::to_string(c.fuzz_cases);
}

TEST_F(RecordSetTest, ReadsTheOkResultsOfTheCurrentVersionsWithTheirFuzzCases) {
  const RecordSet records = load_database_records(write_database());

  ASSERT_EQ(records.gpus.size(), 3u);
  EXPECT_EQ(records.gpus[0].name, "NVIDIA H100");
  EXPECT_EQ(records.gpus[0].memory_bytes, 80'000'000'000ULL);
  EXPECT_EQ(records.gpus[1].name, "NVIDIA H100");
  EXPECT_EQ(records.gpus[1].memory_bytes, 94'000'000'000ULL);
  EXPECT_EQ(records.gpus[2].name, "NVIDIA H200");
  EXPECT_EQ(records.gpus[2].arch(), "sm_90");
  EXPECT_EQ(records.gpus[2].sm_count, 132);

  ASSERT_EQ(records.templates.size(), 2u);
  EXPECT_EQ(records.templates[0].name, "old");
  EXPECT_FALSE(records.templates[0].parsed.has_value()) << "today's parser refuses it";
  const RecordedTemplate* tiled = records.find_template("tiled");
  ASSERT_NE(tiled, nullptr);
  EXPECT_EQ(tiled, &records.templates[1]);
  EXPECT_EQ(tiled->source_hash, fnv1a_hex(kTiledSource)) << "the current version";
  EXPECT_EQ(tiled->source, kTiledSource);
  EXPECT_EQ(tiled->path, "kernels_src/tiled.cu");
  ASSERT_TRUE(tiled->parsed.has_value());
  EXPECT_EQ(tiled->parsed->requirements.size(), 1u);
  EXPECT_EQ(records.find_template("naive"), nullptr);

  std::vector<std::string> choices;
  for (const RecordedChoice& c : records.choices) choices.push_back(describe(records, c));
  // Sorted by GPU, template, shape, time; h1's TILE=8 and the wrong result are not there.
  EXPECT_EQ(choices, (std::vector<std::string>{
                         "NVIDIA H100/80 old 1024x1024x1024 X=1 0",
                         "NVIDIA H100/80 tiled 1024x1024x1024 TILE=32 500",
                         "NVIDIA H100/80 tiled 1024x1024x1024 TILE=16 0",
                         "NVIDIA H100/94 tiled 1024x1024x1024 TILE=16 0",
                         "NVIDIA H200/150 tiled 4096x4096x64 TILE=32 0",
                     }));
  const RecordedChoice& fast = records.choices[1];
  EXPECT_DOUBLE_EQ(fast.median_ms, 1.5);
  EXPECT_DOUBLE_EQ(fast.min_ms, 1.5 * 0.9);
  EXPECT_DOUBLE_EQ(fast.max_ms, 1.5 * 1.2);
  EXPECT_EQ(fast.runs, 20);
  EXPECT_NEAR(fast.tflops, kSquare.flops() / 1.5e-3 / 1e12, 1e-9);
  EXPECT_EQ(fast.registers, 40);
  EXPECT_EQ(fast.static_shared_bytes, 2048);
  EXPECT_EQ(fast.dynamic_shared_bytes, 512);
  EXPECT_EQ(fast.recorded_at.size(), std::string("2026-01-01 00:00:00").size());
}

// Schema versions 1 and 2 have no fuzz_passes table: read as they are (every fuzz count 0), not
// migrated. (What else version 2 changed, the statuses a result may have, a reader never sees.)
TEST_F(RecordSetTest, ReadsSchemaVersions1And2WithoutChangingThem) {
  for (const char* version : {"1", "2"}) {
    SCOPED_TRACE(version);
    const fs::path path = write_database();
    exec(path, std::string("PRAGMA journal_mode = DELETE; DROP TABLE fuzz_passes; "
                           "PRAGMA user_version = ") + version + ";");
    const auto before = fs::last_write_time(path);
    const auto size = fs::file_size(path);

    const RecordSet records = load_database_records(path);
    ASSERT_EQ(records.choices.size(), 5u);
    for (const RecordedChoice& c : records.choices) {
      EXPECT_EQ(c.fuzz_cases, 0) << describe(records, c);
    }
    EXPECT_EQ(records.choices[1].config, "TILE=32");
    EXPECT_EQ(fs::last_write_time(path), before);
    EXPECT_EQ(fs::file_size(path), size);
    ResultStore reread(path, ResultStore::Access::read_only);
    EXPECT_THROW(reread.fuzz_passes(1, fnv1a_hex(kTiledSource)), DatabaseError) << "not migrated";
    fs::remove(path);
  }
}

TEST_F(RecordSetTest, AMissingDatabaseNamesItsPath) {
  const fs::path missing = dir_ / "none.db";
  try {
    load_database_records(missing);
    ADD_FAILURE() << "read a missing database";
  } catch (const DatabaseError& e) {
    EXPECT_THAT(e.what(), HasSubstr(missing.string()));
  }
  EXPECT_FALSE(fs::exists(missing));
}

}  // namespace
}  // namespace tiletune::runtime

// ResultStore in one process: records round-trip, best and ranking, template versions, the
// schema of a new file, bad files, and several connections (threads) on one file. Schema
// migration and concurrent processes have their own files.
#include "db/result_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/result_records.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

TEST(ResultStoreStatusTest, TextRoundTrip) {
  for (const auto status : {ResultStatus::ok, ResultStatus::compile_error, ResultStatus::wrong_result,
                            ResultStatus::launch_error, ResultStatus::device_limit,
                            ResultStatus::timeout, ResultStatus::crashed, ResultStatus::pruned}) {
    EXPECT_EQ(parse_result_status(to_string(status)), status);
  }
  EXPECT_STREQ(to_string(ResultStatus::wrong_result), "wrong_result");
  EXPECT_STREQ(to_string(ResultStatus::timeout), "timeout");
  EXPECT_STREQ(to_string(ResultStatus::crashed), "crashed");
  EXPECT_STREQ(to_string(ResultStatus::pruned), "pruned");
  EXPECT_THROW(parse_result_status("OK"), std::invalid_argument);
  EXPECT_THROW(parse_result_status(""), std::invalid_argument);
}

TEST_F(ResultStoreTest, GpuRoundTripAndUpdateOnRegister) {
  ResultStore store(db_path());
  GpuRecord gpu = h200();
  const std::int64_t id = store.register_gpu(gpu);

  auto gpus = store.gpus();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].name, gpu.name);
  EXPECT_EQ(gpus[0].cc_major, 9);
  EXPECT_EQ(gpus[0].cc_minor, 0);
  EXPECT_EQ(gpus[0].sm_count, 132);
  EXPECT_EQ(gpus[0].clock_khz, 1980000);
  EXPECT_EQ(gpus[0].memory_bytes, 150'000'000'000ULL);
  EXPECT_EQ(gpus[0].driver_version, 13000);
  EXPECT_EQ(gpus[0].nvrtc_version, "13.0");
  EXPECT_EQ(gpus[0].arch(), "sm_90");

  // A driver update is the same GPU, with its new versions and clock.
  gpu.driver_version = 13010;
  gpu.nvrtc_version = "13.1";
  gpu.clock_khz = 1755000;
  EXPECT_EQ(store.register_gpu(gpu), id);
  gpus = store.gpus();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].driver_version, 13010);
  EXPECT_EQ(gpus[0].nvrtc_version, "13.1");
  EXPECT_EQ(gpus[0].clock_khz, 1755000);

  // Another memory size is another GPU.
  gpu.memory_bytes = 80'000'000'000ULL;
  EXPECT_NE(store.register_gpu(gpu), id);
  EXPECT_EQ(store.gpus().size(), 2u);
}

TEST_F(ResultStoreTest, TemplateRoundTripAndCurrentVersion) {
  ResultStore store(db_path());
  const TemplateRecord v1 = make_template("tiled", "hash1");
  TemplateRecord v2 = make_template("tiled", "hash2");
  v2.source = "// a source with 'quotes', \"double quotes\" and a\nnewline\n";
  store.register_template(v1);
  store.register_template(v2);
  store.register_template(make_template("naive", "n1"));

  const auto current = store.templates();
  ASSERT_EQ(current.size(), 2u);
  EXPECT_EQ(current[0].name, "naive");
  EXPECT_EQ(current[1].name, v2.name);
  EXPECT_EQ(current[1].source_hash, v2.source_hash);
  EXPECT_EQ(current[1].path, v2.path);
  EXPECT_EQ(current[1].source, v2.source);

  const auto all = store.templates(/*current_only=*/false);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].source_hash, "hash2");  // most recently registered first
  EXPECT_EQ(all[2].source_hash, "hash1");
  EXPECT_EQ(all[2].source, v1.source);

  // Registering an older version again makes it current again.
  store.register_template(v1);
  ASSERT_EQ(store.templates().size(), 2u);
  EXPECT_EQ(store.templates()[1].source_hash, "hash1");
}

TEST_F(ResultStoreTest, ResultRoundTripOfEveryField) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));

  ResultRecord result = make_result("tiled", "h1", "BM=64,BN=64,BK=16", kTall, ResultStatus::ok, 0.25);
  result.detail = "note: 'quoted' detail";
  result.registers = 96;
  result.static_shared_bytes = 8192;
  result.dynamic_shared_bytes = 16384;
  result.spill_bytes = 24;
  result.recorded_at = "ignored: the store fills it";
  store.record_result(gpu_id, gpu, result);

  const auto best = store.best(gpu.name, kTall);
  ASSERT_TRUE(best.has_value());
  expect_same_result(*best, result);
  EXPECT_TRUE(std::regex_match(best->recorded_at,
                               std::regex(R"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")))
      << best->recorded_at;
  EXPECT_EQ(query_file(db_path(), "SELECT driver_version || ' ' || nvrtc_version FROM results"),
            "13000 13.0");
}

TEST_F(ResultStoreTest, BestIsTheFastestOkResult) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "slow", kSquare, ResultStatus::ok, 2.0));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "fast", kSquare, ResultStatus::ok, 1.0));
  store.record_result(gpu_id, gpu,
                      make_result("tiled", "h1", "wrong", kSquare, ResultStatus::wrong_result, 0.5));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "broken", kSquare,
                                               ResultStatus::compile_error, 0.1));
  store.record_result(gpu_id, gpu,
                      make_result("tiled", "h1", "other_shape", kTall, ResultStatus::ok, 0.01));

  const auto best = store.best(gpu.name, kSquare);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->config, "fast");

  const auto ranking = store.ranking(gpu.name, kSquare);
  ASSERT_EQ(ranking.size(), 2u);
  EXPECT_EQ(ranking[0].config, "fast");
  EXPECT_EQ(ranking[1].config, "slow");

  EXPECT_FALSE(store.best("NVIDIA H100", kSquare).has_value());
  EXPECT_FALSE(store.best(gpu.name, GemmShape{7, 7, 7}).has_value());
}

TEST_F(ResultStoreTest, EqualTimesAreRankedByTemplateNameThenConfiguration) {
  // As the runtime library's selection orders them, whatever order they were recorded in: a tie
  // (common at the timer's resolution on small shapes) must not let bench and the library differ.
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));
  store.register_template(make_template("naive", "h2"));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "BK=8", kSquare, ResultStatus::ok, 1.0));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "BK=16", kSquare, ResultStatus::ok, 1.0));
  store.record_result(gpu_id, gpu, make_result("naive", "h2", "X=1", kSquare, ResultStatus::ok, 1.0));
  std::vector<std::string> order;
  for (const ResultRecord& r : store.ranking(gpu.name, kSquare)) order.push_back(r.template_name + " " + r.config);
  EXPECT_EQ(order, (std::vector<std::string>{"naive X=1", "tiled BK=16", "tiled BK=8"}));
  EXPECT_EQ(store.best(gpu.name, kSquare, "tiled")->config, "BK=16");
}

TEST_F(ResultStoreTest, GpusAreMatchedByName) {
  ResultStore store(db_path());
  const GpuRecord big = h200();
  GpuRecord small = h200();
  small.memory_bytes = 80'000'000'000ULL;
  const auto big_id = store.register_gpu(big);
  const auto small_id = store.register_gpu(small);
  store.register_template(make_template("tiled", "h1"));
  store.record_result(big_id, big, make_result("tiled", "h1", "a", kSquare, ResultStatus::ok, 2.0));
  store.record_result(small_id, small, make_result("tiled", "h1", "b", kSquare, ResultStatus::ok, 1.0));

  EXPECT_EQ(store.ranking(big.name, kSquare).size(), 2u);
  EXPECT_EQ(store.best(big.name, kSquare)->config, "b");
}

TEST_F(ResultStoreTest, TemplateVersionChangeHidesOldResults) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "v1"));
  store.record_result(gpu_id, gpu, make_result("tiled", "v1", "c", kSquare, ResultStatus::ok, 1.0));
  ASSERT_EQ(store.best(gpu.name, kSquare)->template_hash, "v1");

  store.register_template(make_template("tiled", "v2"));
  EXPECT_FALSE(store.best(gpu.name, kSquare).has_value());
  EXPECT_TRUE(store.shapes_with_results(gpu.name).empty());

  store.record_result(gpu_id, gpu, make_result("tiled", "v2", "c", kSquare, ResultStatus::ok, 3.0));
  EXPECT_EQ(store.best(gpu.name, kSquare)->template_hash, "v2");
  EXPECT_EQ(store.ranking(gpu.name, kSquare).size(), 1u);

  store.register_template(make_template("tiled", "v1"));
  const auto best = store.best(gpu.name, kSquare);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->template_hash, "v1");
  EXPECT_DOUBLE_EQ(best->median_ms, 1.0);
  EXPECT_EQ(store.ranking(gpu.name, kSquare).size(), 1u);
}

TEST_F(ResultStoreTest, BestServesOnlyTheNamedPrecisionAndRowsCarryTheirTemplates) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  TemplateRecord tensor = make_template("tensor", "t1"), split = make_template("split", "s1");
  tensor.precision = Precision::tf32;
  split.precision = Precision::tf32x3;
  store.register_template(make_template("simt", "f1"));
  store.register_template(tensor);
  store.register_template(split);
  store.record_result(gpu_id, gpu, make_result("simt", "f1", "c", kSquare, ResultStatus::ok, 9.0));
  store.record_result(gpu_id, gpu,
                      make_result("tensor", "t1", "c", kSquare, ResultStatus::ok, 1.0));
  store.record_result(gpu_id, gpu, make_result("split", "s1", "c", kSquare, ResultStatus::ok, 3.0));

  // Without a precision named, the fastest fp32 result: never the faster TF32 ones.
  EXPECT_EQ(store.best(gpu.name, kSquare)->template_name, "simt");
  EXPECT_EQ(store.best(gpu.name, kSquare, std::nullopt, Precision::tf32)->template_name, "tensor");
  EXPECT_EQ(store.best(gpu.name, kSquare, std::nullopt, Precision::tf32x3)->template_name, "split");
  EXPECT_FALSE(store.best(gpu.name, kSquare, "tensor").has_value());
  EXPECT_TRUE(store.best(gpu.name, kSquare, "tensor", Precision::tf32).has_value());
  EXPECT_EQ(store.ranking(gpu.name, kSquare).size(), 3u);  // every precision: a template's own tune

  std::map<std::string, Precision> of_results;
  for (const CurrentResult& row : store.current_results()) {
    of_results[row.result.template_name] = row.precision;
  }
  EXPECT_EQ(of_results, (std::map<std::string, Precision>{{"simt", Precision::fp32},
                                                          {"split", Precision::tf32x3},
                                                          {"tensor", Precision::tf32}}));
  store.record_bench(gpu_id, BenchRecord{gpu.name, "tensor", "t1", "c", kSquare, 1.0, 0.5, ""});
  store.record_bench(gpu_id, BenchRecord{gpu.name, "simt", "f1", "c", kSquare, 9.0, 4.0, ""});
  std::map<std::string, Precision> of_bench;
  for (const BenchRecord& row : store.bench_results()) of_bench[row.template_name] = row.precision;
  EXPECT_EQ(of_bench, (std::map<std::string, Precision>{{"simt", Precision::fp32},
                                                        {"tensor", Precision::tf32}}));
}

TEST_F(ResultStoreTest, TemplateNameFilter) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("naive", "n1"));
  store.register_template(make_template("tiled", "t1"));
  store.record_result(gpu_id, gpu, make_result("naive", "n1", "c", kSquare, ResultStatus::ok, 9.0));
  store.record_result(gpu_id, gpu, make_result("tiled", "t1", "c", kSquare, ResultStatus::ok, 1.0));
  store.record_result(gpu_id, gpu, make_result("tiled", "t1", "c", kTall, ResultStatus::ok, 1.0));

  EXPECT_EQ(store.best(gpu.name, kSquare)->template_name, "tiled");
  EXPECT_EQ(store.best(gpu.name, kSquare, "naive")->template_name, "naive");
  EXPECT_EQ(store.ranking(gpu.name, kSquare, "tiled").size(), 1u);
  EXPECT_EQ(store.ranking(gpu.name, kSquare).size(), 2u);
  EXPECT_FALSE(store.best(gpu.name, kSquare, "missing").has_value());

  EXPECT_EQ(store.shapes_with_results(gpu.name), (std::vector<GemmShape>{kSquare, kTall}));
  EXPECT_EQ(store.shapes_with_results(gpu.name, "naive"), std::vector<GemmShape>{kSquare});
}

TEST_F(ResultStoreTest, HasResult) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));
  EXPECT_FALSE(store.has_result(gpu_id, "h1", "c", kSquare));

  // Failures count: a resumed tune must not compile a broken configuration again.
  store.record_result(gpu_id, gpu,
                      make_result("tiled", "h1", "c", kSquare, ResultStatus::compile_error, 0));
  EXPECT_TRUE(store.has_result(gpu_id, "h1", "c", kSquare));
  EXPECT_FALSE(store.has_result(gpu_id, "h2", "c", kSquare));
  EXPECT_FALSE(store.has_result(gpu_id, "h1", "d", kSquare));
  EXPECT_FALSE(store.has_result(gpu_id, "h1", "c", kTall));
  EXPECT_FALSE(store.has_result(gpu_id + 1, "h1", "c", kSquare));
}

// timeout, crashed and pruned (schema version 2) are stored and read back, and never served.
TEST_F(ResultStoreTest, EveryStatusIsRecorded) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));
  ResultRecord hung = make_result("tiled", "h1", "hung", kSquare, ResultStatus::timeout, 0);
  hung.detail = "no answer after 10 s";
  ResultRecord died = make_result("tiled", "h1", "died", kSquare, ResultStatus::crashed, 0);
  died.detail = "worker killed by signal 11 (Segmentation fault)";
  ResultRecord spills = make_result("tiled", "h1", "spills", kSquare, ResultStatus::pruned, 0);
  spills.detail = "ptxas: 96 bytes of spills";
  spills.registers = 255;
  spills.spill_bytes = 96;
  for (const ResultRecord& result : {hung, died, spills}) store.record_result(gpu_id, gpu, result);

  const auto recorded = store.recorded_results(gpu_id, "h1", kSquare);
  ASSERT_EQ(recorded.size(), 3u);
  expect_same_result(recorded.at("hung"), hung);
  expect_same_result(recorded.at("died"), died);
  expect_same_result(recorded.at("spills"), spills);
  EXPECT_FALSE(store.best(gpu.name, kSquare).has_value());
  const auto summary = store.summary();
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].results, 3);
  EXPECT_EQ(summary[0].ok, 0);
}

// A fuzz pass belongs to a GPU row and a template version; the most cases passed are kept.
TEST_F(ResultStoreTest, FuzzPassesKeepTheMostCasesPerGpuAndTemplateVersion) {
  ResultStore store(db_path());
  GpuRecord other_gpu = h200();
  other_gpu.memory_bytes = 80'000'000'000ULL;
  const auto gpu_id = store.register_gpu(h200());
  const auto other_gpu_id = store.register_gpu(other_gpu);
  store.register_template(make_template("tiled", "h1"));
  store.register_template(make_template("tiled", "h2"));
  store.record_fuzz_pass(gpu_id, "tiled", "h1", "TILE=16", 5);
  store.record_fuzz_pass(gpu_id, "tiled", "h1", "TILE=16", 30);
  store.record_fuzz_pass(gpu_id, "tiled", "h1", "TILE=16", 10);
  store.record_fuzz_pass(gpu_id, "tiled", "h1", "TILE=32", 30);
  store.record_fuzz_pass(other_gpu_id, "tiled", "h1", "TILE=8", 30);
  store.record_fuzz_pass(gpu_id, "tiled", "h2", "TILE=8", 100);
  EXPECT_EQ(store.fuzz_passes(gpu_id, "h1"), (std::map<std::string, int>{{"TILE=16", 30}, {"TILE=32", 30}}));
  EXPECT_EQ(store.fuzz_passes(other_gpu_id, "h1"), (std::map<std::string, int>{{"TILE=8", 30}}));
  EXPECT_EQ(store.fuzz_passes(gpu_id, "h2"), (std::map<std::string, int>{{"TILE=8", 100}}));
  EXPECT_TRUE(store.fuzz_passes(gpu_id, "h3").empty());
  EXPECT_THROW(store.record_fuzz_pass(gpu_id, "tiled", "h3", "TILE=8", 30), DatabaseError)
      << "a template version that is not registered";
}

TEST_F(ResultStoreTest, RecordedResultsOfOneGpuTemplateVersionAndShape) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  GpuRecord other_gpu = h200();
  other_gpu.memory_bytes = 80'000'000'000ULL;
  const auto gpu_id = store.register_gpu(gpu);
  const auto other_gpu_id = store.register_gpu(other_gpu);
  store.register_template(make_template("tiled", "h1"));
  store.register_template(make_template("tiled", "h2"));
  EXPECT_TRUE(store.recorded_results(gpu_id, "h1", kSquare).empty());

  ResultRecord fast = make_result("tiled", "h1", "TILE=16", kSquare, ResultStatus::ok, 1.0);
  fast.registers = 40;
  fast.static_shared_bytes = 8448;
  ResultRecord broken = make_result("tiled", "h1", "TILE=8", kSquare, ResultStatus::compile_error, 0);
  broken.detail = "error: undeclared_thing";
  ResultRecord hung = make_result("tiled", "h1", "TILE=32", kSquare, ResultStatus::timeout, 0);
  for (const ResultRecord& result : {fast, broken, hung}) store.record_result(gpu_id, gpu, result);
  // Other keys, each of which must stay out of the answer.
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "TILE=4", kTall, ResultStatus::ok, 1.0));
  store.record_result(gpu_id, gpu, make_result("tiled", "h2", "TILE=4", kSquare, ResultStatus::ok, 1.0));
  store.record_result(other_gpu_id, other_gpu,
                      make_result("tiled", "h1", "TILE=4", kSquare, ResultStatus::ok, 1.0));

  const auto recorded = store.recorded_results(gpu_id, "h1", kSquare);
  ASSERT_EQ(recorded.size(), 3u);
  expect_same_result(recorded.at("TILE=16"), fast);
  expect_same_result(recorded.at("TILE=8"), broken);
  expect_same_result(recorded.at("TILE=32"), hung);
  for (const auto& [config, result] : recorded) {
    EXPECT_EQ(config, result.config);
    EXPECT_FALSE(result.recorded_at.empty());
  }
  // An old template version is still answered for: resuming is by version, not by name.
  EXPECT_EQ(store.recorded_results(gpu_id, "h2", kSquare).size(), 1u);
  EXPECT_EQ(store.recorded_results(gpu_id, "h1", kTall).size(), 1u);
  EXPECT_EQ(store.recorded_results(other_gpu_id, "h1", kSquare).size(), 1u);
  EXPECT_TRUE(store.recorded_results(gpu_id, "h3", kSquare).empty());
  EXPECT_TRUE(store.recorded_results(gpu_id, "h1", GemmShape{7, 7, 7}).empty());

  // A replaced result is answered in its new form.
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "TILE=32", kSquare, ResultStatus::ok, 3.0));
  EXPECT_EQ(store.recorded_results(gpu_id, "h1", kSquare).at("TILE=32").status, ResultStatus::ok);
}

TEST_F(ResultStoreTest, RecordingAgainReplacesTheResult) {
  ResultStore store(db_path());
  GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "h1"));
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 1.0));

  gpu.driver_version = 13010;
  store.record_result(gpu_id, gpu, make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 2.0));
  auto ranking = store.ranking(gpu.name, kSquare);
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_DOUBLE_EQ(ranking[0].median_ms, 2.0);
  EXPECT_EQ(query_file(db_path(), "SELECT driver_version FROM results"), "13010");

  ResultRecord wrong = make_result("tiled", "h1", "c", kSquare, ResultStatus::wrong_result, 0.5);
  wrong.detail = "C[3,4] = 1 expected 2";
  store.record_result(gpu_id, gpu, wrong);
  EXPECT_FALSE(store.best(gpu.name, kSquare).has_value());
  const auto summary = store.summary();
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].results, 1);
  EXPECT_EQ(summary[0].ok, 0);
  EXPECT_EQ(query_file(db_path(), "SELECT detail FROM results"), wrong.detail);
}

TEST_F(ResultStoreTest, UnregisteredTemplateIsRefused) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  EXPECT_THROW(store.record_result(gpu_id, gpu,
                                   make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 1.0)),
               DatabaseError);
  store.register_template(make_template("tiled", "h1"));
  // An unknown GPU id breaks the foreign key.
  EXPECT_THROW(store.record_result(gpu_id + 1, gpu,
                                   make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 1.0)),
               DatabaseError);
  EXPECT_TRUE(store.summary().empty());
}

TEST_F(ResultStoreTest, DataSurvivesReopening) {
  const GpuRecord gpu = h200();
  std::int64_t gpu_id = 0;
  {
    ResultStore store(db_path());
    gpu_id = store.register_gpu(gpu);
    store.register_template(make_template("tiled", "h1"));
    store.record_result(gpu_id, gpu, make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 1.5));
  }
  ResultStore store(db_path());
  EXPECT_EQ(store.register_gpu(gpu), gpu_id);
  ASSERT_EQ(store.templates().size(), 1u);
  const auto best = store.best(gpu.name, kSquare);
  ASSERT_TRUE(best.has_value());
  EXPECT_DOUBLE_EQ(best->median_ms, 1.5);
  EXPECT_TRUE(store.has_result(gpu_id, "h1", "c", kSquare));
}

TEST_F(ResultStoreTest, UsesWalModeAndRecordsTheSchemaVersion) {
  { ResultStore store(db_path()); }
  EXPECT_EQ(query_file(db_path(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_file(db_path(), "PRAGMA user_version"), "8");
}

TEST_F(ResultStoreTest, EmptyFileGetsTheSchema) {
  std::ofstream(db_path()).close();
  ResultStore store(db_path());
  store.register_template(make_template("tiled", "h1"));
  EXPECT_EQ(store.templates().size(), 1u);
}

TEST_F(ResultStoreTest, UnwritablePathThrowsNamingIt) {
  for (const fs::path& path : {fs::path("/nonexistent/dir/x.db"), dir_}) {
    try {
      ResultStore store(path);
      ADD_FAILURE() << "opened " << path;
    } catch (const DatabaseError& error) {
      EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
    }
  }
}

TEST_F(ResultStoreTest, NonDatabaseFileThrows) {
  {
    std::ofstream garbage(db_path(), std::ios::binary);
    std::mt19937 random(42);
    for (int i = 0; i < 8192; ++i) garbage.put(static_cast<char>(random()));
  }
  try {
    ResultStore store(db_path());
    ADD_FAILURE() << "opened a file of garbage";
  } catch (const DatabaseError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(db_path().string()), std::string::npos) << message;
    EXPECT_NE(message.find("not a database"), std::string::npos) << message;
  }
}

TEST_F(ResultStoreTest, ForeignSchemaThrows) {
  const fs::path other = dir_ / "other.db";
  query_file(other, "CREATE TABLE notes (text TEXT)");
  EXPECT_THROW(ResultStore{other}, DatabaseError);

  { ResultStore store(db_path()); }
  query_file(db_path(), "PRAGMA user_version = 99");
  try {
    ResultStore store(db_path());
    ADD_FAILURE() << "opened schema version 99";
  } catch (const DatabaseError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(db_path().string()), std::string::npos) << message;
    EXPECT_NE(message.find("unsupported schema version 99"), std::string::npos) << message;
  }
}

TEST_F(ResultStoreTest, TwoStoresOnOneFileInterleave) {
  ResultStore first(db_path());
  ResultStore second(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = first.register_gpu(gpu);
  EXPECT_EQ(second.register_gpu(gpu), gpu_id);
  first.register_template(make_template("tiled", "h1"));
  for (int i = 0; i < 10; ++i) {
    ResultStore& store = i % 2 == 0 ? first : second;
    store.record_result(gpu_id, gpu, make_result("tiled", "h1", "c" + std::to_string(i), kSquare,
                                                 ResultStatus::ok, 1.0 + i));
  }
  EXPECT_EQ(first.ranking(gpu.name, kSquare).size(), 10u);
  EXPECT_EQ(second.ranking(gpu.name, kSquare).size(), 10u);
  EXPECT_EQ(ResultStore(db_path()).ranking(gpu.name, kSquare).size(), 10u);
}

TEST_F(ResultStoreTest, ConcurrentWritersWaitForEachOther) {
  { ResultStore store(db_path()); }
  const GpuRecord gpu = h200();
  auto writer = [&](const std::string& prefix) {
    ResultStore store(db_path());
    const auto gpu_id = store.register_gpu(gpu);
    store.register_template(make_template("tiled", "h1"));
    for (int i = 0; i < 50; ++i) {
      store.record_result(gpu_id, gpu, make_result("tiled", "h1", prefix + std::to_string(i),
                                                   kSquare, ResultStatus::ok, 1.0));
    }
  };
  std::thread a(writer, "a");
  std::thread b(writer, "b");
  a.join();
  b.join();
  EXPECT_EQ(ResultStore(db_path()).ranking(gpu.name, kSquare).size(), 100u);
}

// Tuners started together on a new file all get it open, one of them creating the schema.
TEST_F(ResultStoreTest, ConcurrentOpeningOfANewFile) {
  for (int round = 0; round < 20; ++round) {
    const fs::path path = dir_ / ("new-" + std::to_string(round) + ".db");
    std::atomic<int> failures = 0;
    std::vector<std::thread> openers;
    for (int i = 0; i < 4; ++i) {
      openers.emplace_back([&] {
        try {
          ResultStore store(path);
          store.register_template(make_template("tiled", "h1"));
        } catch (const DatabaseError& error) {
          ADD_FAILURE() << error.what();
          ++failures;
        }
      });
    }
    for (auto& opener : openers) opener.join();
    ASSERT_EQ(failures, 0) << "round " << round;
  }
}

TEST_F(ResultStoreTest, SummaryCounts) {
  ResultStore store(db_path());
  const GpuRecord gpu = h200();
  const auto gpu_id = store.register_gpu(gpu);
  store.register_template(make_template("tiled", "v1"));
  ResultRecord a = make_result("tiled", "v1", "a", kSquare, ResultStatus::ok, 2.0);
  ResultRecord b = make_result("tiled", "v1", "b", kSquare, ResultStatus::ok, 1.0);
  store.record_result(gpu_id, gpu, a);
  store.record_result(gpu_id, gpu, b);
  store.record_result(gpu_id, gpu,
                      make_result("tiled", "v1", "c", kSquare, ResultStatus::launch_error, 0));
  store.record_result(gpu_id, gpu,
                      make_result("tiled", "v1", "d", kTall, ResultStatus::device_limit, 0));
  store.register_template(make_template("tiled", "v2"));
  store.record_result(gpu_id, gpu, make_result("tiled", "v2", "a", kSquare, ResultStatus::ok, 4.0));

  const auto rows = store.summary();
  ASSERT_EQ(rows.size(), 3u);
  // Current version first, then the older one by shape.
  EXPECT_EQ(rows[0].gpu_name, gpu.name);
  EXPECT_EQ(rows[0].template_name, "tiled");
  EXPECT_EQ(rows[0].template_hash, "v2");
  EXPECT_TRUE(rows[0].template_current);
  EXPECT_EQ(rows[0].results, 1);
  EXPECT_EQ(rows[0].ok, 1);

  EXPECT_EQ(rows[1].template_hash, "v1");
  EXPECT_FALSE(rows[1].template_current);
  EXPECT_EQ(rows[1].shape, kSquare);
  EXPECT_EQ(rows[1].results, 3);
  EXPECT_EQ(rows[1].ok, 2);
  ASSERT_TRUE(rows[1].best_tflops.has_value());
  EXPECT_DOUBLE_EQ(*rows[1].best_tflops, b.tflops);

  EXPECT_EQ(rows[2].template_hash, "v1");
  EXPECT_EQ(rows[2].shape, kTall);
  EXPECT_EQ(rows[2].results, 1);
  EXPECT_EQ(rows[2].ok, 0);
  EXPECT_FALSE(rows[2].best_tflops.has_value());
}

// --- read-only opening (query, list, strategies): nothing about the file changes ------------

// A database with one result, in rollback-journal (DELETE) mode as another program may keep it.
void prepare_in_delete_mode(const fs::path& path) {
  {
    ResultStore store(path);
    const std::int64_t gpu_id = store.register_gpu(h200());
    store.register_template(make_template("tiled", "h1"));
    store.record_result(gpu_id, h200(), make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 1.5));
  }
  EXPECT_EQ(query_file(path, "PRAGMA journal_mode = DELETE"), "delete");
}

// The file's bytes as a hash, for before and after (the bytes themselves would print as pages).
std::string hash_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return fnv1a_hex(std::string(std::istreambuf_iterator<char>(in), {}));
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(ResultStoreTest, ReadOnlyOpeningReadsAndChangesNothing) {
  prepare_in_delete_mode(db_path());
  const std::string before = hash_of(db_path());
  {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    ASSERT_TRUE(store.best("NVIDIA H200", kSquare).has_value());
    EXPECT_EQ(store.best("NVIDIA H200", kSquare)->config, "c");
    EXPECT_EQ(store.summary().size(), 1u);
    EXPECT_EQ(store.templates().size(), 1u);
    EXPECT_EQ(store.gpus().size(), 1u);
    EXPECT_THROW(store.register_template(make_template("naive", "h2")), DatabaseError);
  }
  EXPECT_EQ(hash_of(db_path()), before) << "the file was changed";
  EXPECT_EQ(query_file(db_path(), "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(files_in(dir_), std::vector<std::string>{"tiletune.db"}) << "no -wal, -shm or -journal";
}

TEST_F(ResultStoreTest, ReadOnlyOpeningOfAWriteProtectedFileReads) {
  prepare_in_delete_mode(db_path());
  const std::string before = hash_of(db_path());
  fs::permissions(db_path(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    EXPECT_TRUE(store.best("NVIDIA H200", kSquare).has_value());
  }
  EXPECT_EQ(hash_of(db_path()), before);
}

// A WAL database (as tune leaves it) in a folder this process cannot write: SQLite's readers
// cannot make the -shm file they share there, and the store reads the file as it stands.
TEST_F(ResultStoreTest, ReadOnlyOpeningOfAWalFileInAWriteProtectedFolderReads) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write anywhere: run the tests as another user to check this";
  {
    ResultStore store(db_path());
    const std::int64_t gpu_id = store.register_gpu(h200());
    store.register_template(make_template("tiled", "h1"));
    store.record_result(gpu_id, h200(), make_result("tiled", "h1", "c", kSquare, ResultStatus::ok, 1.5));
  }
  const std::string before = hash_of(db_path());
  fs::permissions(db_path(), fs::perms::owner_read);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  std::optional<ResultRecord> best;
  try {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    best = store.best("NVIDIA H200", kSquare);
  } catch (const DatabaseError& error) {
    ADD_FAILURE() << error.what();
  }
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_TRUE(best.has_value());
  EXPECT_EQ(hash_of(db_path()), before);
  EXPECT_EQ(files_in(dir_), std::vector<std::string>{"tiletune.db"});
}

TEST_F(ResultStoreTest, ReadOnlyOpeningOfAMissingOrEmptyFileCreatesNothing) {
  try {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    ADD_FAILURE() << "opened a missing file";
  } catch (const DatabaseError& error) {
    EXPECT_EQ(std::string(error.what()), db_path().string() + ": no such database (run 'tiletune tune' first)");
  }
  EXPECT_TRUE(files_in(dir_).empty());

  std::ofstream(db_path()).close();
  try {
    ResultStore store(db_path(), ResultStore::Access::read_only);
    ADD_FAILURE() << "opened an empty file";
  } catch (const DatabaseError& error) {
    EXPECT_EQ(std::string(error.what()), db_path().string() + ": no tiletune schema yet (run 'tiletune tune' first)");
  }
  EXPECT_EQ(fs::file_size(db_path()), 0u) << "no schema was created";
  EXPECT_EQ(files_in(dir_), std::vector<std::string>{"tiletune.db"});
}

TEST_F(ResultStoreTest, ReadOnlyOpeningRefusesWhatIsNotATiletuneDatabase) {
  const fs::path other = dir_ / "other.db";
  query_file(other, "CREATE TABLE notes (text TEXT)");
  EXPECT_THROW((ResultStore{other, ResultStore::Access::read_only}), DatabaseError);
  { ResultStore store(db_path()); }
  query_file(db_path(), "PRAGMA user_version = 99");
  EXPECT_THROW((ResultStore{db_path(), ResultStore::Access::read_only}), DatabaseError);
  const fs::path garbage = dir_ / "garbage.db";
  std::ofstream(garbage, std::ios::binary) << std::string(4096, '\x5a');
  EXPECT_THROW((ResultStore{garbage, ResultStore::Access::read_only}), DatabaseError);
  EXPECT_EQ(hash_of(garbage), fnv1a_hex(std::string(4096, '\x5a')));
}

}  // namespace
}  // namespace tiletune

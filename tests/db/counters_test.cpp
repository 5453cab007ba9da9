// The counters `tiletune profile` records per configuration, GPU and shape, and the bench rows
// (ours against cuBLAS) the report reads: replaced per key in one transaction, listed in a fixed
// order, filtered, and only for current template versions.
#include "db/result_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/result_records.h"

namespace tiletune {
namespace {

class CountersTest : public ResultStoreTest {};

CounterRecord make_counters(const std::string& name, const std::string& hash,
                            const std::string& config, GemmShape shape,
                            std::map<std::string, double> values) {
  CounterRecord record;
  record.template_name = name;
  record.template_hash = hash;
  record.config = config;
  record.shape = shape;
  record.values = std::move(values);
  record.ncu_version = "2025.3.1";
  return record;
}

BenchRecord make_bench(const std::string& name, const std::string& hash, const std::string& config,
                       GemmShape shape, double ours_ms, double cublas_ms) {
  BenchRecord row;
  row.template_name = name;
  row.template_hash = hash;
  row.config = config;
  row.shape = shape;
  row.ours_ms = ours_ms;
  row.cublas_ms = cublas_ms;
  return row;
}

TEST_F(CountersTest, RoundTripOfEveryField) {
  ResultStore store(db_path());
  const auto gpu_id = store.register_gpu(h200());
  store.register_template(make_template("tiled", "h1"));
  // A large count and a fraction: stored as REAL, read back exactly.
  store.record_counters(gpu_id, make_counters("tiled", "h1", "TILE=32", kSquare,
                                              {{"shared_ld_wavefronts_excessive", 1015808},
                                               {"achieved_occupancy_pct", 66.53},
                                               {"dram_read_bytes", 12'884'901'888.0}}));
  const auto records = store.counters();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].gpu_name, "NVIDIA H200");
  EXPECT_EQ(records[0].template_name, "tiled");
  EXPECT_EQ(records[0].template_hash, "h1");
  EXPECT_EQ(records[0].config, "TILE=32");
  EXPECT_EQ(records[0].shape, kSquare);
  EXPECT_EQ(records[0].ncu_version, "2025.3.1");
  EXPECT_EQ(records[0].recorded_at.size(), 19u) << records[0].recorded_at;
  EXPECT_EQ(records[0].values, (std::map<std::string, double>{
                                   {"shared_ld_wavefronts_excessive", 1015808},
                                   {"achieved_occupancy_pct", 66.53},
                                   {"dram_read_bytes", 12'884'901'888.0}}));
}

// A new profile of a key replaces its metrics whole: one this ncu did not read is gone.
TEST_F(CountersTest, RecordingAgainReplacesEveryMetricOfTheKey) {
  ResultStore store(db_path());
  const auto gpu_id = store.register_gpu(h200());
  store.register_template(make_template("tiled", "h1"));
  store.record_counters(gpu_id, make_counters("tiled", "h1", "TILE=32", kSquare, {{"a", 1}, {"b", 2}}));
  store.record_counters(gpu_id, make_counters("tiled", "h1", "TILE=16", kSquare, {{"a", 7}}));
  auto again = make_counters("tiled", "h1", "TILE=32", kSquare, {{"b", 3}});
  again.ncu_version = "2025.4.0";
  store.record_counters(gpu_id, again);
  const auto records = store.counters();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].config, "TILE=16");
  EXPECT_EQ(records[0].values, (std::map<std::string, double>{{"a", 7}}));
  EXPECT_EQ(records[1].config, "TILE=32");
  EXPECT_EQ(records[1].values, (std::map<std::string, double>{{"b", 3}}));
  EXPECT_EQ(records[1].ncu_version, "2025.4.0");
}

// One transaction: a failure halfway (an unregistered template) leaves the earlier metrics.
TEST_F(CountersTest, UnregisteredTemplateIsRefusedAndNothingIsLost) {
  ResultStore store(db_path());
  const auto gpu_id = store.register_gpu(h200());
  store.register_template(make_template("tiled", "h1"));
  store.record_counters(gpu_id, make_counters("tiled", "h1", "TILE=32", kSquare, {{"a", 1}}));
  try {
    store.record_counters(gpu_id, make_counters("tiled", "nope", "TILE=32", kSquare, {{"a", 2}}));
    ADD_FAILURE() << "recorded";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("template version nope is not registered"),
              std::string::npos)
        << error.what();
  }
  try {
    store.record_bench(gpu_id, make_bench("tiled", "nope", "TILE=32", kSquare, 1, 2));
    ADD_FAILURE() << "recorded";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("template version nope is not registered"),
              std::string::npos)
        << error.what();
  }
  ASSERT_EQ(store.counters().size(), 1u);
  EXPECT_EQ(store.counters()[0].values.at("a"), 1);
  EXPECT_TRUE(store.bench_results().empty());
}

// Ordered by GPU, template, shape, configuration; filtered by GPU and template name; a template
// version no longer current is not shown.
TEST_F(CountersTest, OrderFiltersAndCurrentVersionsOnly) {
  ResultStore store(db_path());
  GpuRecord h100 = h200();
  h100.name = "NVIDIA H100";
  const auto h200_id = store.register_gpu(h200());
  const auto h100_id = store.register_gpu(h100);
  store.register_template(make_template("tiled", "h1"));
  store.register_template(make_template("naive", "n1"));
  store.record_counters(h200_id, make_counters("tiled", "h1", "TILE=32", kTall, {{"a", 1}}));
  store.record_counters(h200_id, make_counters("tiled", "h1", "TILE=16", kTall, {{"a", 2}}));
  store.record_counters(h200_id, make_counters("tiled", "h1", "TILE=64", kSquare, {{"a", 3}}));
  store.record_counters(h200_id, make_counters("naive", "n1", "B=1", kTall, {{"a", 4}}));
  store.record_counters(h100_id, make_counters("tiled", "h1", "TILE=32", kTall, {{"a", 5}}));

  std::vector<std::string> order;
  for (const auto& record : store.counters()) {
    order.push_back(record.gpu_name + " " + record.template_name + " " + record.shape.to_string() +
                    " " + record.config);
  }
  EXPECT_EQ(order, (std::vector<std::string>{
                       "NVIDIA H100 tiled 4096x256x512 TILE=32",
                       "NVIDIA H200 naive 4096x256x512 B=1",
                       "NVIDIA H200 tiled 1024x1024x1024 TILE=64",
                       "NVIDIA H200 tiled 4096x256x512 TILE=16",
                       "NVIDIA H200 tiled 4096x256x512 TILE=32",
                   }));
  EXPECT_EQ(store.counters("NVIDIA H200").size(), 4u);
  EXPECT_EQ(store.counters("NVIDIA H200", "tiled").size(), 3u);
  EXPECT_EQ(store.counters(std::nullopt, "naive").size(), 1u);
  EXPECT_TRUE(store.counters("NVIDIA A100").empty());

  store.register_template(make_template("tiled", "h2"));  // a new version of tiled
  EXPECT_EQ(store.counters().size(), 1u) << "only naive is current with counters";
  EXPECT_EQ(query_file(db_path(), "SELECT count(*) FROM counters"), "5") << "kept, not served";
}

TEST_F(CountersTest, BenchRowsRoundTripReplaceAndFilter) {
  ResultStore store(db_path());
  GpuRecord h100 = h200();
  h100.name = "NVIDIA H100";
  const auto h200_id = store.register_gpu(h200());
  const auto h100_id = store.register_gpu(h100);
  store.register_template(make_template("tiled", "h1"));
  store.record_bench(h200_id, make_bench("tiled", "h1", "TILE=32", kTall, 2.0, 1.0));
  store.record_bench(h200_id, make_bench("tiled", "h1", "TILE=32", kSquare, 1.5, 0.5));
  store.record_bench(h100_id, make_bench("tiled", "h1", "TILE=32", kSquare, 1.75, 0.625));
  store.record_bench(h200_id, make_bench("tiled", "h1", "TILE=32", kTall, 2.5, 1.25));  // replaces

  const auto rows = store.bench_results();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].gpu_name, "NVIDIA H100");
  EXPECT_EQ(rows[1].gpu_name, "NVIDIA H200");
  EXPECT_EQ(rows[1].shape, kSquare);
  EXPECT_EQ(rows[1].template_name, "tiled");
  EXPECT_EQ(rows[1].template_hash, "h1");
  EXPECT_EQ(rows[1].config, "TILE=32");
  EXPECT_EQ(rows[1].ours_ms, 1.5);
  EXPECT_EQ(rows[1].cublas_ms, 0.5);
  EXPECT_EQ(rows[2].shape, kTall);
  EXPECT_EQ(rows[2].ours_ms, 2.5);
  EXPECT_EQ(rows[2].cublas_ms, 1.25);
  EXPECT_EQ(rows[2].recorded_at.size(), 19u);
  EXPECT_EQ(store.bench_results("NVIDIA H200").size(), 2u);
  EXPECT_TRUE(store.bench_results("NVIDIA A100").empty());

  store.register_template(make_template("tiled", "h2"));
  EXPECT_TRUE(store.bench_results().empty()) << "an old template version's rows are not served";
}

// Read-only opening (the report, query) reads what a writer recorded.
TEST_F(CountersTest, ReadOnlyOpeningReadsCountersAndBenchRows) {
  {
    ResultStore store(db_path());
    const auto gpu_id = store.register_gpu(h200());
    store.register_template(make_template("tiled", "h1"));
    store.record_counters(gpu_id, make_counters("tiled", "h1", "TILE=32", kSquare, {{"a", 1}}));
    store.record_bench(gpu_id, make_bench("tiled", "h1", "TILE=32", kSquare, 1, 2));
  }
  ResultStore reader(db_path(), ResultStore::Access::read_only);
  ASSERT_EQ(reader.counters().size(), 1u);
  ASSERT_EQ(reader.bench_results().size(), 1u);
}

}  // namespace
}  // namespace tiletune

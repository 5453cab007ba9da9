// The tuning database: one SQLite file (./tiletune.db by default) that records GPUs, template
// versions, configurations, shapes and every evaluation's result, and answers "what is the fastest
// correct configuration for this GPU and shape".
//
// A GPU is identified by what survives a driver update (name, compute capability, SM count,
// memory); the driver and NVRTC versions are kept with each result. A template is identified by
// its name and the hash of its source: results of any other version than the current one (the one
// most recently registered under that name) are never served as best.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/core/gemm_shape.h"
#include "tuner/core/precision.h"
#include "tuner/core/records.h"  // GpuRecord, TemplateRecord, ResultStatus, ResultRecord

struct sqlite3;

namespace tiletune {

// Cannot open, create or write the database; the message names the path and SQLite's reason.
class DatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A row of `tiletune list`: what is recorded, grouped by GPU, template version, shape,
// transposes and batch.
struct ResultSummary {
  std::string gpu_name;
  std::string template_name;
  std::string template_hash;
  bool template_current = false;
  GemmShape shape;
  Transposes op;
  std::int64_t batch = 1;
  int results = 0;
  int ok = 0;
  std::optional<double> best_tflops;

  TunedFor tuned_for() const { return {op, batch}; }
};

// An ok result of a current template version with the GPU row it was measured on and the most
// fuzz cases its configuration passed there (0: none recorded, or a schema without fuzz passes).
struct CurrentResult {
  GpuRecord gpu;
  ResultRecord result;
  int fuzz_cases = 0;
  Precision precision = Precision::fp32;  // what its template declares
};

// A problem the runtime library had no exact record for (Options::record_misses), on a GPU (by
// name) for a template (by name): what `tiletune tune --missed` tunes.
struct MissedProblem {
  std::string gpu_name;
  std::string template_name;
  GemmProblem problem;
  int count = 0;           // how many times it was recorded (once per process that met it)
  std::string first_seen;  // UTC "YYYY-MM-DD HH:MM:SS"
  std::string last_seen;
};

// The hardware counters of one configuration of a template version on a GPU and shape, by
// tiletune's short metric names (tuner/profiling/counter_metrics.h): what `tiletune profile` stores.
struct CounterRecord {
  std::string gpu_name, template_name, template_hash, config;
  GemmShape shape;
  std::map<std::string, double> values;
  std::string ncu_version, recorded_at;  // recorded_at: filled by the store, UTC
};

// One configuration a search strategy settled, in the strategy's order (seq from 1 per template
// version and shape within one tune process, run_id): what the report plots as convergence.
// The strategy of a runtime library's first-call trial (Options::trial_candidates): its rows are
// the candidates it timed at a missed shape, in the order timed.
inline constexpr const char* kTrialStrategy = "trial";

struct TraceRecord {
  std::string run_id;  // 16 hex digits, one per tune process
  std::string gpu_name, template_name, template_hash;
  GemmShape shape;
  int seq = 0;
  std::string strategy, config;
  ResultStatus status = ResultStatus::ok;
  double median_ms = 0;           // 0 unless ok
  bool recorded_earlier = false;  // taken from an earlier record, not measured by this run
  std::string recorded_at;        // filled by the store, UTC
};

// A configuration's time and cuBLAS's on the same GPU and shape. cuBLAS computed in the
// template's precision's yardstick (tools/bench/cublas_sgemm.h): TF32 for tf32, else SGEMM.
struct BenchRecord {
  std::string gpu_name, template_name, template_hash, config;
  GemmShape shape;
  double ours_ms = 0, cublas_ms = 0;
  std::string recorded_at;  // filled by the store, UTC
  Precision precision = Precision::fp32;  // the template's, read with the row (not written)
};

class ResultStore {
 public:
  enum class Access {
    // Opens or creates the database, switches it to WAL mode, creates, checks or migrates (from
    // versions 1 to 6, each step in one transaction) its schema.
    read_write,
    // For what only reads (query, list, strategies): the file must exist and is never changed, nor
    // its journal mode, nor any file created beside it (except the -shm and -wal files a reader of
    // a WAL database needs, where the folder is writable). Older schema versions are read as they
    // are (fuzz_passes, which version 3 brought, asks for a tune to migrate them; a file older
    // than version 4 has no missed problems, one older than version 5 no counters and no bench
    // rows, one older than version 6 no search traces and only fp32 templates); a read-only file
    // in a read-only folder is read too.
    read_only,
  };

  // Throws DatabaseError with the path and SQLite's message when the file cannot be opened (or,
  // to write, written), is not a tiletune database, or has a schema version it cannot read.
  explicit ResultStore(const std::filesystem::path& path, Access access = Access::read_write);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // Insert or update (driver/NVRTC versions, clock) and return the GPU's row id. Safe when
  // several processes register the same GPU at once: they all get the same id.
  std::int64_t register_gpu(const GpuRecord& gpu);
  // Insert if new and mark this version as the current one of its name (safe under concurrent
  // processes likewise).
  void register_template(const TemplateRecord& tmpl);

  // Records one evaluation (replacing an earlier result for the same GPU, template version,
  // configuration and shape). Written in its own transaction: nothing recorded is lost if the
  // process dies afterwards.
  void record_result(std::int64_t gpu_id, const GpuRecord& gpu, const ResultRecord& result);

  // Records that a configuration of a registered template version passed `cases` fuzz cases on
  // the GPU row; the most cases it has passed are kept. In its own transaction, like a result.
  void record_fuzz_pass(std::int64_t gpu_id, const std::string& template_name,
                        const std::string& template_hash, const std::string& config, int cases);
  // The configurations of the template version that passed their fuzz on the GPU row, with the
  // most cases each passed.
  std::map<std::string, int> fuzz_passes(std::int64_t gpu_id, const std::string& template_hash) const;

  // Whether a result exists for these keys (so that a resumed tune measures nothing twice).
  bool has_result(std::int64_t gpu_id, const std::string& template_hash, const std::string& config,
                  const GemmShape& shape, TunedFor kind = {}) const;
  // Every result (any status) for the GPU row, template version, shape, transposes and batch,
  // keyed by configuration: what a resumed tune can skip, read in one query.
  std::map<std::string, ResultRecord> recorded_results(std::int64_t gpu_id,
                                                       const std::string& template_hash,
                                                       const GemmShape& shape,
                                                       TunedFor kind = {}) const;

  // The fastest ok result for the GPU (matched by name), shape, transposes and batch among current
  // template versions that declare `precision`, optionally only of one template name: a caller
  // that names no precision is never handed a TF32 template's result.
  std::optional<ResultRecord> best(const std::string& gpu_name, const GemmShape& shape,
                                   const std::optional<std::string>& template_name = {},
                                   Precision precision = Precision::fp32, TunedFor kind = {}) const;
  // Every ok result for the GPU, shape, transposes and batch, fastest first (current template
  // versions only; equal times by template name, then configuration text).
  std::vector<ResultRecord> ranking(const std::string& gpu_name, const GemmShape& shape,
                                    const std::optional<std::string>& template_name = {},
                                    TunedFor kind = {}) const;
  // The same, of the current template versions that declare `precision` only.
  std::vector<ResultRecord> ranking(const std::string& gpu_name, const GemmShape& shape,
                                    const std::optional<std::string>& template_name,
                                    Precision precision, TunedFor kind) const {
    return ranked_results(gpu_name, shape, template_name, precision, kind);
  }
  // Every ok result of the current template versions, on every GPU, shape, transposes and batch,
  // in one query (what the runtime library selects from), in the order they were recorded.
  std::vector<CurrentResult> current_results() const;
  // Shapes that have an ok result for the GPU, transposes and batch (current versions), for a
  // nearest-shape answer.
  std::vector<GemmShape> shapes_with_results(const std::string& gpu_name,
                                             const std::optional<std::string>& template_name = {},
                                             TunedFor kind = {}) const;
  // The templates recorded, the current version's source included.
  std::vector<TemplateRecord> templates(bool current_only = true) const;
  std::vector<GpuRecord> gpus() const;
  std::vector<ResultSummary> summary() const;

  // Records that the runtime library met a problem without an exact record: a new row, or one
  // more count (and last_seen) on the problem's row. In its own transaction, like a result, and
  // safe when several processes record the same problem at once.
  void record_miss(const std::string& gpu_name, const std::string& template_name,
                   const GemmProblem& problem);
  // The missed problems, optionally of one GPU and one template, ordered by GPU, template, sizes
  // and leading dimensions.
  std::vector<MissedProblem> missed_problems(const std::optional<std::string>& gpu_name = {},
                                             const std::optional<std::string>& template_name = {}) const;
  // Forgets the missed problems of a shape (every leading dimension) for the GPU and template:
  // once tuned, they are misses no more. Returns how many rows went.
  int forget_misses(const std::string& gpu_name, const std::string& template_name,
                    const GemmShape& shape);

  using CounterRecord = tiletune::CounterRecord;
  using BenchRecord = tiletune::BenchRecord;
  // Replaces the counters recorded for the GPU row, template version (registered), configuration
  // and shape by these values, in one transaction. gpu_name in the record is not read.
  void record_counters(std::int64_t gpu_id, const CounterRecord& counters);
  // The counters of current template versions, optionally of one GPU (by name) and one template,
  // one record per GPU, template, shape and configuration, in that order. A read-only file older
  // than version 5 has none.
  std::vector<CounterRecord> counters(const std::optional<std::string>& gpu_name = {},
                                      const std::optional<std::string>& template_name = {}) const;
  // Records (or replaces) a configuration's time against cuBLAS's, in its own transaction.
  // gpu_name in the row is not read.
  void record_bench(std::int64_t gpu_id, const BenchRecord& row);
  // The bench rows of current template versions, optionally of one GPU (by name), ordered by GPU,
  // template, shape and configuration. A read-only file older than version 5 has none.
  std::vector<BenchRecord> bench_results(const std::optional<std::string>& gpu_name = {}) const;

  // Appends one step of a search (its template version registered), in its own transaction.
  // gpu_name in the record is not read.
  void record_trace(std::int64_t gpu_id, const TraceRecord& step);
  // The search traces of current template versions, ordered by GPU, template, shape, run and
  // seq. A read-only file older than version 6 has none.
  std::vector<TraceRecord> search_traces() const;

 private:
  // ranking(), of the templates declaring `precision` only where one is given.
  std::vector<ResultRecord> ranked_results(const std::string& gpu_name, const GemmShape& shape,
                                           const std::optional<std::string>& template_name,
                                           std::optional<Precision> precision, TunedFor kind) const;
  // The transposes column of results as `table` names them; 'nn' in a read-only file older than
  // version 7, whose results are all C = A * B.
  std::string op_column(const char* table) const {
    return schema_version_ < 7 ? "'nn'" : std::string(table) + ".op";
  }
  // The batch column likewise: 1 in a read-only file older than version 8.
  std::string batch_column(const char* table) const {
    return schema_version_ < 8 ? "1" : std::string(table) + ".batch";
  }
  // "<op> = ?N AND <batch> = ?N+1": what a lookup of a record tuned for a TunedFor matches.
  std::string tuned_for_condition(const char* table, int parameter) const {
    return op_column(table) + " = ?" + std::to_string(parameter) + " AND " + batch_column(table) +
           " = ?" + std::to_string(parameter + 1);
  }

  int schema_version_ = 0;  // read-only, an older version may be read as it is
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace tiletune

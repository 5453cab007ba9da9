// Interim on the bundle branch: the selection branch writes this file (the lead keeps that one).
// sort_choices and find_template as record_set.h specifies them; load_database_records through
// ResultStore's public queries, without fuzz cases (ResultStore gives no GPU row id to read
// them by when read only).
#include "tuner/runtime/record_set.h"

#include <algorithm>
#include <tuple>

#include "db/result_store.h"

namespace tiletune::runtime {

const RecordedTemplate* RecordSet::find_template(const std::string& name) const {
  for (const RecordedTemplate& t : templates) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void sort_choices(RecordSet& records) {
  auto key = [&](const RecordedChoice& c) {
    return std::tie(records.gpus[c.gpu].name, records.templates[c.templ].name, c.shape,
                    c.median_ms, c.config);
  };
  std::stable_sort(records.choices.begin(), records.choices.end(),
                   [&](const RecordedChoice& a, const RecordedChoice& b) { return key(a) < key(b); });
}

RecordSet load_database_records(const std::filesystem::path& database) {
  const ResultStore store(database, ResultStore::Access::read_only);
  RecordSet records;
  for (const GpuRecord& g : store.gpus()) {
    records.gpus.push_back({g.name, g.cc_major, g.cc_minor, g.sm_count, g.memory_bytes});
  }
  std::sort(records.gpus.begin(), records.gpus.end(),
            [](const RecordedGpu& a, const RecordedGpu& b) { return a.name < b.name; });
  for (const TemplateRecord& t : store.templates(true)) {
    RecordedTemplate recorded{t.name, t.source_hash, t.path, t.source, std::nullopt};
    try {
      recorded.parsed = parse_template(t.source, t.path.empty() ? t.name : t.path);
    } catch (const TemplateError&) {
    }
    records.templates.push_back(std::move(recorded));
  }
  std::sort(records.templates.begin(), records.templates.end(),
            [](const RecordedTemplate& a, const RecordedTemplate& b) { return a.name < b.name; });
  for (std::size_t g = 0; g < records.gpus.size(); ++g) {
    for (std::size_t t = 0; t < records.templates.size(); ++t) {
      const std::string& gpu = records.gpus[g].name;
      const std::string& name = records.templates[t].name;
      for (const GemmShape& shape : store.shapes_with_results(gpu, name)) {
        for (const ResultRecord& r : store.ranking(gpu, shape, name)) {
          records.choices.push_back({g, t, r.config, r.shape, r.median_ms, r.min_ms, r.max_ms,
                                     r.runs, r.tflops, r.registers, r.static_shared_bytes,
                                     r.dynamic_shared_bytes, 0, r.recorded_at});
        }
      }
    }
  }
  sort_choices(records);
  return records;
}

}  // namespace tiletune::runtime

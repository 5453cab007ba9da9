#include "tuner/runtime/record_set.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "db/result_store.h"

namespace tiletune::runtime {
namespace {

// What tells two GPU rows apart (the gpus table's UNIQUE key), in the order RecordSet sorts them.
auto gpu_key(const RecordedGpu& gpu) {
  return std::tie(gpu.name, gpu.cc_major, gpu.cc_minor, gpu.sm_count, gpu.memory_bytes);
}

RecordedGpu recorded_gpu(const GpuRecord& gpu) {
  return {gpu.name, gpu.cc_major, gpu.cc_minor, gpu.sm_count, gpu.memory_bytes};
}

RecordedTemplate recorded_template(const TemplateRecord& record) {
  RecordedTemplate templ{record.name, record.source_hash, record.path, record.source, std::nullopt};
  try {
    templ.parsed = parse_template(record.source, record.path.empty() ? record.name : record.path);
  } catch (const TemplateError&) {
    // A version an older tiletune recorded that today's parser refuses: still served by query.
  }
  return templ;
}

}  // namespace

const RecordedTemplate* RecordSet::find_template(const std::string& name) const {
  const auto found = std::find_if(templates.begin(), templates.end(),
                                  [&](const RecordedTemplate& t) { return t.name == name; });
  return found == templates.end() ? nullptr : &*found;
}

void sort_choices(RecordSet& records) {
  const auto key = [&](const RecordedChoice& c) {
    return std::tie(records.gpus.at(c.gpu).name, c.gpu, records.templates.at(c.templ).name, c.templ,
                    c.shape, c.median_ms, c.config, c.recorded_at);
  };
  std::sort(records.choices.begin(), records.choices.end(),
            [&](const RecordedChoice& a, const RecordedChoice& b) { return key(a) < key(b); });
}

RecordSet load_database_records(const std::filesystem::path& database) {
  const ResultStore store(database, ResultStore::Access::read_only);
  RecordSet records;

  for (const TemplateRecord& record : store.templates(/*current_only=*/true)) {
    records.templates.push_back(recorded_template(record));
  }
  std::sort(records.templates.begin(), records.templates.end(),
            [](const RecordedTemplate& a, const RecordedTemplate& b) { return a.name < b.name; });

  for (const GpuRecord& gpu : store.gpus()) records.gpus.push_back(recorded_gpu(gpu));
  std::sort(records.gpus.begin(), records.gpus.end(),
            [](const RecordedGpu& a, const RecordedGpu& b) { return gpu_key(a) < gpu_key(b); });

  const auto gpu_index = [&](const GpuRecord& gpu) {
    const RecordedGpu wanted = recorded_gpu(gpu);
    const auto found = std::lower_bound(
        records.gpus.begin(), records.gpus.end(), wanted,
        [](const RecordedGpu& a, const RecordedGpu& b) { return gpu_key(a) < gpu_key(b); });
    return std::size_t(found - records.gpus.begin());
  };
  std::map<std::string, std::size_t> template_index;
  for (std::size_t i = 0; i < records.templates.size(); ++i) {
    template_index.emplace(records.templates[i].name, i);
  }

  for (const CurrentResult& row : store.current_results()) {
    const ResultRecord& r = row.result;
    RecordedChoice choice;
    choice.gpu = gpu_index(row.gpu);
    choice.templ = template_index.at(r.template_name);
    choice.config = r.config;
    choice.shape = r.shape;
    choice.median_ms = r.median_ms;
    choice.min_ms = r.min_ms;
    choice.max_ms = r.max_ms;
    choice.runs = r.runs;
    choice.tflops = r.tflops;
    choice.registers = r.registers;
    choice.static_shared_bytes = r.static_shared_bytes;
    choice.dynamic_shared_bytes = r.dynamic_shared_bytes;
    choice.fuzz_cases = row.fuzz_cases;
    choice.recorded_at = r.recorded_at;
    records.choices.push_back(std::move(choice));
  }
  sort_choices(records);
  return records;
}

}  // namespace tiletune::runtime

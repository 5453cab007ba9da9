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
  RecordedTemplate templ{record.name,   record.source_hash, record.path,
                         record.source, std::nullopt,       record.precision};
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
                    c.shape, c.op, c.batch, c.median_ms, c.config, c.recorded_at);
  };
  for (std::vector<RecordedChoice>* choices : {&records.choices, &records.tuned_for_choices}) {
    std::sort(choices->begin(), choices->end(),
              [&](const RecordedChoice& a, const RecordedChoice& b) { return key(a) < key(b); });
  }
}

RecordSet load_database_records(const std::filesystem::path& database) {
  const ResultStore store(database, ResultStore::Access::read_only);
  // Results first: a tune running meanwhile only adds GPU rows and template versions, so every
  // result's GPU is in the list read after it, and a result whose version stopped being current
  // in between is left out below.
  const std::vector<CurrentResult> results = store.current_results();
  RecordSet records;

  for (const TemplateRecord& record : store.templates(/*current_only=*/true)) {
    records.templates.push_back(recorded_template(record));
  }
  std::sort(records.templates.begin(), records.templates.end(),
            [](const RecordedTemplate& a, const RecordedTemplate& b) { return a.name < b.name; });

  for (const GpuRecord& gpu : store.gpus()) records.gpus.push_back(recorded_gpu(gpu));
  std::sort(records.gpus.begin(), records.gpus.end(),
            [](const RecordedGpu& a, const RecordedGpu& b) { return gpu_key(a) < gpu_key(b); });

  std::map<std::tuple<std::string, int, int, int, std::uint64_t>, std::size_t> gpu_index;
  for (std::size_t i = 0; i < records.gpus.size(); ++i) {
    gpu_index.emplace(gpu_key(records.gpus[i]), i);
  }
  std::map<std::string, std::size_t> template_index;
  for (std::size_t i = 0; i < records.templates.size(); ++i) {
    template_index.emplace(records.templates[i].name, i);
  }

  for (const CurrentResult& row : results) {
    const ResultRecord& r = row.result;
    const auto templ = template_index.find(r.template_name);
    const auto gpu = gpu_index.find(gpu_key(recorded_gpu(row.gpu)));
    if (templ == template_index.end() || gpu == gpu_index.end() ||
        records.templates[templ->second].source_hash != r.template_hash) {
      continue;  // no longer the current version
    }
    RecordedChoice choice;
    choice.gpu = gpu->second;
    choice.templ = templ->second;
    choice.config = r.config;
    choice.shape = r.shape;
    choice.op = r.op;
    choice.batch = r.batch;
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
    (choice.tuned_for().plain() ? records.choices : records.tuned_for_choices).push_back(std::move(choice));
  }
  sort_choices(records);
  return records;
}

}  // namespace tiletune::runtime

// `tiletune export` (bundle_export.h): selection, manifest, cubins, and the folder or C++ file.
#include "tuner/runtime/bundle_export.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <ctime>
#include <exception>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/runtime/performance_model.h"
#include "tuner/system/private_files.h"

#ifndef TILETUNE_VERSION
#error "TILETUNE_VERSION must be defined (tuner/runtime/CMakeLists.txt)"
#endif

namespace tiletune::runtime {
namespace {

using json = nlohmann::json;

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

void require_known(const std::vector<std::string>& names, const std::set<std::string>& recorded,
                   const char* what) {
  for (const std::string& name : names) {
    if (!recorded.count(name)) {
      throw ExportInputError("no record of " + std::string(what) + " '" + name + "' to export");
    }
  }
}

bool wanted(const std::vector<std::string>& names, const std::string& name) {
  return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
}

json declarations(const KernelTemplate& tmpl) {
  json parameters = json::array();
  for (const Parameter& p : tmpl.parameters) parameters.push_back({{"name", p.name}, {"values", p.values}});
  const auto texts = [](const auto& expressions) {
    json out = json::array();
    for (const Expression& e : expressions) out.push_back(e.text());
    return out;
  };
  return {{"entry", tmpl.entry},
          {"parameters", parameters},
          {"requirements", texts(tmpl.requirements)},
          {"block", texts(tmpl.block)},
          {"grid", texts(tmpl.grid)},
          {"shared", tmpl.dynamic_shared_bytes.text()},
          {"zero_output", tmpl.zero_output.text()}};
}

// One configuration to compile for one architecture.
struct CubinJob {
  const RecordedTemplate* tmpl;
  std::string config, arch;
  std::vector<char> cubin;
  std::string error;
};

// Compiles (or loads from the cache) every job, in parallel; NvrtcError is rethrown.
void compile_jobs(std::vector<CubinJob>& jobs, std::optional<CubinCache>& cache, unsigned threads) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failures(jobs.size());
  const auto work = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      CubinJob& job = jobs[i];
      try {
        const KernelTemplate& tmpl = *job.tmpl->parsed;
        const Configuration config = tmpl.parse_configuration(job.config);
        std::optional<CubinKey> key;
        std::optional<CompileOutcome> outcome;
        if (cache) {
          key = CubinKey::of(tmpl, config, job.arch);
          outcome = cache->load(*key);
        }
        if (!outcome) {
          outcome.emplace();
          try {
            outcome->image = compile_configuration(tmpl, config, job.arch);
          } catch (const CompileError& e) {
            outcome->error = e.what();
            outcome->log = e.log();
          }
          // As CompiledKernels does: an image without ptxas's report (NVRTC's own cache served
          // it) is not kept, so that the tuner's report is never empty for good.
          if (key && (!outcome->image || outcome->image->log.find("Compiling entry function '" +
                                                                  tmpl.entry + "'") != std::string::npos)) {
            cache->store(*key, *outcome);
          }
        }
        if (outcome->image) {
          job.cubin = std::move(outcome->image->cubin);
        } else {
          job.error = outcome->error.empty() ? "does not compile" : outcome->error;
        }
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  {
    std::vector<std::jthread> workers;
    const std::size_t count = std::min<std::size_t>(
        threads ? threads : std::max(1u, std::thread::hardware_concurrency()), jobs.size());
    for (std::size_t t = 0; t < count; ++t) workers.emplace_back(work);
  }
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

// The files a previous bundle's manifest lists, each with the hash the manifest gives its content;
// throws when it cannot be read, for then the folder is no bundle of ours to replace.
std::map<std::string, std::string> listed_files(const std::filesystem::path& folder) {
  std::ifstream in(folder / kBundleManifest, std::ios::binary);
  std::map<std::string, std::string> files;
  try {
    const json manifest = json::parse(in);
    if (manifest.value("format", "") != kBundleFormat) throw std::runtime_error("not a bundle");
    for (const json& t : manifest.at("templates")) {
      files[t.at("source_file").get<std::string>()] = t.at("source_hash").get<std::string>();
    }
    for (const json& c : manifest.at("cubins")) files[c.at("file").get<std::string>()] = c.at("fnv1a").get<std::string>();
    if (!std::all_of(files.begin(), files.end(), [](const auto& f) { return is_inside_bundle(f.first); })) {
      throw std::runtime_error("outside");
    }
  } catch (const std::exception&) {
    throw ExportInputError((folder / kBundleManifest).string() +
                           ": not a tiletune bundle's manifest; choose an empty folder or a previous bundle");
  }
  return files;
}

// The content hash a file name written by export carries ("<name>-<16 hex>.cu",
// "<32 hex>-<16 hex>.<arch>.cubin"); none for any other name.
std::optional<std::string> hash_in_name(const std::string& relative) {
  static const std::regex source(R"(sources/[A-Za-z_][A-Za-z0-9_]*-([0-9a-f]{16})\.cu)");
  static const std::regex cubin(R"(cubins/[A-Za-z_][A-Za-z0-9_]*/[0-9a-f]{32}-([0-9a-f]{16})\.sm_[0-9]+\.cubin)");
  std::smatch match;
  if (relative.size() < 200 &&
      (std::regex_match(relative, match, source) || std::regex_match(relative, match, cubin))) {
    return match[1].str();
  }
  return std::nullopt;
}

// How bundles before content-addressed names named their files.
bool legacy_name(const std::string& relative) {
  static const std::regex legacy(
      R"(sources/[A-Za-z_][A-Za-z0-9_]*\.cu|cubins/[A-Za-z_][A-Za-z0-9_]*/[0-9a-f]{32}\.sm_[0-9]+\.cubin)");
  return relative.size() < 200 && std::regex_match(relative, legacy);
}

// A regular file's bytes (a link, a FIFO or a folder is none: never ours).
std::optional<std::string> regular_file_bytes(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, error))) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) return std::nullopt;
  return bytes.str();
}

// The folders of the bundle's files must be real folders: a linked one would be written through.
void refuse_linked_folders(const BundleFiles& files, const std::filesystem::path& folder) {
  std::set<std::filesystem::path> folders;
  for (const auto& [relative, content] : files) {
    for (std::filesystem::path part = std::filesystem::path(relative).parent_path(); !part.empty();
         part = part.parent_path()) {
      folders.insert(part);
    }
  }
  for (const std::filesystem::path& part : folders) {
    std::error_code error;
    const auto status = std::filesystem::symlink_status(folder / part, error);
    if (std::filesystem::is_symlink(status) ||
        (std::filesystem::exists(status) && !std::filesystem::is_directory(status))) {
      throw ExportInputError((folder / part).string() +
                             ": a symbolic link or not a folder; export writes into real folders only");
    }
  }
}

// Written beside the final path and renamed into place (replace_file): a reader sees the old file
// or the new one, whole. Readable by all, as an application running as another user reads it.
void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  replace_file(path, content, 0644);
}

// Removes what earlier exports wrote and neither `keep` nor its name's hash still vouches for:
// a file named as export names its files whose content has the hash in its name, or a file of a
// bundle from before those names that the previous manifest lists with its content's hash.
// Anything else in the folder (the user's notes, a file that merely looks like ours) stays.
void remove_unlisted(const std::filesystem::path& folder, const std::set<std::string>& keep,
                     const std::map<std::string, std::string>& previous) {
  std::vector<std::filesystem::path> folders = {folder / "sources"};
  std::error_code error;
  if (std::filesystem::is_directory(std::filesystem::symlink_status(folder / "cubins", error))) {
    for (std::filesystem::directory_iterator it(folder / "cubins", error), end; !error && it != end;
         it.increment(error)) {
      if (it->is_directory() && !it->is_symlink()) folders.push_back(it->path());
    }
  }
  for (const std::filesystem::path& sub : folders) {
    if (!std::filesystem::is_directory(std::filesystem::symlink_status(sub, error))) continue;
    std::vector<std::filesystem::path> gone;
    for (std::filesystem::directory_iterator it(sub, error), end; !error && it != end; it.increment(error)) {
      const std::string relative = std::filesystem::relative(it->path(), folder).generic_string();
      if (keep.count(relative)) continue;
      const std::optional<std::string> hash = hash_in_name(relative);
      const auto listed = previous.find(relative);
      if (!hash && !(legacy_name(relative) && listed != previous.end())) continue;
      const std::optional<std::string> bytes = regular_file_bytes(it->path());
      if (bytes && fnv1a_hex(*bytes) == (hash ? *hash : listed->second)) gone.push_back(it->path());
    }
    for (const std::filesystem::path& path : gone) std::filesystem::remove(path, error);
    // The folder too when that left it empty (never sources/ itself).
    if (sub.parent_path() != folder && std::filesystem::is_empty(sub, error)) std::filesystem::remove(sub, error);
  }
}

}  // namespace

bool fits_any_problem(const KernelTemplate& tmpl, const Configuration& config) {
  const Bindings parameters = tmpl.bindings(config);
  for (const Expression& requirement : tmpl.requirements) {
    try {
      if (requirement.evaluate(parameters) == 0) return false;
    } catch (const ExpressionError&) {
      return false;  // it reads the problem (M, N, K, lda, ldb, ldc): some problem may not fit
    }
  }
  return true;
}

RecordSet select_for_export(const RecordSet& all, const ExportSelection& selection) {
  std::set<std::string> gpu_names, template_names;
  for (const RecordedChoice& c : all.choices) {
    gpu_names.insert(all.gpus[c.gpu].name);
    template_names.insert(all.templates[c.templ].name);
  }
  require_known(selection.templates, template_names, "template");
  require_known(selection.gpus, gpu_names, "GPU");

  RecordSet out;
  std::map<std::size_t, std::size_t> gpu_index, template_index;  // all's -> out's
  std::set<std::tuple<std::size_t, std::size_t, std::string>> kept;  // all's GPU and template
  const auto add = [&](const RecordedChoice& c) {
    kept.emplace(c.gpu, c.templ, c.config);
    RecordedChoice copy = c;
    auto [g, new_gpu] = gpu_index.try_emplace(c.gpu, out.gpus.size());
    if (new_gpu) out.gpus.push_back(all.gpus[c.gpu]);
    auto [t, new_template] = template_index.try_emplace(c.templ, out.templates.size());
    if (new_template) out.templates.push_back(all.templates[c.templ]);
    copy.gpu = g->second;
    copy.templ = t->second;
    out.choices.push_back(std::move(copy));
  };
  RecordSet sorted = all;
  sort_choices(sorted);
  // Groups of one GPU, template and shape are contiguous once sorted, fastest first.
  for (auto group = sorted.choices.begin(); group != sorted.choices.end();) {
    const auto end = std::find_if(group, sorted.choices.end(), [&](const RecordedChoice& c) {
      return c.gpu != group->gpu || c.templ != group->templ || c.shape != group->shape;
    });
    const RecordedTemplate& tmpl = sorted.templates[group->templ];
    if (wanted(selection.templates, tmpl.name) && wanted(selection.gpus, sorted.gpus[group->gpu].name)) {
      if (!tmpl.parsed) {
        throw ExportInputError("template " + tmpl.name + " (" + tmpl.source_hash +
                               ") does not parse with this tiletune: its cubins cannot be built");
      }
      const auto fits = [&](const RecordedChoice& c) {
        return fits_any_problem(*tmpl.parsed, tmpl.parsed->parse_configuration(c.config));
      };
      const auto fastest_end = group + std::min<std::ptrdiff_t>(selection.per_shape, end - group);
      std::for_each(group, fastest_end, add);
      if (std::none_of(group, fastest_end, fits)) {
        if (const auto fallback = std::find_if(fastest_end, end, fits); fallback != end) add(*fallback);
      }
    }
    group = end;
  }
  if (out.choices.empty()) throw ExportInputError("no record matches what was asked to export");

  // Each pair's model, fitted on all its records: it chooses at the workload's shapes, and travels.
  PerformanceModels models(all);
  std::set<std::pair<std::size_t, std::size_t>> pairs;
  for (const auto& [gpu, templ, config] : kept) pairs.emplace(gpu, templ);
  for (const auto& [gpu, templ] : pairs) {
    const PerformanceModel& model = models.of(gpu, templ);
    const RecordedShapes& recorded = models.recorded(gpu, templ);
    for (const GemmShape& shape : selection.workload) {
      // A recorded shape is served by its fastest records, kept already.
      if (std::any_of(recorded.shapes.begin(), recorded.shapes.end(),
                      [&](const auto& entry) { return entry.first == shape; })) {
        continue;
      }
      const PerformanceModel::Ranking ranking = model.rank(GemmProblem::packed(shape), 1);
      if (ranking.fastest.empty() || kept.contains({gpu, templ, *ranking.fastest.front().config})) continue;
      // Its record nearest the shape: the one the selection serves it from.
      const std::vector<const RecordedChoice*>& records = *model.records_of(*ranking.fastest.front().config);
      add(**std::min_element(records.begin(), records.end(), [&](const RecordedChoice* a, const RecordedChoice* b) {
        return std::pair(log_distance(a->shape, shape), a->shape) < std::pair(log_distance(b->shape, shape), b->shape);
      }));
    }
  }

  // Indices as a RecordSet has them: GPUs and templates sorted by name.
  RecordSet result;
  result.gpus = out.gpus;
  result.templates = out.templates;
  std::sort(result.gpus.begin(), result.gpus.end(),
            [](const RecordedGpu& a, const RecordedGpu& b) { return a.name < b.name; });
  std::sort(result.templates.begin(), result.templates.end(),
            [](const RecordedTemplate& a, const RecordedTemplate& b) { return a.name < b.name; });
  for (RecordedChoice c : out.choices) {
    c.gpu = std::size_t(std::find_if(result.gpus.begin(), result.gpus.end(), [&](const RecordedGpu& g) {
                          return g.name == out.gpus[c.gpu].name;
                        }) - result.gpus.begin());
    c.templ = std::size_t(result.find_template(out.templates[c.templ].name) - result.templates.data());
    result.choices.push_back(std::move(c));
  }
  sort_choices(result);
  for (const auto& [gpu, templ] : pairs) {
    const PerformanceModel& model = models.of(gpu, templ);
    RecordedModel carried;
    carried.gpu = std::size_t(std::find_if(result.gpus.begin(), result.gpus.end(), [&](const RecordedGpu& g) {
                                return g.name == all.gpus[gpu].name;
                              }) - result.gpus.begin());
    carried.templ = std::size_t(result.find_template(all.templates[templ].name) - result.templates.data());
    carried.work_share = model.work_share();
    for (const auto& [config, fitted] : model.configurations()) {
      if (!kept.contains({gpu, templ, config})) continue;
      carried.configurations[config] = {fitted.coefficients, fitted.shapes, fitted.own_fit,
                                        model.measured_beyond_limits(config)};
    }
    result.models.push_back(std::move(carried));
  }
  return result;
}

BundleContents build_bundle(const RecordSet& records, const std::string& database,
                            std::optional<CubinCache> cache, unsigned threads, ExportCubins cubins_wanted) {
  BundleContents contents;
  json manifest = {{"format", kBundleFormat},
                   {"format_version", kBundleFormatVersion},
                   {"tiletune_version", TILETUNE_VERSION},
                   {"created_at", utc_now()},
                   {"database", database}};
  json gpus = json::array(), templates = json::array(), choices = json::array(), cubins = json::array();
  std::set<std::string> archs;
  for (const RecordedGpu& g : records.gpus) {
    gpus.push_back({{"name", g.name}, {"cc_major", g.cc_major}, {"cc_minor", g.cc_minor},
                    {"sm_count", g.sm_count}, {"memory_bytes", g.memory_bytes}});
    archs.insert(g.arch());
  }
  for (const RecordedTemplate& t : records.templates) {
    const std::string file = bundle_source_file(t.name, t.source);
    json entry = {{"name", t.name},         {"source_hash", t.source_hash},
                  {"path", t.path},         {"source_file", file},
                  {"precision", to_string(t.precision)}};
    if (t.parsed) entry["declarations"] = declarations(*t.parsed);
    templates.push_back(std::move(entry));
    contents.files[file] = t.source;
  }
  std::set<std::pair<std::size_t, std::string>> configs;  // (template, configuration)
  for (const RecordedChoice& c : records.choices) {
    const RecordedGpu& g = records.gpus[c.gpu];
    choices.push_back({{"gpu", {{"name", g.name}, {"cc_major", g.cc_major}, {"cc_minor", g.cc_minor}}},
                       {"template", records.templates[c.templ].name},
                       {"config", c.config},
                       {"shape", c.shape.to_string()},
                       {"median_ms", c.median_ms}, {"min_ms", c.min_ms}, {"max_ms", c.max_ms},
                       {"runs", c.runs}, {"tflops", c.tflops}, {"registers", c.registers},
                       {"static_shared_bytes", c.static_shared_bytes},
                       {"dynamic_shared_bytes", c.dynamic_shared_bytes},
                       {"fuzz_cases", c.fuzz_cases}, {"recorded_at", c.recorded_at}});
    configs.emplace(c.templ, c.config);
  }

  std::vector<CubinJob> jobs;
  for (const auto& [templ, config] : configs) {
    if (cubins_wanted == ExportCubins::none) break;
    for (const std::string& arch : archs) jobs.push_back({&records.templates[templ], config, arch, {}, {}});
  }
  compile_jobs(jobs, cache, threads);
  for (const CubinJob& job : jobs) {
    if (!job.error.empty()) {
      const std::string first_line = job.error.substr(0, job.error.find('\n'));
      throw ExportCompileError(job.tmpl->name + " [" + job.config + "] for " + job.arch + ": " + first_line);
    }
    const std::string bytes(job.cubin.begin(), job.cubin.end());
    const std::string file = bundle_cubin_file(job.tmpl->name, job.config, job.arch, bytes);
    cubins.push_back({{"template", job.tmpl->name}, {"source_hash", job.tmpl->source_hash},
                      {"config", job.config}, {"arch", job.arch}, {"file", file},
                      {"bytes", bytes.size()}, {"fnv1a", fnv1a_hex(bytes)}});
    contents.files[file] = bytes;
    ++contents.cubins;
    contents.cubin_bytes += bytes.size();
  }
  json models = json::array();
  for (const RecordedModel& m : records.models) {
    const RecordedGpu& g = records.gpus[m.gpu];
    json configurations = json::array();
    for (const auto& [config, fitted] : m.configurations) {
      configurations.push_back({{"config", config}, {"coefficients", fitted.coefficients},
                                {"shapes", fitted.shapes}, {"own_fit", fitted.own_fit},
                                {"measured_beyond_limits", fitted.measured_beyond_limits}});
    }
    models.push_back({{"gpu", {{"name", g.name}, {"cc_major", g.cc_major}, {"cc_minor", g.cc_minor}}},
                      {"template", records.templates[m.templ].name},
                      {"work_share", to_string(m.work_share)},
                      {"configurations", std::move(configurations)}});
  }
  manifest["gpus"] = gpus;
  manifest["templates"] = templates;
  manifest["choices"] = choices;
  manifest["cubins"] = cubins;
  manifest["performance_model"] = kPerformanceModelVersion;
  manifest["models"] = models;
  contents.files[kBundleManifest] = manifest.dump(2) + "\n";
  return contents;
}

void write_bundle_folder(const BundleFiles& files, const std::filesystem::path& folder) {
  std::map<std::string, std::string> previous;
  if (std::filesystem::exists(folder)) {
    if (!std::filesystem::is_directory(folder)) {
      throw ExportInputError(folder.string() + ": not a folder");
    }
    if (std::filesystem::exists(folder / kBundleManifest)) {
      previous = listed_files(folder);
    } else if (!std::filesystem::is_empty(folder)) {
      throw ExportInputError(folder.string() +
                             ": not empty and no tiletune bundle (no manifest.json); choose an empty folder");
    }
  }
  refuse_linked_folders(files, folder);
  std::filesystem::create_directories(folder);
  // Every file but the manifest is named by its content, so writing them changes nothing a
  // reader of the previous manifest opens; the manifest is renamed into place last, switching
  // readers from the old bundle to the new one whole. The previous bundle's files stay until the
  // next export, for a reader that read its manifest just before the switch; older ones go.
  for (const auto& [relative, content] : files) {
    if (relative != kBundleManifest) write_file(folder / relative, content);
  }
  write_file(folder / kBundleManifest, files.at(kBundleManifest));
  std::set<std::string> keep;
  for (const auto& [relative, content] : files) keep.insert(relative);
  for (const auto& [relative, hash] : previous) {
    if (hash_in_name(relative)) keep.insert(relative);
  }
  remove_unlisted(folder, keep, previous);
}

namespace {

// The text as a C++ string literal: letters, digits and "_./-" as they are, every other byte an
// octal escape, so that nothing read from a database can end the literal or start a line.
std::string c_string_literal(std::string_view text) {
  std::string literal = "\"";
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-') {
      literal += c;
    } else {
      literal += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
    }
  }
  return literal + "\"";
}

}  // namespace

std::filesystem::path write_bundle_cpp(const BundleFiles& files, const std::filesystem::path& folder,
                                       const std::string& symbol) {
  if (!is_identifier(symbol)) throw ExportInputError("--name '" + symbol + "' is not a C identifier");
  if (std::filesystem::exists(folder) && !std::filesystem::is_directory(folder)) {
    throw ExportInputError(folder.string() + ": not a folder");
  }
  std::string out;
  out += "// Generated by tiletune export --format cpp: a tiletune bundle compiled into the program.\n"
         "// tiletune::Library::open(" + symbol + "()) reads it; no file is needed at run time.\n"
         "#include <tiletune/tiletune.h>\n\n"
         "const tiletune::EmbeddedBundle& " + symbol + "();\n\nnamespace {\n\n";
  std::size_t index = 0;
  for (const auto& [relative, content] : files) {
    out += "alignas(8) const unsigned char file_" + std::to_string(index++) + "[] = {";
    for (std::size_t i = 0; i < content.size(); ++i) {
      if (i % 24 == 0) out += "\n ";
      out += ' ';
      out += std::to_string(static_cast<unsigned char>(content[i]));
      out += ',';
    }
    if (content.empty()) out += "0";  // an array cannot be empty; its size says 0
    out += "\n};\n";
  }
  out += "\nconst tiletune::EmbeddedFile files[] = {\n";
  index = 0;
  for (const auto& [relative, content] : files) {
    out += "  {" + c_string_literal(relative) + ", file_" + std::to_string(index++) + ", " +
           std::to_string(content.size()) + "},\n";
  }
  out += "};\n\n}  // namespace\n\nconst tiletune::EmbeddedBundle& " + symbol +
         "() {\n  static const tiletune::EmbeddedBundle bundle{files, " + std::to_string(files.size()) +
         "};\n  return bundle;\n}\n";
  std::filesystem::create_directories(folder);
  const std::filesystem::path path = folder / (symbol + ".cpp");
  write_file(path, out);
  return path;
}

}  // namespace tiletune::runtime

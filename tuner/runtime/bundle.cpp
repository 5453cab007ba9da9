// Reading a bundle back into a RecordSet (bundle.h). Everything the library relies on is checked
// here: the format, each source against its hash, each choice's GPU and template, and each cubin
// against its size and hash when it is read.
#include "tuner/runtime/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tiletune/tiletune.h"
#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/core/precision.h"
#include "tuner/runtime/performance_model.h"

namespace tiletune::runtime {
namespace {

using json = nlohmann::json;

// The reason as one readable line: names quoted from a manifest may hold line breaks (a JSON
// "\n") and run to any length.
std::string one_line(const std::string& why) {
  constexpr std::size_t kLongest = 400;
  std::string line;
  for (const char c : why.substr(0, kLongest)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      line += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      line += c;
    }
  }
  return why.size() > kLongest ? line + "..." : line;
}

[[noreturn]] void fail(const Bundle& bundle, const std::string& file, const std::string& why) {
  throw BundleError(bundle.origin + "/" + file + ": " + one_line(why));
}

std::string text_of(const std::vector<char>& bytes) { return {bytes.begin(), bytes.end()}; }

// The GPU a choice or model names ({"name", "cc_major", "cc_minor"}), as an index into gpus.
std::size_t gpu_named(const Bundle& bundle, const json& gpu, const std::string& what) {
  const std::vector<RecordedGpu>& gpus = bundle.records.gpus;
  const std::string name = gpu.at("name").get<std::string>();
  const auto g = std::find_if(gpus.begin(), gpus.end(), [&](const RecordedGpu& r) {
    return r.name == name && r.cc_major == gpu.at("cc_major").get<int>() &&
           r.cc_minor == gpu.at("cc_minor").get<int>();
  });
  if (g == gpus.end()) fail(bundle, kBundleManifest, what + " names an unknown GPU '" + name + "'");
  return std::size_t(g - gpus.begin());
}

// The template a choice or model names, as an index into templates.
std::size_t template_named(const Bundle& bundle, const std::string& name, const std::string& what) {
  const RecordedTemplate* tmpl = bundle.records.find_template(name);
  if (!tmpl) fail(bundle, kBundleManifest, what + " names an unknown template '" + name + "'");
  return std::size_t(tmpl - bundle.records.templates.data());
}

// The performance models fitted on the whole database (RecordSet::models), checked as the choices
// are: the library would choose by them, so a damaged one is refused, never served.
void read_models(Bundle& bundle, const json& models) {
  RecordSet& records = bundle.records;
  std::set<std::tuple<std::size_t, std::size_t, std::string>> chosen;
  for (const RecordedChoice& c : records.choices) chosen.emplace(c.gpu, c.templ, c.config);
  for (const json& m : models) {
    RecordedModel model;
    model.gpu = gpu_named(bundle, m.at("gpu"), "a model");
    const std::string template_name = m.at("template").get<std::string>();
    model.templ = template_named(bundle, template_name, "a model");
    const std::string of = "the model of " + template_name + " on " + records.gpus[model.gpu].name;
    if (std::any_of(records.models.begin(), records.models.end(), [&](const RecordedModel& other) {
          return other.gpu == model.gpu && other.templ == model.templ;
        })) {
      fail(bundle, kBundleManifest, of + " is listed twice");
    }
    const std::string work_share = m.at("work_share").get<std::string>();
    if (work_share == to_string(WorkShare::even)) {
      model.work_share = WorkShare::even;
    } else if (work_share != to_string(WorkShare::busiest_sm)) {
      fail(bundle, kBundleManifest, of + " has work_share '" + work_share + "', not busiest_sm or even");
    }
    for (const json& c : m.at("configurations")) {
      const std::string config = c.at("config").get<std::string>();
      if (!chosen.contains({model.gpu, model.templ, config})) {
        fail(bundle, kBundleManifest, of + " has configuration '" + config + "', which none of its choices has");
      }
      FittedConfiguration fitted;
      const json& coefficients = c.at("coefficients");
      if (!coefficients.is_array() || coefficients.size() != kLaunchFeatures) {
        fail(bundle, kBundleManifest, fmt::format("{} has {} coefficients for '{}', not {}", of,
                                                  coefficients.is_array() ? coefficients.size() : 1, config,
                                                  kLaunchFeatures));
      }
      for (std::size_t j = 0; j < kLaunchFeatures; ++j) fitted.coefficients[j] = coefficients[j].get<double>();
      // A negative or infinite coefficient would predict a configuration fastest everywhere; all
      // zero, it predicts nothing (the database's model drops those).
      const bool valid = std::all_of(fitted.coefficients.begin(), fitted.coefficients.end(),
                                     [](double v) { return std::isfinite(v) && v >= 0; });
      if (!valid || std::none_of(fitted.coefficients.begin(), fitted.coefficients.end(), [](double v) { return v > 0; })) {
        fail(bundle, kBundleManifest, fmt::format("{} has coefficients {} for '{}': not a model (finite, none "
                                                  "negative, one positive)", of, coefficients.dump(), config));
      }
      fitted.shapes = c.at("shapes").get<int>();
      fitted.own_fit = c.at("own_fit").get<bool>();
      fitted.measured_beyond_limits = c.at("measured_beyond_limits").get<bool>();
      if (fitted.shapes < 1 || (fitted.own_fit && fitted.shapes < kOwnFitShapes)) {
        fail(bundle, kBundleManifest, fmt::format("{} says '{}' was fitted to {} shapes{}", of, config, fitted.shapes,
                                                  fitted.own_fit ? " on its own" : ""));
      }
      if (!model.configurations.emplace(config, fitted).second) {
        fail(bundle, kBundleManifest, of + " lists '" + config + "' twice");
      }
    }
    records.models.push_back(std::move(model));
  }
}

void read_manifest(Bundle& bundle) {
  const std::optional<std::vector<char>> bytes = bundle.read_file(kBundleManifest);
  if (!bytes) fail(bundle, kBundleManifest, "missing: not a tiletune bundle");
  json manifest;
  try {
    manifest = json::parse(bytes->begin(), bytes->end());
  } catch (const json::exception& e) {
    fail(bundle, kBundleManifest, std::string("not JSON: ") + e.what());
  }
  try {
    if (!manifest.is_object() || manifest.value("format", "") != kBundleFormat) {
      fail(bundle, kBundleManifest, std::string("format is not '") + kBundleFormat + "'");
    }
    const int version = manifest.at("format_version").get<int>();
    if (version != kBundleFormatVersion) {
      fail(bundle, kBundleManifest,
           "format_version " + std::to_string(version) + " is not " +
               std::to_string(kBundleFormatVersion) + " (written by another tiletune)");
    }
    bundle.tiletune_version = manifest.at("tiletune_version").get<std::string>();
    bundle.description = "tiletune " + bundle.tiletune_version + " bundle of " +
                         manifest.value("database", std::string("?")) + ", created " +
                         manifest.value("created_at", std::string("?"));

    RecordSet& records = bundle.records;
    for (const json& g : manifest.at("gpus")) {
      records.gpus.push_back({g.at("name").get<std::string>(), g.at("cc_major").get<int>(),
                              g.at("cc_minor").get<int>(), g.at("sm_count").get<int>(),
                              g.at("memory_bytes").get<std::uint64_t>()});
    }
    std::sort(records.gpus.begin(), records.gpus.end(),
              [](const RecordedGpu& a, const RecordedGpu& b) { return a.name < b.name; });

    for (const json& t : manifest.at("templates")) {
      RecordedTemplate tmpl;
      tmpl.name = t.at("name").get<std::string>();
      if (!is_identifier(tmpl.name)) {
        fail(bundle, kBundleManifest, fmt::format("template name {:?} is not an identifier", tmpl.name));
      }
      if (records.find_template(tmpl.name)) fail(bundle, kBundleManifest, "template " + tmpl.name + " is listed twice");
      tmpl.source_hash = t.at("source_hash").get<std::string>();
      tmpl.path = t.value("path", std::string());
      const std::string file = t.at("source_file").get<std::string>();
      if (!is_inside_bundle(file)) fail(bundle, kBundleManifest, "source file '" + file + "' is outside the bundle");
      const std::optional<std::vector<char>> source = bundle.read_file(file);
      if (!source) fail(bundle, file, "missing (the source of template " + tmpl.name + ")");
      tmpl.source = text_of(*source);
      const std::string hash = fnv1a_hex(tmpl.source);
      if (hash != tmpl.source_hash) {
        fail(bundle, file, "damaged: its hash is " + hash + ", the manifest's " + tmpl.source_hash);
      }
      try {
        tmpl.parsed = parse_template(tmpl.source, tmpl.path.empty() ? tmpl.name : tmpl.path);
      } catch (const TemplateError&) {
        // As from a database: a version today's parser refuses is listed, never launched.
      }
      // The precision the library checks a caller's acceptance against: the manifest's, which
      // must agree with the source's declaration; a bundle older than the field has the source's.
      if (t.contains("precision")) {
        const std::string text = t.at("precision").get<std::string>();
        const std::optional<Precision> precision = parse_precision(text);
        if (!precision) {
          fail(bundle, kBundleManifest, "template " + tmpl.name + " has precision '" + text +
                                            "', not one of " + kPrecisionNames);
        }
        tmpl.precision = *precision;
        if (tmpl.parsed && tmpl.parsed->precision != tmpl.precision) {
          fail(bundle, kBundleManifest, "template " + tmpl.name + " has precision " + text +
                                            ", but its source declares " +
                                            to_string(tmpl.parsed->precision));
        }
      } else if (tmpl.parsed) {
        tmpl.precision = tmpl.parsed->precision;
      }
      records.templates.push_back(std::move(tmpl));
    }
    std::sort(records.templates.begin(), records.templates.end(),
              [](const RecordedTemplate& a, const RecordedTemplate& b) { return a.name < b.name; });

    for (const json& c : manifest.at("choices")) {
      RecordedChoice choice;
      choice.gpu = gpu_named(bundle, c.at("gpu"), "a choice");
      const std::string template_name = c.at("template").get<std::string>();
      choice.templ = template_named(bundle, template_name, "a choice");
      const RecordedTemplate* tmpl = &records.templates[choice.templ];
      choice.config = c.at("config").get<std::string>();
      if (tmpl->parsed) {
        try {
          tmpl->parsed->parse_configuration(choice.config);
        } catch (const TemplateError& e) {
          fail(bundle, kBundleManifest, "a choice of template " + template_name + " has configuration '" +
                                            choice.config + "': " + e.what());
        }
      }
      try {
        choice.shape = GemmShape::parse(c.at("shape").get<std::string>());
      } catch (const ShapeError& e) {
        fail(bundle, kBundleManifest, e.what());
      }
      choice.median_ms = c.at("median_ms").get<double>();
      choice.min_ms = c.at("min_ms").get<double>();
      choice.max_ms = c.at("max_ms").get<double>();
      choice.runs = c.at("runs").get<int>();
      choice.tflops = c.at("tflops").get<double>();
      // The library picks the fastest by these: a negative or infinite time would always win.
      for (const double time : {choice.median_ms, choice.min_ms, choice.max_ms, choice.tflops}) {
        if (!std::isfinite(time) || time < 0) {
          fail(bundle, kBundleManifest, fmt::format("a choice of template {} has a time or rate of {}: "
                                                    "not a measurement", template_name, time));
        }
      }
      choice.registers = c.at("registers").get<int>();
      choice.static_shared_bytes = c.at("static_shared_bytes").get<int>();
      choice.dynamic_shared_bytes = c.at("dynamic_shared_bytes").get<int>();
      choice.fuzz_cases = c.at("fuzz_cases").get<int>();
      choice.recorded_at = c.at("recorded_at").get<std::string>();
      records.choices.push_back(std::move(choice));
    }
    sort_choices(records);
    // A bundle without models, or with those of another version of the model, has its models
    // fitted on its choices, as before bundles carried them.
    if (manifest.contains("models") && manifest.at("performance_model").get<int>() == kPerformanceModelVersion) {
      read_models(bundle, manifest.at("models"));
    }

    for (const json& c : manifest.at("cubins")) {
      BundleCubin cubin;
      const std::string template_name = c.at("template").get<std::string>();
      cubin.template_hash = c.at("source_hash").get<std::string>();
      const RecordedTemplate* tmpl = records.find_template(template_name);
      if (!tmpl || tmpl->source_hash != cubin.template_hash) {
        fail(bundle, kBundleManifest, "a cubin names an unknown template version '" + template_name +
                                          "' " + cubin.template_hash);
      }
      cubin.config = c.at("config").get<std::string>();
      cubin.arch = c.at("arch").get<std::string>();
      cubin.file = c.at("file").get<std::string>();
      if (!is_inside_bundle(cubin.file)) fail(bundle, kBundleManifest, "cubin file '" + cubin.file + "' is outside the bundle");
      cubin.bytes = c.at("bytes").get<std::uint64_t>();
      cubin.fnv1a = c.at("fnv1a").get<std::string>();
      bundle.cubins.push_back(std::move(cubin));
    }
  } catch (const json::exception& e) {
    fail(bundle, kBundleManifest, std::string("malformed: ") + e.what());
  }
}

Bundle read(std::string origin,
            std::function<std::optional<std::vector<char>>(const std::string&)> read_file) {
  Bundle bundle;
  bundle.origin = std::move(origin);
  bundle.read_file = std::move(read_file);
  read_manifest(bundle);
  return bundle;
}

}  // namespace

bool is_inside_bundle(const std::string& file) {
  const std::filesystem::path path(file);
  if (file.empty() || path.is_absolute()) return false;
  return std::none_of(path.begin(), path.end(), [](const auto& part) { return part == ".."; });
}

std::optional<std::pair<int, int>> parse_arch(const std::string& arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return std::nullopt;
  const std::string digits = arch.substr(3);
  // At most four digits (sm_1000 and below): a longer number is no architecture, and would not fit
  // std::stoi.
  if (digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::pair{std::stoi(digits.substr(0, digits.size() - 1)), digits.back() - '0'};
}

std::optional<std::vector<char>> Bundle::cubin_for(const std::string& template_hash,
                                                   const std::string& config, int cc_major,
                                                   int cc_minor) const {
  // SASS runs on the minor versions of its major from its own up: the exact one, else the highest.
  const BundleCubin* best = nullptr;
  int best_minor = -1;
  for (const BundleCubin& cubin : cubins) {
    if (cubin.template_hash != template_hash || cubin.config != config) continue;
    const std::optional<std::pair<int, int>> cc = parse_arch(cubin.arch);
    if (!cc || cc->first != cc_major || cc->second > cc_minor || cc->second <= best_minor) continue;
    best = &cubin;
    best_minor = cc->second;
  }
  if (!best) return std::nullopt;
  std::optional<std::vector<char>> bytes = read_file(best->file);
  if (!bytes) fail(*this, best->file, "missing (the cubin of " + config + " for " + best->arch + ")");
  const std::string hash = fnv1a_hex(std::string_view(bytes->data(), bytes->size()));
  if (bytes->size() != best->bytes || hash != best->fnv1a) {
    fail(*this, best->file,
         "damaged: " + std::to_string(bytes->size()) + " bytes of hash " + hash + ", the manifest's " +
             std::to_string(best->bytes) + " bytes of hash " + best->fnv1a);
  }
  return bytes;
}

bool is_bundle(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) &&
         std::filesystem::is_regular_file(path / kBundleManifest, error);
}

namespace {

// No file of a bundle is larger: a cubin is a few MiB, a manifest of thousands of choices less.
constexpr off_t kMaxBundleFileBytes = off_t(256) << 20;

// One file of the bundle's folder, found without following a link at any step (a linked source or
// folder would be read from outside the bundle) and read only if it is a regular file (a FIFO
// would block, a device never end) of bounded size; nothing when it does not exist. Throws
// BundleError naming the file otherwise.
std::optional<std::vector<char>> read_bundle_file(const std::filesystem::path& folder,
                                                  const std::string& relative) {
  const std::string where = (folder / relative).string();
  const auto refuse = [&](const std::string& why) -> std::optional<std::vector<char>> {
    throw BundleError(one_line(where + ": " + why));
  };
  int directory = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) return std::nullopt;
  const std::filesystem::path path(relative);
  int fd = -1;
  for (auto part = path.begin(); part != path.end(); ++part) {
    const bool last = std::next(part) == path.end();
    const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    fd = ::openat(directory, part->c_str(), flags);
    const int error = errno;
    ::close(directory);
    directory = -1;
    if (fd < 0) {
      if (error == ENOENT) return std::nullopt;
      if (error == ELOOP || error == ENOTDIR) refuse("a symbolic link or not a folder on its path: not read");
      refuse(std::string("cannot open: ") + std::strerror(error));
    }
    if (!last) directory = fd;
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    refuse("not a regular file: not read");
  }
  if (status.st_size > kMaxBundleFileBytes) {
    ::close(fd);
    refuse(fmt::format("{} bytes, more than a bundle's file holds: not read", status.st_size));
  }
  std::vector<char> bytes(std::size_t(status.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += std::size_t(got);
  }
  ::close(fd);
  if (done != bytes.size()) refuse("shorter than its size: read while it changed?");
  return bytes;
}

}  // namespace

Bundle read_bundle(const std::filesystem::path& folder) {
  // A re-export switches the manifest while this reads: when a file the manifest read lists is
  // missing or not as listed, and the manifest has changed since, the new bundle is read instead.
  constexpr int kAttempts = 4;
  for (int attempt = 1;; ++attempt) {
    std::optional<std::vector<char>> manifest_read;
    try {
      Bundle bundle = read(folder.string(), [folder, &manifest_read](const std::string& relative) {
        std::optional<std::vector<char>> bytes = read_bundle_file(folder, relative);
        if (relative == kBundleManifest) manifest_read = bytes;
        return bytes;
      });
      // The bundle keeps reading cubins later: with a reader that refers to nothing of this call.
      bundle.read_file = [folder](const std::string& relative) { return read_bundle_file(folder, relative); };
      return bundle;
    } catch (const BundleError&) {
      if (attempt == kAttempts || !manifest_read) throw;
      std::optional<std::vector<char>> now;
      try {
        now = read_bundle_file(folder, kBundleManifest);
      } catch (const BundleError&) {
      }
      if (now == manifest_read) throw;
    }
  }
}

Bundle read_bundle(const tiletune::EmbeddedBundle& embedded) {
  std::map<std::string, std::pair<const unsigned char*, std::size_t>> files;
  for (std::size_t i = 0; i < embedded.count; ++i) {
    files[embedded.files[i].path] = {embedded.files[i].data, embedded.files[i].size};
  }
  return read("embedded bundle",
              [files = std::move(files)](const std::string& relative) -> std::optional<std::vector<char>> {
                const auto file = files.find(relative);
                if (file == files.end()) return std::nullopt;
                const char* data = reinterpret_cast<const char*>(file->second.first);
                return std::vector<char>(data, data + file->second.second);
              });
}

namespace {

// The names become paths inside the bundle: an identifier cannot leave its folder.
void check_file_name(const std::string& template_name) {
  if (!is_identifier(template_name)) {
    throw std::invalid_argument(fmt::format("template name {:?} is not an identifier", template_name));
  }
}

}  // namespace

std::string bundle_source_file(const std::string& template_name, std::string_view source) {
  check_file_name(template_name);
  return "sources/" + template_name + "-" + fnv1a_hex(source) + ".cu";
}

std::string bundle_cubin_file(const std::string& template_name, const std::string& config,
                              const std::string& arch, std::string_view cubin) {
  // The configuration's text may hold anything a parameter name does: the file is named by a digest.
  check_file_name(template_name);
  const std::string digest = source_digest(config + "\n" + arch).substr(0, 32);
  return "cubins/" + template_name + "/" + digest + "-" + fnv1a_hex(cubin) + "." + arch + ".cubin";
}

}  // namespace tiletune::runtime

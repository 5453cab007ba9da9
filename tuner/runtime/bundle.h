// A deployable bundle (`tiletune export`): the chosen records of a database with one cubin per
// configuration and architecture, and the template sources for a JIT fallback, so that the
// runtime library needs neither SQLite nor (where a cubin fits the GPU) NVRTC.
//
//   manifest.json                                   what is in it (format "tiletune-bundle", 1)
//   sources/<template>-<hash>.cu                    each template's source, hashed in the manifest
//   cubins/<template>/<32 hex of config and arch>-<hash>.<arch>.cubin
//
// Every file but the manifest is named by its content's hash (FNV-1a), so a re-export never
// changes a file a reader of the previous manifest may still open (bundle_export.h).
//
// The manifest also carries each GPU and template's performance model as fitted on the whole
// database ("models", RecordSet::models, with "performance_model": the version of its features),
// for the configurations the bundle keeps. The format stays version 1: the models are an addition
// that a reader from before them ignores (it reads the keys it knows, and fits its models on the
// choices as it always did), and a bundle without them (or with another version of the model) is
// read as before, its models fitted on its choices. Raising the version would make every earlier
// library refuse bundles it can serve.
//
// A bundle is a folder, or the same files compiled into the program (`--format cpp`,
// tiletune::EmbeddedBundle). Reading checks everything it relies on: a bundle that was damaged (a
// file missing, truncated or changed without its hash, a model naming a configuration it has no
// choice of or with coefficients no fit gives) is a BundleError, never a wrong kernel or choice. The
// hashes are checksums (FNV-1a), not authentication: whoever can write the folder can change a
// source or a cubin and its hash together, and it is served (on the CPU backend a source's host
// code runs in the application). A bundle is code: trust it as the application's own files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/runtime/record_set.h"

namespace tiletune {
struct EmbeddedBundle;
}

namespace tiletune::runtime {

inline constexpr const char* kBundleFormat = "tiletune-bundle";
inline constexpr int kBundleFormatVersion = 1;
inline constexpr const char* kBundleManifest = "manifest.json";

// One line: the file (path in the bundle) and what is wrong with it.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BundleCubin {
  std::string template_hash, config, arch, file;  // file relative to the bundle
  std::uint64_t bytes = 0;
  std::string fnv1a;  // fnv1a_hex of the file's bytes
};

struct Bundle {
  RecordSet records;  // sort_choices applied
  std::string tiletune_version, description;
  std::vector<BundleCubin> cubins;
  std::string origin;  // the folder, or "embedded bundle": in front of every message

  // The cubin built for this configuration that runs on a GPU of compute capability
  // major.minor: the exact arch, else the highest minor <= the device's of the same major (SASS
  // compatibility); none if none. Throws BundleError when the file is missing or not the one
  // the manifest describes.
  std::optional<std::vector<char>> cubin_for(const std::string& template_hash,
                                             const std::string& config, int cc_major,
                                             int cc_minor) const;

  // How files are read (from the folder, or the embedded arrays); none when there is no such file.
  std::function<std::optional<std::vector<char>>(const std::string& relative)> read_file;
};

// Whether the path is a folder with a manifest.json.
bool is_bundle(const std::filesystem::path& path);

// Throws BundleError naming the file and what is wrong.
Bundle read_bundle(const std::filesystem::path& folder);
Bundle read_bundle(const tiletune::EmbeddedBundle& embedded);

// Where a bundle keeps a template's source and a configuration's cubin: named by the content's
// hash. Throws std::invalid_argument when the template name is no identifier.
std::string bundle_source_file(const std::string& template_name, std::string_view source);
std::string bundle_cubin_file(const std::string& template_name, const std::string& config,
                              const std::string& arch, std::string_view cubin);

// Whether a path a manifest names stays inside the bundle (relative, no "..").
bool is_inside_bundle(const std::string& file);

// "sm_86" as {8, 6}; none for anything else (an arch-specific "sm_90a" included).
std::optional<std::pair<int, int>> parse_arch(const std::string& arch);

}  // namespace tiletune::runtime

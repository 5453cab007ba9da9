// The on-disk cache of compiled configurations, so that tuning the same space again compiles
// nothing. An entry holds the outcome of one NVRTC compile: the image (cubin, log, ptxas report),
// or the compile error (message and log), since a configuration that does not compile fails the
// same way every time. With it the entry keeps the full text of its key, everything the outcome
// depends on: the template's name, file name and source, the configuration, NVRTC's exact options
// and version, the architecture. The file is named by a 128-bit digest of the key, and the stored
// key is compared on every load, so a digest collision is a miss, never a wrong hit.
//
// Entries are written to a temporary file in the cache directory (created exclusively, named with
// the writer's pid: tuner/system/private_files.h) and renamed into place, so that tuners (and their
// worker processes) sharing the cache never read a half-written one. The entries together are
// kept under a size cap (tuner/system/cache_limit.h: 2 GiB unless $TILETUNE_CACHE_MAX_SIZE says
// otherwise): a hit marks its entry used, and a store past the cap evicts the least recently
// used entries. A file
// that cannot be read or parsed (truncated, corrupt, foreign: each entry ends with a checksum) is
// a miss, and storing overwrites it. A cache that cannot create or write its directory stores
// nothing more after one warning line on stderr: the cache never fails a tune.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/backend/gpu/nvrtc_compiler.h"
#include "tuner/core/kernel_template.h"
#include "tuner/system/cache_limit.h"

namespace tiletune {

// What compiling one configuration gave: the image, or why there is none.
struct CompileOutcome {
  std::optional<CompiledKernelImage> image;
  std::string error, log;  // when it did not compile: CompileError's message and NVRTC's log
  double compile_seconds = 0;  // NVRTC's time for it in this process; 0 when a cache served it
};

// Everything a compile's outcome depends on.
struct CubinKey {
  std::string template_name;  // in a compile error's message
  std::string file_name;      // nvrtc_file_name(): in the log and the cubin's line info
  std::string source_digest;  // source_digest(template source)
  std::string config;         // Configuration::to_string()
  std::vector<std::string> options;  // nvrtc_options(): architecture and macros included
  std::string nvrtc_version;         // nvrtc_version()
  std::string arch;

  // The key of compile_configuration(tmpl, config, arch) with the NVRTC found; throws NvrtcError
  // where there is none.
  static CubinKey of(const KernelTemplate& tmpl, const Configuration& config,
                     const std::string& arch);

  // Every field with its length, one per line: two keys are equal exactly when their texts are.
  std::string text() const;
  // 32 hex digits: two 64-bit FNV-1a of text() with different offset bases.
  std::string digest() const;
};

// 32 hex digits (two 64-bit FNV-1a with different offset bases) and the length in bytes:
// "0123...cdef:10432". The whole source is not kept in the key, this stands for it.
std::string source_digest(std::string_view source);

// $TILETUNE_CACHE_DIR if set, else $XDG_CACHE_HOME/tiletune/cubins (when absolute, as the XDG
// specification requires), else $HOME/.cache/tiletune/cubins; empty when none of them is set.
std::filesystem::path default_cubin_cache_dir();

class CubinCache {
 public:
  // The cache kept in `directory`, which is created when the first entry is stored, its entries
  // at most `cap` bytes together. An empty path stores nothing (with the one warning). Copies
  // share the warned-and-stopped state and the cap's count.
  explicit CubinCache(std::filesystem::path directory, std::uint64_t cap = cache_cap_or_default());

  const std::filesystem::path& directory() const { return directory_; }
  // Where the key's entry is (or would be) kept.
  std::filesystem::path entry_path(const CubinKey& key) const;

  // The stored outcome; none when there is no entry or it is damaged or another key's. A hit
  // marks the entry used (its modification time). Thread-safe.
  std::optional<CompileOutcome> load(const CubinKey& key) const;
  // Stores the outcome atomically, replacing any entry. Never throws for want of a directory,
  // space or permission: it warns once and stores nothing more. Thread-safe.
  void store(const CubinKey& key, const CompileOutcome& outcome);
  // False once storing has failed (and been warned about).
  bool writable() const { return !stopped_->load(); }

  // Whether a file of a cache directory is an entry (what the cap counts and evicts).
  static bool is_entry(const std::filesystem::path& file);
  // Whether an entry's checksum covers it (a damaged one is a miss, and `cache --prune` removes it).
  static bool intact(const std::filesystem::path& entry);

 private:
  void stop(const std::string& reason);

  std::filesystem::path directory_;
  std::shared_ptr<std::atomic<bool>> stopped_;
  std::shared_ptr<CacheCap> cap_;
};

// The cache at default_cubin_cache_dir(): the one tunes and `tiletune compile` share. None where
// that is empty (no HOME).
std::optional<CubinCache> default_cubin_cache();

}  // namespace tiletune

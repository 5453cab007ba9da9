// The size cap of tiletune's on-disk caches (the cubin cache, the CPU backend's built kernels).
// Each cache is one folder of entries; when the entries outgrow the cap, the least recently used
// ones are removed until they fit. A hit refreshes an entry's modification time (touch_entry), so
// the modification time orders entries by their last use. The cap is
// $TILETUNE_CACHE_MAX_SIZE (a size such as 500M or 2G), else kDefaultCacheCap (2 GiB), per cache.
//
// A cache folder is marked by a CACHEDIR.TAG (the Cache Directory Tagging Specification, which
// backup tools honour) that tiletune writes. Nothing is ever evicted or removed from a folder
// without it: a cache variable pointed at the wrong folder costs no user file.
//
// A writer does not scan the folder after every write: it measures it once, then adds what it
// writes, and scans (and evicts) again only when that sum passes the cap, so a write costs one
// addition. Other processes' writes are seen at the next scan.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace tiletune {

inline constexpr std::uint64_t kDefaultCacheCap = std::uint64_t(2) << 30;  // 2 GiB
// A temporary file older than this is stale even if a process of its creator's pid runs.
inline constexpr std::chrono::seconds kStaleTemporaryAge{30 * 60};

// "2G", "500M", "64K", "1048576" (bytes), "1.5G"; K, M, G, T are powers of 1024, an optional
// trailing "B" or "iB" is allowed. Throws std::invalid_argument with the text for anything else.
std::uint64_t parse_size(std::string_view text);
// "1.5 GiB", "200 MiB", "512 B".
std::string format_size(std::uint64_t bytes);

// $TILETUNE_CACHE_MAX_SIZE parsed, else kDefaultCacheCap. Throws std::invalid_argument naming the
// variable when it is set but not a size.
std::uint64_t cache_cap_from_environment();
// The same, but a bad value is one warning line on stderr (once per process) and the default: a
// cache never fails the command that uses it. `tiletune cache` refuses it instead.
std::uint64_t cache_cap_or_default();

// Which files of a cache folder are its entries (what is counted and evicted).
using EntryFilter = std::function<bool(const std::filesystem::path&)>;

inline constexpr const char* kCacheTagFile = "CACHEDIR.TAG";

// Whether the folder holds a CACHEDIR.TAG that tiletune wrote (a regular file, not a link).
bool is_tiletune_cache(const std::filesystem::path& folder);

// Marks the folder as tiletune's cache when it may be: it is marked already, or it holds nothing
// but `is_own` files, temporaries and the tag (an empty folder, or a cache of a tiletune from
// before the tag). Returns whether it is marked now; a folder with anything else is never marked.
bool claim_cache_folder(const std::filesystem::path& folder, const EntryFilter& is_own);

struct CacheUsage {
  std::uint64_t entries = 0, bytes = 0;  // the entries'
  std::uint64_t temporaries = 0;         // temporary files and folders, stale or not
  std::uint64_t stale_temporaries = 0;   // of which left behind (stale_temporary)
};

// What a cache folder holds; all zero when it does not exist.
CacheUsage measure_cache(const std::filesystem::path& folder, const EntryFilter& is_entry);

struct Eviction {
  std::uint64_t entries = 0, bytes = 0;  // removed
  std::uint64_t failed = 0;              // entries that could not be removed (no permission)
};
// Removes the least recently modified entries until the rest take at most `cap` bytes, never
// `keep` (an entry just written, about to be used, even when it alone is larger than the cap).
// An entry another process removed first counts as gone; one that cannot be removed as failed.
Eviction evict_to_cap(const std::filesystem::path& folder, const EntryFilter& is_entry,
                      std::uint64_t cap, const std::filesystem::path& keep = {});

// Removes the entries `intact` says are damaged; returns how many.
std::uint64_t remove_damaged(const std::filesystem::path& folder, const EntryFilter& is_entry,
                             const EntryFilter& intact);

// Removes the folder's stale temporary files and folders; returns how many.
std::uint64_t remove_stale_temporaries(const std::filesystem::path& folder,
                                       std::chrono::seconds max_age = kStaleTemporaryAge);

// Sets an entry's modification time to now, marking it used. Errors are ignored.
void touch_entry(const std::filesystem::path& entry);

// A writer's view of one cache folder's size: wrote() after each entry written, which evicts when
// the folder passes its cap. Its first call also claims the folder (claim_cache_folder, with
// `is_own`, else `is_entry`) and removes its stale temporaries, so that what killed processes
// left behind goes away without `tiletune cache --prune`. In a folder that cannot be claimed it
// evicts and removes nothing. Thread-safe; never throws (a cache never fails its user).
class CacheCap {
 public:
  CacheCap(std::filesystem::path folder, EntryFilter is_entry, std::uint64_t cap, EntryFilter is_own = {})
      : folder_(std::move(folder)), is_entry_(std::move(is_entry)), is_own_(std::move(is_own)), cap_(cap) {}

  // After `entry` (of `bytes`) was written; it is not evicted now.
  void wrote(const std::filesystem::path& entry, std::uint64_t bytes);
  std::uint64_t cap() const { return cap_; }

 private:
  std::filesystem::path folder_;
  EntryFilter is_entry_, is_own_;
  std::uint64_t cap_;
  bool claimed_ = false;
  std::mutex mutex_;
  std::optional<std::uint64_t> estimate_;  // the entries' bytes, measured once, then summed
};

}  // namespace tiletune

#include "tuner/system/cache_limit.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tuner/system/private_files.h"

namespace tiletune {
namespace fs = std::filesystem;
namespace {

struct Entry {
  fs::path path;
  fs::file_time_type modified;
  std::uint64_t bytes = 0;
};

// The folder's entries, oldest first; none when it cannot be read.
std::vector<Entry> entries_of(const fs::path& folder, const EntryFilter& is_entry) {
  std::vector<Entry> entries;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    std::error_code status_error;
    if (temporary_name(path.filename().string()) || !it->is_regular_file(status_error) ||
        !is_entry(path)) {
      continue;
    }
    Entry entry{path, it->last_write_time(status_error), it->file_size(status_error)};
    if (!status_error) entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.modified < b.modified; });
  return entries;
}

constexpr std::string_view kCacheTagSignature = "Signature: 8a477f597d28d172789f06886806bc55\n";
constexpr std::string_view kCacheTagText =
    "# This file is a cache directory tag created by tiletune.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n";

}  // namespace

bool is_tiletune_cache(const fs::path& folder) {
  std::error_code error;
  const fs::path tag = folder / kCacheTagFile;
  if (!fs::is_regular_file(fs::symlink_status(tag, error))) return false;
  std::ifstream in(tag, std::ios::binary);
  std::string text(kCacheTagSignature.size() + kCacheTagText.size(), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  return in.gcount() == std::streamsize(text.size()) &&
         text == std::string(kCacheTagSignature) + std::string(kCacheTagText);
}

bool claim_cache_folder(const fs::path& folder, const EntryFilter& is_own) {
  if (is_tiletune_cache(folder)) return true;
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(folder, error))) return false;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    std::error_code status_error;
    const bool own_file = it->is_regular_file(status_error) && !it->is_symlink(status_error) && is_own(path);
    if (!own_file && !temporary_name(name) && name != kCacheTagFile) return false;
  }
  if (error) return false;
  try {
    write_new_file(folder / kCacheTagFile, std::string(kCacheTagSignature) + std::string(kCacheTagText));
  } catch (const std::exception&) {
    // Another process tagged it first, or the folder is not writable: as the tag now says.
  }
  return is_tiletune_cache(folder);
}

std::uint64_t parse_size(std::string_view text) {
  const std::string whole(text);
  const auto bad = [&whole] {
    return std::invalid_argument(
        fmt::format("'{}' is not a size (a number of bytes, or with K, M, G or T: 500M, 2G)", whole));
  };
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) throw bad();
  double number = 0;
  try {
    std::size_t used = 0;
    number = std::stod(std::string(text.substr(0, digits)), &used);
    if (used != digits) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  std::string unit(text.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.ends_with("IB")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with('B')) unit.resize(unit.size() - 1);
  else if (unit == "B") unit.clear();
  int shift = 0;
  if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else if (!unit.empty()) throw bad();
  const double bytes = std::ldexp(number, shift);
  if (!(bytes >= 1) || bytes >= 0x1p63) throw bad();
  return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = double(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::uint64_t cache_cap_from_environment() {
  const char* value = std::getenv("TILETUNE_CACHE_MAX_SIZE");
  if (value == nullptr || *value == '\0') return kDefaultCacheCap;
  try {
    return parse_size(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("TILETUNE_CACHE_MAX_SIZE: {}", e.what()));
  }
}

std::uint64_t cache_cap_or_default() {
  try {
    return cache_cap_from_environment();
  } catch (const std::invalid_argument& e) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      fmt::print(stderr, "tiletune: warning: {}; the caches keep the default cap of {}\n", e.what(),
                 format_size(kDefaultCacheCap));
    }
    return kDefaultCacheCap;
  }
}

CacheUsage measure_cache(const fs::path& folder, const EntryFilter& is_entry) {
  CacheUsage usage;
  for (const Entry& entry : entries_of(folder, is_entry)) {
    ++usage.entries;
    usage.bytes += entry.bytes;
  }
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (!temporary_name(it->path().filename().string())) continue;
    ++usage.temporaries;
    if (stale_temporary(*it, kStaleTemporaryAge)) ++usage.stale_temporaries;
  }
  return usage;
}

Eviction evict_to_cap(const fs::path& folder, const EntryFilter& is_entry, std::uint64_t cap,
                      const fs::path& keep) {
  const std::vector<Entry> entries = entries_of(folder, is_entry);
  std::uint64_t total = 0;
  for (const Entry& entry : entries) total += entry.bytes;
  Eviction evicted;
  for (const Entry& entry : entries) {
    if (total <= cap) break;
    if (!keep.empty() && entry.path == keep) continue;
    std::error_code error;
    if (fs::remove(entry.path, error)) {
      ++evicted.entries;
      evicted.bytes += entry.bytes;
    } else if (error) {
      ++evicted.failed;
      continue;  // still there: the next ones must make up for it
    }
    total -= entry.bytes;  // removed by another process, if not by this one
  }
  return evicted;
}

std::uint64_t remove_damaged(const fs::path& folder, const EntryFilter& is_entry,
                             const EntryFilter& intact) {
  std::uint64_t removed = 0;
  for (const Entry& entry : entries_of(folder, is_entry)) {
    std::error_code error;
    if (!intact(entry.path) && fs::remove(entry.path, error)) ++removed;
  }
  return removed;
}

std::uint64_t remove_stale_temporaries(const fs::path& folder, std::chrono::seconds max_age) {
  std::vector<fs::path> stale;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (stale_temporary(*it, max_age)) stale.push_back(it->path());
  }
  std::uint64_t removed = 0;
  for (const fs::path& path : stale) {
    std::error_code ignored;
    if (fs::remove_all(path, ignored) > 0) ++removed;
  }
  return removed;
}

void touch_entry(const fs::path& entry) {
  std::error_code ignored;
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ignored);
}

void CacheCap::wrote(const fs::path& entry, std::uint64_t bytes) {
  try {
    const std::lock_guard lock(mutex_);
    if (!estimate_) {
      claimed_ = claim_cache_folder(folder_, is_own_ ? is_own_ : is_entry_);
      if (!claimed_) {
        estimate_ = 0;
        return;
      }
      remove_stale_temporaries(folder_);
      estimate_ = measure_cache(folder_, is_entry_).bytes;
    } else {
      *estimate_ += bytes;
    }
    if (!claimed_) return;  // not a folder of tiletune's: nothing in it is removed
    if (*estimate_ <= cap_) return;
    // A tenth below the cap, so that the next writes do not each scan the folder again.
    evict_to_cap(folder_, is_entry_, cap_ - cap_ / 10, entry);
    estimate_ = measure_cache(folder_, is_entry_).bytes;
  } catch (const std::exception&) {
    // Out of memory while listing the folder, say: the cap waits for the next write.
  }
}

}  // namespace tiletune

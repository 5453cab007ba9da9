// tiletune cache [--prune] [--max-size SIZE] [--cache-dir DIR]: where the two on-disk caches are
// (compiled cubins, the CPU backend's built kernels), how many entries they hold and how large
// they are. --prune removes damaged entries and the temporary files that killed processes left
// behind (never a live writer's: tuner/system/private_files.h) and evicts the least recently used
// entries down to the cap (--max-size, else $TILETUNE_CACHE_MAX_SIZE, else 2 GiB:
// tuner/system/cache_limit.h), only in a folder tiletune marked as its cache.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "tools/cli/command_line.h"
#include "tools/commands/commands.h"
#include "tuner/backend/cpu/kernel_build.h"
#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/system/cache_limit.h"

namespace tiletune::cli {
namespace {
namespace fs = std::filesystem;

struct CacheOptions {
  bool prune = false;
  std::optional<std::string> max_size;  // none: $TILETUNE_CACHE_MAX_SIZE, else the default
  std::string cache_dir;  // the cubin cache; empty: default_cubin_cache_dir()
};

std::string plural(std::uint64_t count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

// One cache of the two.
struct Cache {
  const char* label;
  fs::path folder;
  EntryFilter is_entry, is_own, intact;
};

// A cache pruned if asked, then described on one line. Returns the exit code: pruning a folder
// that is no tiletune cache is refused (kBadInput), one left over its cap because entries could
// not be removed is kEnvironment.
int report(const Cache& cache, std::uint64_t cap, bool prune) {
  const auto& [label, folder, is_entry, is_own, intact] = cache;
  if (folder.empty()) {
    fmt::print("{:<7} (none: none of TILETUNE_CACHE_DIR, XDG_CACHE_HOME and HOME is set)\n", label);
    return kSuccess;
  }
  std::error_code error;
  const fs::file_status status = fs::status(folder, error);
  if (!fs::exists(status)) {
    fmt::print("{:<7} {}: empty (not created yet)\n", label, folder.string());
    return kSuccess;
  }
  if (!fs::is_directory(status)) throw UsageError(folder.string() + ": not a folder, so no cache");
  std::string pruned;
  Eviction evicted;
  if (prune) {
    if (!claim_cache_folder(folder, is_own)) {
      throw UsageError(fmt::format("{}: not a tiletune cache (no {} of tiletune's, and it holds other "
                                   "files); nothing removed",
                                   folder.string(), kCacheTagFile));
    }
    const std::uint64_t damaged = remove_damaged(folder, is_entry, intact);
    const std::uint64_t removed = remove_stale_temporaries(folder);
    evicted = evict_to_cap(folder, is_entry, cap);
    pruned = fmt::format("; pruned: {} removed, {} removed, {} evicted ({})",
                         plural(removed, "stale temporary file", "stale temporary files"),
                         plural(damaged, "damaged entry", "damaged entries"),
                         plural(evicted.entries, "entry", "entries"), format_size(evicted.bytes));
  }
  const CacheUsage usage = measure_cache(folder, is_entry);
  fmt::print("{:<7} {}: {}, {} (cap {}); {} ({} stale){}\n", label, folder.string(),
             plural(usage.entries, "entry", "entries"), format_size(usage.bytes), format_size(cap),
             plural(usage.temporaries, "temporary file", "temporary files"),
             usage.stale_temporaries, pruned);
  if (prune && usage.bytes > cap) {
    fmt::print(stderr, "tiletune: {}: still over its cap of {}: {} could not be removed\n",
               folder.string(), format_size(cap), plural(evicted.failed, "entry", "entries"));
    return kEnvironment;
  }
  return kSuccess;
}

int run(const CacheOptions& options) {
  std::uint64_t cap = 0;
  try {
    cap = options.max_size ? parse_size(*options.max_size) : cache_cap_from_environment();
  } catch (const std::invalid_argument& e) {
    throw UsageError(options.max_size ? fmt::format("--max-size: {}", e.what()) : e.what());
  }
  const fs::path cubins = options.cache_dir.empty() ? default_cubin_cache_dir() : fs::path(options.cache_dir);
  const int cubin_result =
      report({"cubins", cubins, &CubinCache::is_entry, &CubinCache::is_entry, &CubinCache::intact}, cap,
             options.prune);
  const int cpu_result = report(
      {"cpu", default_cpu_cache_dir(), &cpu_cache_entry, &cpu_cache_file, &cpu_cache_object_intact}, cap,
      options.prune);
  return std::max(cubin_result, cpu_result);
}

}  // namespace

void add_cache_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CacheOptions>();
  CLI::App* command = app.add_subcommand(
      "cache", "where the cubin and CPU kernel caches are, their entries and size; --prune cleans them");
  command->add_flag("--prune", options->prune,
                    "remove temporary files left by killed processes and evict the least recently "
                    "used entries down to the cap");
  command->add_option("--max-size", options->max_size,
                      "the cap of each cache, e.g. 500M or 2G (default $TILETUNE_CACHE_MAX_SIZE, else 2G)");
  command->add_option("--cache-dir", options->cache_dir,
                      "the cubin cache (default $TILETUNE_CACHE_DIR, else ~/.cache/tiletune/cubins); "
                      "the CPU kernel cache is $XDG_CACHE_HOME/tiletune/cpu, else ~/.cache/tiletune/cpu");
  command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tiletune::cli

// tiletune cache [--prune] [--max-size SIZE] [--cache-dir DIR]: where the two on-disk caches are
// (compiled cubins, the CPU backend's built kernels), how many entries they hold and how large
// they are. --prune removes the temporary files that killed processes left behind (never a live
// writer's: tuner/system/private_files.h) and evicts the least recently used entries down to the cap
// (--max-size, else $TILETUNE_CACHE_MAX_SIZE, else 2 GiB: tuner/system/cache_limit.h).
#include <filesystem>
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
  std::string max_size;   // empty: $TILETUNE_CACHE_MAX_SIZE, else the default
  std::string cache_dir;  // the cubin cache; empty: default_cubin_cache_dir()
};

std::string plural(std::uint64_t count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

// One cache: pruned if asked, then described on one line.
void report(const char* label, const fs::path& folder, const EntryFilter& is_entry,
            std::uint64_t cap, bool prune) {
  if (folder.empty()) {
    fmt::print("{:<7} (none: none of TILETUNE_CACHE_DIR, XDG_CACHE_HOME and HOME is set)\n", label);
    return;
  }
  std::string pruned;
  if (prune) {
    const std::uint64_t removed = remove_stale_temporaries(folder);
    const Eviction evicted = evict_to_cap(folder, is_entry, cap);
    pruned = fmt::format("; pruned: {} removed, {} evicted ({})",
                         plural(removed, "stale temporary file", "stale temporary files"),
                         plural(evicted.entries, "entry", "entries"),
                         format_size(evicted.bytes));
  }
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    fmt::print("{:<7} {}: empty (not created yet)\n", label, folder.string());
    return;
  }
  const CacheUsage usage = measure_cache(folder, is_entry);
  fmt::print("{:<7} {}: {}, {} (cap {}); {} ({} stale){}\n", label, folder.string(),
             plural(usage.entries, "entry", "entries"), format_size(usage.bytes), format_size(cap),
             plural(usage.temporaries, "temporary file", "temporary files"),
             usage.stale_temporaries, pruned);
}

int run(const CacheOptions& options) {
  std::uint64_t cap = 0;
  try {
    cap = options.max_size.empty() ? cache_cap_from_environment() : parse_size(options.max_size);
  } catch (const std::invalid_argument& e) {
    throw UsageError(options.max_size.empty() ? e.what() : fmt::format("--max-size: {}", e.what()));
  }
  const fs::path cubins = options.cache_dir.empty() ? default_cubin_cache_dir() : fs::path(options.cache_dir);
  report("cubins", cubins, &CubinCache::is_entry, cap, options.prune);
  report("cpu", default_cpu_cache_dir(), &cpu_cache_entry, cap, options.prune);
  return kSuccess;
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

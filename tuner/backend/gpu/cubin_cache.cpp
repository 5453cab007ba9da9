// CubinCache: the entry format, the key's text and digests, atomic writes.
//
// An entry is text framing around raw bytes, each field's length given before it:
//
//   tiletune cubin cache entry 1
//   key <bytes>\n<CubinKey::text()>\n
//   outcome image                          | outcome error
//   arch <bytes>\n<arch>\n                 | message <bytes>\n<message>\n
//   cubin <bytes>\n<cubin>\n               | log <bytes>\n<log>\n
//   log <bytes>\n<log>\n                   |
//   report <registers> <static shared> <stack frame> <spill stores> <spill loads>
//   end <16 hex digits: FNV-1a of everything before this line>
//
// Anything else, a truncated file, or a checksum that does not match is a miss.
#include "tuner/backend/gpu/cubin_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

#include "tuner/system/private_files.h"

namespace tiletune {
namespace {

constexpr std::string_view kEntryHeader = "tiletune cubin cache entry 1\n";
constexpr std::string_view kKeyHeader = "tiletune cubin cache key 1\n";

constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
// The second hash's offset basis: any other value makes an independent-enough second hash.
constexpr std::uint64_t kSecondOffsetBasis = 0x84222325cbf29ce4ULL;

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t basis) {
  std::uint64_t hash = basis;
  for (const unsigned char byte : bytes) {
    hash ^= byte;
    hash *= kFnvPrime;
  }
  return hash;
}

std::string digest_hex(std::string_view bytes) {
  return fmt::format("{:016x}{:016x}", fnv1a(bytes, kFnvOffsetBasis),
                     fnv1a(bytes, kSecondOffsetBasis));
}

// "name <length>\n<bytes>\n": the length makes any byte, newlines and NULs included, safe.
void put_field(std::string& out, std::string_view name, std::string_view bytes) {
  out += fmt::format("{} {}\n", name, bytes.size());
  out += bytes;
  out += '\n';
}

// Reads an entry front to back; the first thing out of place makes it a miss.
class EntryReader {
 public:
  explicit EntryReader(std::string_view text) : rest_(text) {}

  bool literal(std::string_view expected) {
    if (!rest_.starts_with(expected)) return false;
    rest_.remove_prefix(expected.size());
    return true;
  }

  std::optional<std::string_view> field(std::string_view name) {
    std::uint64_t length = 0;
    if (!literal(name) || !literal(" ") || !number(length) || !literal("\n")) return std::nullopt;
    if (length >= rest_.size() || rest_[length] != '\n') return std::nullopt;
    const std::string_view bytes = rest_.substr(0, length);
    rest_.remove_prefix(length + 1);
    return bytes;
  }

  template <class Integer>
  bool number(Integer& value) {
    const auto [end, error] = std::from_chars(rest_.data(), rest_.data() + rest_.size(), value);
    if (error != std::errc() || end == rest_.data()) return false;
    rest_.remove_prefix(end - rest_.data());
    return true;
  }

  bool at_end() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

std::string serialize(const std::string& key_text, const CompileOutcome& outcome) {
  std::string out(kEntryHeader);
  put_field(out, "key", key_text);
  if (outcome.image) {
    const CompiledKernelImage& image = *outcome.image;
    out += "outcome image\n";
    put_field(out, "arch", image.arch);
    put_field(out, "cubin", std::string_view(image.cubin.data(), image.cubin.size()));
    put_field(out, "log", image.log);
    const PtxasReport& report = image.report;
    out += fmt::format("report {} {} {} {} {}\n", report.registers, report.static_shared_bytes,
                       report.stack_frame_bytes, report.spill_store_bytes, report.spill_load_bytes);
  } else {
    out += "outcome error\n";
    put_field(out, "message", outcome.error);
    put_field(out, "log", outcome.log);
  }
  out += fmt::format("end {:016x}\n", fnv1a(out, kFnvOffsetBasis));
  return out;
}

// The entry without its checksum line when that line covers it; none for a damaged entry.
std::optional<std::string_view> checked_body(std::string_view text) {
  constexpr std::size_t kEndLine = 4 + 16 + 1;  // "end " + 16 hex digits + "\n"
  if (text.size() < kEndLine || !text.ends_with('\n')) return std::nullopt;
  const std::string_view body = text.substr(0, text.size() - kEndLine);
  if (text.substr(body.size()) != fmt::format("end {:016x}\n", fnv1a(body, kFnvOffsetBasis))) {
    return std::nullopt;
  }
  return body;
}

std::optional<CompileOutcome> parse(std::string_view text, const std::string& key_text) {
  // The checksum line first: it covers everything else, so a damaged entry stops here.
  const std::optional<std::string_view> checked = checked_body(text);
  if (!checked) return std::nullopt;
  const std::string_view body = *checked;

  EntryReader reader(body);
  if (!reader.literal(kEntryHeader)) return std::nullopt;
  const auto stored_key = reader.field("key");
  if (!stored_key || *stored_key != key_text) return std::nullopt;  // another key, same digest

  CompileOutcome outcome;
  if (reader.literal("outcome image\n")) {
    const auto arch = reader.field("arch");
    const auto cubin = reader.field("cubin");
    const auto log = reader.field("log");
    if (!arch || !cubin || !log) return std::nullopt;
    CompiledKernelImage image;
    image.arch = *arch;
    image.cubin.assign(cubin->begin(), cubin->end());
    image.log = *log;
    PtxasReport& report = image.report;
    if (!reader.literal("report ") || !reader.number(report.registers) || !reader.literal(" ") ||
        !reader.number(report.static_shared_bytes) || !reader.literal(" ") ||
        !reader.number(report.stack_frame_bytes) || !reader.literal(" ") ||
        !reader.number(report.spill_store_bytes) || !reader.literal(" ") ||
        !reader.number(report.spill_load_bytes) || !reader.literal("\n")) {
      return std::nullopt;
    }
    outcome.image = std::move(image);
  } else if (reader.literal("outcome error\n")) {
    const auto message = reader.field("message");
    const auto log = reader.field("log");
    if (!message || !log) return std::nullopt;
    outcome.error = *message;
    outcome.log = *log;
  } else {
    return std::nullopt;
  }
  if (!reader.at_end()) return std::nullopt;
  return outcome;
}

// Writes `content` to a new temporary file beside `target` and renames it into place, so that a
// reader sees the old entry or the new one, never part of one. No fsync: a crash may leave an
// empty or partial entry behind, which its checksum turns into a miss. Returns why it failed, or
// nothing.
std::optional<std::string> write_atomically(const std::filesystem::path& target,
                                            const std::string& content) {
  std::error_code error;
  std::filesystem::create_directories(target.parent_path(), error);
  if (error) return fmt::format("cannot create the directory: {}", error.message());

  TemporaryBeside created;
  try {
    created = create_temporary_beside(target);  // unique even among processes sharing the cache
  } catch (const std::system_error& e) {
    return fmt::format("cannot create a file in it: {}", e.code().message());
  }
  const int fd = created.fd;
  const std::string temporary = created.path.string();
  const auto give_up = [&](const char* doing) {
    const std::string reason = fmt::format("cannot {}: {}", doing, std::strerror(errno));
    close(fd);
    unlink(temporary.c_str());
    return reason;
  };
  for (std::size_t written = 0; written < content.size();) {
    const ssize_t count = write(fd, content.data() + written, content.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return give_up("write an entry");
    written += static_cast<std::size_t>(count);
  }
  if (close(fd) != 0) {
    const std::string reason = fmt::format("cannot write an entry: {}", std::strerror(errno));
    unlink(temporary.c_str());
    return reason;
  }
  if (rename(temporary.c_str(), target.c_str()) != 0) {
    const std::string reason = fmt::format("cannot rename an entry: {}", std::strerror(errno));
    unlink(temporary.c_str());
    return reason;
  }
  return std::nullopt;
}

}  // namespace

CubinKey CubinKey::of(const KernelTemplate& tmpl, const Configuration& config,
                      const std::string& arch) {
  CubinKey key;
  key.template_name = tmpl.name;
  key.file_name = nvrtc_file_name(tmpl);
  key.source_digest = tiletune::source_digest(tmpl.source);  // the members hide the functions
  key.config = config.to_string();
  key.options = nvrtc_options(tmpl, config, arch);
  key.nvrtc_version = tiletune::nvrtc_version();
  key.arch = arch;
  return key;
}

std::string CubinKey::text() const {
  std::string text(kKeyHeader);
  put_field(text, "template", template_name);
  put_field(text, "file", file_name);
  put_field(text, "source", source_digest);
  put_field(text, "config", config);
  put_field(text, "arch", arch);
  put_field(text, "nvrtc", nvrtc_version);
  text += fmt::format("options {}\n", options.size());
  for (const std::string& option : options) put_field(text, "option", option);
  return text;
}

std::string CubinKey::digest() const { return digest_hex(text()); }

std::string source_digest(std::string_view source) {
  return fmt::format("{}:{}", digest_hex(source), source.size());
}

std::filesystem::path default_cubin_cache_dir() {
  const auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  if (const std::string dir = variable("TILETUNE_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG specification: a relative XDG_CACHE_HOME is invalid and is ignored.
  if (const std::string xdg = variable("XDG_CACHE_HOME"); xdg.starts_with('/')) {
    return std::filesystem::path(xdg) / "tiletune" / "cubins";
  }
  if (const std::string home = variable("HOME"); !home.empty()) {
    return std::filesystem::path(home) / ".cache" / "tiletune" / "cubins";
  }
  return {};
}

CubinCache::CubinCache(std::filesystem::path directory, std::uint64_t cap)
    : directory_(std::move(directory)),
      stopped_(std::make_shared<std::atomic<bool>>(false)),
      cap_(std::make_shared<CacheCap>(directory_, &CubinCache::is_entry, cap)) {}

std::filesystem::path CubinCache::entry_path(const CubinKey& key) const {
  return directory_ / (key.digest() + ".entry");
}

bool CubinCache::is_entry(const std::filesystem::path& file) { return file.extension() == ".entry"; }

bool CubinCache::intact(const std::filesystem::path& entry) {
  std::ifstream file(entry, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  return !file.bad() && checked_body(text).has_value();
}

std::optional<CompileOutcome> CubinCache::load(const CubinKey& key) const {
  if (directory_.empty()) return std::nullopt;
  std::ifstream file(entry_path(key), std::ios::binary);
  if (!file) return std::nullopt;
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) return std::nullopt;  // e.g. a directory where the entry should be
  std::optional<CompileOutcome> outcome = parse(text, key.text());
  if (outcome) touch_entry(entry_path(key));  // used now: the last to be evicted
  return outcome;
}

void CubinCache::store(const CubinKey& key, const CompileOutcome& outcome) {
  if (stopped_->load()) return;
  if (directory_.empty()) {
    stop("no cache directory (none of TILETUNE_CACHE_DIR, XDG_CACHE_HOME and HOME is set)");
    return;
  }
  try {
    const std::string entry = serialize(key.text(), outcome);
    if (auto failure = write_atomically(entry_path(key), entry)) {
      stop(fmt::format("{}: {}", directory_.string(), *failure));
    } else {
      cap_->wrote(entry_path(key), entry.size());
    }
  } catch (const std::exception& e) {  // out of memory, say: still not worth failing a tune
    stop(fmt::format("{}: {}", directory_.string(), e.what()));
  }
}

void CubinCache::stop(const std::string& reason) {
  // Several compiling threads may fail at once: only the first one warns.
  if (stopped_->exchange(true)) return;
  fmt::print(stderr, "tiletune: warning: not caching compiled kernels: {}\n", reason);
}

std::optional<CubinCache> default_cubin_cache() {
  const std::filesystem::path dir = default_cubin_cache_dir();
  if (dir.empty()) return std::nullopt;
  return CubinCache(dir);
}

}  // namespace tiletune

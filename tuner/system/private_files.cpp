#include "tuner/system/private_files.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <system_error>
#include <vector>

namespace tiletune {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

void write_all(int fd, std::string_view content, const fs::path& path) {
  for (std::size_t written = 0; written < content.size();) {
    const ssize_t count = ::write(fd, content.data() + written, content.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) fail(errno, "cannot write " + path.string());
    written += static_cast<std::size_t>(count);
  }
}

constexpr std::string_view kTemporaryMark = ".tmp-";
constexpr std::string_view kOldTemporaryMark = ".tmp.";  // the cubin cache's, before pids

}  // namespace

fs::path own_directory(const fs::path& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    fail(errno, "cannot create " + path.string());
  }
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) fail(errno, "cannot read " + path.string());
  const char* wrong = !S_ISDIR(status.st_mode)            ? "is not a directory (a symlink?)"
                      : status.st_uid != ::geteuid()      ? "belongs to another user"
                      : (status.st_mode & (S_IWGRP | S_IWOTH)) != 0 ? "can be written by others"
                                                                    : nullptr;
  if (wrong != nullptr) {
    throw std::runtime_error(path.string() + " " + wrong +
                             ": tiletune will not load kernels from it (set HOME or XDG_CACHE_HOME)");
  }
  return path;
}

fs::path make_private_directory(const fs::path& parent, std::string_view prefix) {
  std::error_code error;
  fs::create_directories(parent, error);
  if (error) fail(error.value(), "cannot create " + parent.string());
  std::string name = (parent / prefix).string() + "XXXXXX";
  if (mkdtemp(name.data()) == nullptr) fail(errno, "cannot create a directory in " + parent.string());
  return name;
}

PrivateDirectory::~PrivateDirectory() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void write_new_file(const fs::path& path, std::string_view content, bool executable) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        executable ? 0700 : 0600);
  if (fd < 0) fail(errno, "cannot create " + path.string());
  try {
    write_all(fd, content, path);
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(path.c_str());
    fail(error, "cannot write " + path.string());
  }
}

void replace_file(const fs::path& path, std::string_view content, mode_t mode) {
  const TemporaryBeside temporary = create_temporary_beside(path);
  try {
    write_all(temporary.fd, content, temporary.path);
    if (::fchmod(temporary.fd, mode) != 0) fail(errno, "cannot set the mode of " + temporary.path.string());
  } catch (...) {
    ::close(temporary.fd);
    ::unlink(temporary.path.c_str());
    throw;
  }
  if (::close(temporary.fd) != 0 || ::rename(temporary.path.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.path.c_str());
    fail(error, "cannot write " + path.string());
  }
}

void copy_to_new_file(const fs::path& from, const fs::path& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) fail(errno, "cannot read " + from.string());
  std::string content;
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const ssize_t count = ::read(in, buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) {
      const int error = errno;
      ::close(in);
      fail(error, "cannot read " + from.string());
    }
    if (count == 0) break;
    content.append(buffer.data(), static_cast<std::size_t>(count));
  }
  ::close(in);
  write_new_file(to, content);
}

TemporaryBeside create_temporary_beside(const fs::path& target) {
  TemporaryBeside temporary;
  std::string name = target.string() + std::string(kTemporaryMark) + std::to_string(getpid()) + "-XXXXXX";
  temporary.fd = mkostemp(name.data(), O_CLOEXEC);
  if (temporary.fd < 0) fail(errno, "cannot create a file in " + target.parent_path().string());
  temporary.path = name;
  return temporary;
}

std::optional<pid_t> temporary_owner(std::string_view name) {
  const std::size_t mark = name.rfind(kTemporaryMark);
  if (mark == std::string_view::npos) return std::nullopt;
  const std::string_view rest = name.substr(mark + kTemporaryMark.size());
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (error != std::errc() || pid <= 0 || end == rest.data() + rest.size() || *end != '-') {
    return std::nullopt;
  }
  const std::string_view tail(end + 1, rest.data() + rest.size() - (end + 1));
  if (tail.empty()) return std::nullopt;
  for (const char c : tail) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return pid;
}

bool temporary_name(std::string_view name) {
  if (temporary_owner(name)) return true;
  const std::size_t mark = name.rfind(kOldTemporaryMark);
  return mark != std::string_view::npos && mark + kOldTemporaryMark.size() + 6 == name.size();
}

bool stale_temporary(const fs::directory_entry& entry, std::chrono::seconds max_age) {
  const std::string name = entry.path().filename().string();
  if (!temporary_name(name)) return false;
  if (const auto owner = temporary_owner(name)) {
    if (::kill(*owner, 0) != 0 && errno == ESRCH) return true;  // its creator is gone
  }
  struct stat status {};
  if (::lstat(entry.path().c_str(), &status) != 0) return false;  // gone already
  const auto modified = std::chrono::system_clock::from_time_t(status.st_mtime);
  return std::chrono::system_clock::now() - modified > max_age;
}

}  // namespace tiletune

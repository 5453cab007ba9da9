#include "tuner/pipeline/shared_references.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "tuner/system/private_files.h"

namespace tiletune {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'t', 't', 'r', 'e', 'f', '0', '0', '1'};

std::system_error failure(const std::string& what, const fs::path& path) {
  return std::system_error(errno, std::generic_category(),
                           fmt::format("{} {}", what, path.string()));
}

// The file's lock, held while this object lives: whoever holds it reads or makes the reference.
class LockFile {
 public:
  explicit LockFile(const fs::path& path)
      : fd_(open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) {
    if (fd_ < 0) throw failure("cannot open the lock", path);
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        close(fd_);
        throw failure("cannot lock", path);
      }
    }
  }
  ~LockFile() { close(fd_); }  // closing releases the lock
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  int fd_;
};

void write_all(int fd, const void* data, std::size_t bytes, const fs::path& path) {
  const char* from = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = write(fd, from, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw failure("cannot write", path);
    from += n;
    bytes -= std::size_t(n);
  }
}

// The table into a temporary beside `path`, renamed into place once whole.
void store(const ReferenceTable& table, const fs::path& path) {
  const TemporaryBeside temporary = create_temporary_beside(path);
  int fd = temporary.fd;
  try {
    const std::int64_t sizes[3] = {table.rows, table.cols, table.depth};
    const std::size_t bytes = table.value.size() * sizeof(double);
    write_all(fd, kMagic, sizeof kMagic, temporary.path);
    write_all(fd, sizes, sizeof sizes, temporary.path);
    write_all(fd, table.value.data(), bytes, temporary.path);
    write_all(fd, table.magnitude.data(), bytes, temporary.path);
    const int closed = close(std::exchange(fd, -1));
    if (closed != 0) throw failure("cannot write", temporary.path);
    if (rename(temporary.path.c_str(), path.c_str()) != 0) {
      throw failure("cannot rename", temporary.path);
    }
  } catch (...) {
    if (fd >= 0) close(fd);
    fs::remove(temporary.path);
    throw;
  }
}

ReferenceTable load(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic] = {};
  std::int64_t sizes[3] = {};
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(sizes), sizeof sizes);
  const auto damaged = [&](const char* why) {
    return std::runtime_error(
        fmt::format("the shared reference {} is damaged: {}", path.string(), why));
  };
  if (!in || std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw damaged("no header");
  if (sizes[0] < 0 || sizes[1] < 0 || sizes[2] < 0) throw damaged("negative sizes");
  ReferenceTable table;
  table.rows = sizes[0];
  table.cols = sizes[1];
  table.depth = sizes[2];
  const std::size_t elements = std::size_t(table.rows) * std::size_t(table.cols);
  if (fs::file_size(path) != sizeof kMagic + sizeof sizes + 2 * elements * sizeof(double)) {
    throw damaged("its size is not its header's");
  }
  table.value.resize(elements);
  table.magnitude.resize(elements);
  const auto bytes = std::streamsize(elements * sizeof(double));
  in.read(reinterpret_cast<char*>(table.value.data()), bytes);
  in.read(reinterpret_cast<char*>(table.magnitude.data()), bytes);
  if (!in) throw damaged("cut short");
  return table;
}

}  // namespace

SharedReferences::SharedReferences(fs::path folder) : folder_(std::move(folder)) {}

std::shared_ptr<const ReferenceTable> SharedReferences::get(
    const std::string& name, const std::function<ReferenceTable()>& compute) const {
  if (folder_.empty()) return std::make_shared<const ReferenceTable>(compute());
  const fs::path path = folder_ / name;
  const LockFile lock(folder_ / (name + ".lock"));
  if (fs::exists(path)) return std::make_shared<const ReferenceTable>(load(path));
  auto table = std::make_shared<const ReferenceTable>(compute());
  store(*table, path);
  return table;
}

}  // namespace tiletune

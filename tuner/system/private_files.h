// Temporary files nobody else can plant or redirect. A file opened by a predictable name in a
// folder others can write (/tmp) lets them put a symlink there first, through which opening with
// O_TRUNC overwrites whatever the link points to. So every temporary file is either created in a
// private directory (mkdtemp: a fresh name, mode 0700) or created exclusively (O_CREAT | O_EXCL |
// O_NOFOLLOW), never reopened by a name that may already exist.
//
// Temporary names carry their creator's pid, "<name>.tmp-<pid>-XXXXXX", so that a cache can tell
// what a killed process left behind (stale_temporary) from what a live writer is still using.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tiletune {

// A new directory "<parent>/<prefix>XXXXXX", mode 0700, whose name nobody had (mkdtemp). Creates
// `parent` first when missing. Throws std::system_error naming the path.
std::filesystem::path make_private_directory(const std::filesystem::path& parent,
                                             std::string_view prefix);

// A directory of this user's at a fixed path (a cache's fallback in /tmp): created with mode 0700
// when missing; an existing one must be a real directory (no symlink), owned by this user, that
// nobody else can write, or another user could plant what tiletune then loads. Throws
// std::runtime_error naming the path and what is wrong with it.
std::filesystem::path own_directory(const std::filesystem::path& path);

// Owns a private directory and removes it, with everything in it, when destroyed.
class PrivateDirectory {
 public:
  PrivateDirectory(const std::filesystem::path& parent, std::string_view prefix)
      : path_(make_private_directory(parent, prefix)) {}
  ~PrivateDirectory();
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Creates `path`, which must not exist yet (a symlink there is not followed: it is an error), with
// mode 0600 (0700 when `executable`), and writes `content` into it. Throws std::system_error
// naming the path; a partly written file is removed.
void write_new_file(const std::filesystem::path& path, std::string_view content,
                    bool executable = false);

// Writes `content` into a new temporary beside `path` (create_temporary_beside), gives it `mode`
// and renames it over `path`: a reader sees the old file or the new one, whole. Throws
// std::system_error naming the path; the temporary is removed.
void replace_file(const std::filesystem::path& path, std::string_view content, mode_t mode = 0600);

// Copies `from` into a new file `to`, created as write_new_file creates it.
void copy_to_new_file(const std::filesystem::path& from, const std::filesystem::path& to);

// A new, empty file "<target>.tmp-<pid>-XXXXXX" beside `target` (mkstemp: exclusive, mode
// 0600), for content that is then renamed into place. Returns its path and an open descriptor
// (the caller closes it). Throws std::system_error naming the folder.
struct TemporaryBeside {
  std::filesystem::path path;
  int fd = -1;
};
TemporaryBeside create_temporary_beside(const std::filesystem::path& target);

// The creator's pid when `name` is a temporary name (".tmp-<pid>-" followed by letters and
// digits at its end).
std::optional<pid_t> temporary_owner(std::string_view name);

// Whether a directory entry is a temporary left behind: named as a temporary (or as older
// versions of tiletune named them, "<name>.tmp.XXXXXX") and either its creator is no longer
// running on this machine or it was last modified more than `max_age` ago (no writer keeps one
// that long). A live writer's recent temporary is never stale.
bool stale_temporary(const std::filesystem::directory_entry& entry,
                     std::chrono::seconds max_age);

// Any temporary name, stale or not.
bool temporary_name(std::string_view name);

}  // namespace tiletune

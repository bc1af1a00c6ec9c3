#include "server/durability/owner_only.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace arbiter::server {

namespace {
std::string Octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string OthersFile(const std::string& path, const struct stat& st) {
  return path + " belongs to uid " + std::to_string(st.st_uid) + ", not the daemon's (" +
         std::to_string(::geteuid()) + "): its mode " + Octal(st.st_mode) +
         " is left as it is (it holds tenants' objects: make it the daemon user's, 0600)";
}
}  // namespace

Status MakeOwnerOnlyDir(const std::string& dir, const std::string& what) {
  auto failed = [&](const std::string& why) {
    return Status::Error("cannot create " + what + " " + dir + ": " + why);
  };
  std::filesystem::path p(dir);
  if (!p.has_filename()) p = p.parent_path();  // "data/": "data"
  if (p.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) return failed(ec.message());
  }
  if (::mkdir(p.c_str(), kOwnerOnlyDirMode) == 0) {
    // A umask taking the owner's own bits (0277) would leave it unusable: the owner's bits
    // added, no one else's (it was never more than 0700).
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && (st.st_mode & 07777) != kOwnerOnlyDirMode &&
        ::chmod(p.c_str(), kOwnerOnlyDirMode) != 0)
      return failed(std::strerror(errno));
    return Status::Ok();
  }
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
  return failed(std::strerror(err == EEXIST ? ENOTDIR : err));
}

std::string MakeOwnerOnly(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return path + ": cannot read its mode (" + std::strerror(errno) + "); left as it is";
  if (!S_ISREG(st.st_mode)) return path + ": not a regular file; left as it is";
  if (st.st_uid != ::geteuid()) return OthersFile(path, st);
  if (std::string linked = HardLinked(path, st); !linked.empty())
    return linked + ": left as it is, neither written nor made 0600 (copy it to a new file, " +
           "move that over it)";
  if ((st.st_mode & 07777) == kOwnerOnlyFileMode) return "";
  if (::fchmod(fd, kOwnerOnlyFileMode) != 0)
    return path + ": cannot make it 0600 (" + std::strerror(errno) + "); its mode stays " +
           Octal(st.st_mode);
  return "";
}

std::string HardLinked(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode) || st.st_nlink <= 1) return "";
  return path + " is a hard link (one of " + std::to_string(st.st_nlink) +
         " names of the same file: one another user planted would have the daemon write, or "
         "make 0600, a file of that user's choosing)";
}

Status OpenOwnerOnlyDb(const std::string& path, sqlite3** db) {
  *db = nullptr;
  auto refused = [&](const std::string& file) {
    return Status::FailedPrecondition(
        file +
        " is a symbolic link; arbiter will not follow it (SQLite would write through it: "
        "remove it)");
  };
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) continue;  // not there: SQLite makes it
    if (std::string linked = HardLinked(file, st); !linked.empty())
      return Status::FailedPrecondition(
          linked + "; arbiter will not open it (copy it to a new file, move that over it)");
    // SQLite opens a -wal or -shm with O_NOFOLLOW, but its error names no file ("unable to
    // open database file"); `path` itself is refused at the open (SQLITE_OPEN_NOFOLLOW).
    if (S_ISLNK(st.st_mode) && file != path) return refused(file);
  }
  const std::filesystem::path name(path);
  const std::string dir = name.has_parent_path() ? name.parent_path().string() : ".";
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) return Status::Internal("cannot open " + path + ": " + std::strerror(errno));
  const std::string resolved = std::string(real) + "/" + name.filename().string();
  std::free(real);
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW;
  if (sqlite3_open_v2(resolved.c_str(), db, flags, nullptr) == SQLITE_OK) return Status::Ok();
  if (*db && sqlite3_extended_errcode(*db) == SQLITE_CANTOPEN_SYMLINK) return refused(path);
  return Status::Internal("cannot open " + path + ": " +
                          (*db ? sqlite3_errmsg(*db) : "out of memory"));
}

std::vector<std::string> MakeOwnerOnly(const std::vector<std::string>& paths) {
  std::vector<std::string> warnings;
  for (const std::string& path : paths) {
    // O_NONBLOCK: a FIFO planted under the name does not hold the start-up (it is not
    // read); O_NOFOLLOW: a symbolic link fails (ELOOP), its target untouched.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) continue;
      struct stat st {};
      if (err == ELOOP)
        warnings.push_back(path +
                           " is a symbolic link: left as it is, its target's mode unchanged");
      else if (::lstat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid())
        warnings.push_back(OthersFile(path, st));
      else
        warnings.push_back(path + ": cannot open it to make it 0600 (" + std::strerror(err) +
                           "); left as it is");
      continue;
    }
    if (std::string w = MakeOwnerOnly(fd, path); !w.empty()) warnings.push_back(std::move(w));
    ::close(fd);
  }
  return warnings;
}

}  // namespace arbiter::server

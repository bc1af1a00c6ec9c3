// The data directory and the daemon's files in it are the daemon user's alone: they hold every
// tenant's objects, and deleted ones until their bytes are written over (docs/serve.md, Journal
// and recovery). Shared by the journal (journal.db, LOCK, snapshot.bin*) and the dashboard's
// history (history.db).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

struct sqlite3;

namespace arbiter::server {

// The mode of the daemon's files, and of a data directory it creates.
constexpr mode_t kOwnerOnlyFileMode = 0600;
constexpr mode_t kOwnerOnlyDirMode = 0700;

// Creates `dir` if it is not there: its parents as std::filesystem::create_directories does, and
// `dir` itself with mkdir(dir, 0700) (never another mode first, whatever the umask). A directory
// that exists keeps its mode (the operator's: `--data .` is somebody's directory). Fails when it
// cannot be made or is not a directory; `what` names it in the message ("--data").
Status MakeOwnerOnlyDir(const std::string& dir, const std::string& what);

// Makes each of `paths` that exists mode 0600, never through a symbolic link (a link named like
// a daemon file, planted in a shared --data, would otherwise have its target chmodded): opened
// with O_NOFOLLOW, then fchmod. What it leaves as it is comes back as warnings (for the log): a
// symbolic link, not a regular file, a file of another user (its mode is that user's to set), a
// hard link (HardLinked), one it cannot open or change. A file that is not there is no warning.
std::vector<std::string> MakeOwnerOnly(const std::vector<std::string>& paths);

// The same for a file open as `fd` (named `path` in the warning): "" when it is the daemon
// user's and 0600 now.
std::string MakeOwnerOnly(int fd, const std::string& path);

// "" unless `st` (a daemon file's, named `path`) is a regular file of more than one name; else
// that it is a hard link: another name of the same file, which another local user could have
// planted as `path` before the start (naming a file of the daemon user's: ~/.bashrc, or
// /etc/shadow under root) to have the daemon write it or make it 0600. The caller says what it
// leaves undone.
std::string HardLinked(const std::string& path, const struct stat& st);

// Opens the SQLite database `path` (journal.db, history.db; read-write, created if not there)
// as *db, which the caller closes whether this fails or not. SQLite would write through a
// symbolic link or a hard link there (the database, its -wal and -shm): such a file fails the
// open, naming it. `path` itself is opened with SQLITE_OPEN_NOFOLLOW (a link planted after
// the checks fails too), under its directory's resolved name: NOFOLLOW refuses a link anywhere
// in the name, and a --data reached through one (a link to a larger disk) is the operator's.
Status OpenOwnerOnlyDb(const std::string& path, sqlite3** db);

}  // namespace arbiter::server

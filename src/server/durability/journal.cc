#include "server/durability/journal.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "adapters/sqlite/statement.h"
#include "server/durability/owner_only.h"

namespace arbiter::server {

using sqlite::Stmt;
using sqlite::Txn;

namespace {
std::string Hex8() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

constexpr const char* kFormatPrefix = "arbiter-journal ";
// DIR/snapshot.bin: a line ("arbiter-snapshot 1 SEQ LENGTH\n", LENGTH in 20 digits), then LENGTH
// bytes of snapshot.
constexpr const char* kSnapshotFile = "snapshot.bin";
constexpr const char* kSnapshotPrefix = "arbiter-snapshot 1 ";
// The mode of every file in the data directory (which Open makes 0700): the owner's alone.
constexpr mode_t kFileMode = kOwnerOnlyFileMode;

// Writes all of `data` to `fd`; false (errno set) on an error.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// `path` created, or written over from its start and cut to its new length (the blocks of an
// older snapshot's file are used again: see StoreSnapshot): the snapshot file's first line (its
// length given once known), the bytes `write` gives (through a buffer), synced to disk.
Status WriteSnapshotFile(const std::string& path, int64_t seq,
                         const Journal::SnapshotWriter& write) {
  // Not through a symbolic link (a planted one fails the snapshot, and is removed).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, kFileMode);
  if (fd < 0) return Status::Internal("snapshot: cannot create " + path + ": " + strerror(errno));
  // It may be an older snapshot's, made 0644 by an older release. Another user's, a hard link,
  // or one that cannot be made 0600, is not written (StoreSnapshot removes it: the next is the
  // daemon's).
  if (std::string w = MakeOwnerOnly(fd, path); !w.empty()) {
    ::close(fd);
    return Status::Internal("snapshot: " + w);
  }
  auto head = [&](uint64_t length) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%020llu\n", static_cast<unsigned long long>(length));
    return kSnapshotPrefix + std::to_string(seq) + " " + buf;
  };
  const std::string first = head(0);
  std::string buffer;
  uint64_t length = 0, written = 0, started = 0, waited = 0;
  bool ok = WriteAll(fd, first);
  // Written back as it goes (RocksDB's bytes_per_sync), 8 MB at a time, and never more than
  // 16 MB of it on its way to the disk: the write-back of each 8 MB is started, then the one
  // before waited for. Left dirty to the final fsync, hundreds of MB at 1M live pods were flushed
  // at once; started but not waited for, as much was queued at the disk ahead of the journal's
  // commits, which waited behind it (issue 27: the longest create while a snapshot was stored).
  constexpr uint64_t kWriteBack = 8u << 20;
  const auto at = [&](uint64_t offset) { return static_cast<off_t>(first.size() + offset); };
  auto put = [&](std::string_view data) {
    ok = ok && WriteAll(fd, data);
    written += data.size();
    while (ok && written - started >= kWriteBack) {
      (void)::sync_file_range(fd, at(started), static_cast<off_t>(kWriteBack),
                              SYNC_FILE_RANGE_WRITE);
      if (started > waited)
        (void)::sync_file_range(
            fd, at(waited), static_cast<off_t>(started - waited),
            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
      waited = started;
      started += kWriteBack;
    }
  };
  auto out = [&](std::string_view piece) {
    length += piece.size();
    if (piece.size() >= (1u << 20)) {  // a large piece (the engine's snapshot) is not copied
      put(buffer);
      buffer.clear();
      for (size_t i = 0; i < piece.size(); i += kWriteBack) put(piece.substr(i, kWriteBack));
      return ok;
    }
    buffer.append(piece);
    if (buffer.size() >= (1u << 20)) {
      put(buffer);
      buffer.clear();
    }
    return ok;
  };
  ok = ok && write(out);
  put(buffer);
  const std::string last = head(length);  // the same width: written over the first
  ok = ok && ::pwrite(fd, last.data(), last.size(), 0) == static_cast<ssize_t>(last.size()) &&
       ::ftruncate(fd, at(length)) == 0 && ::fsync(fd) == 0;
  const std::string why = ok ? "" : strerror(errno);
  if (::close(fd) != 0 && ok) return Status::Internal("snapshot: closing " + path);
  if (!ok) return Status::Internal("snapshot: writing " + path + ": " + why);
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Internal("snapshot: cannot open " + dir + ": " + strerror(errno));
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Status::Internal("snapshot: syncing " + dir + ": " + strerror(errno));
  return Status::Ok();
}

// The format version of a meta.format value, or 0 when it is not one.
int FormatVersion(const std::string& value) {
  const std::string prefix = kFormatPrefix;
  if (value.rfind(prefix, 0) != 0 || value.size() == prefix.size() || value.size() > 24) return 0;
  int v = 0;
  for (size_t i = prefix.size(); i < value.size(); ++i) {
    if (value[i] < '0' || value[i] > '9') return 0;
    v = v * 10 + (value[i] - '0');
  }
  return v;
}
}  // namespace

Status Journal::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Status::Internal(std::string("journal: ") + m + " (" + sql + ")");
  }
  return Status::Ok();
}

Result<std::string> Journal::MetaValue(const char* key) {
  Stmt st(db_, "SELECT value FROM meta WHERE key = ?1");
  if (!st.ok()) return Status::Internal("journal: " + st.error());
  st.Text(1, key);
  const int rc = st.Step();
  if (rc == SQLITE_ROW) return st.ColText(0);
  if (rc != SQLITE_DONE) return Status::Internal(std::string("journal: ") + sqlite3_errmsg(db_));
  return std::string();
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& dir) {
  // The directory and the files are the daemon user's alone: every tenant's objects are in them,
  // and deleted ones stay readable in free pages until reused (secure_delete=FAST, below) and in
  // the older snapshot's file. Made with the defaults (0755, 0644) they were anybody's to read.
  // A directory that exists keeps its mode (the operator's: `--data .` is somebody's directory).
  if (Status s = MakeOwnerOnlyDir(dir, "--data"); !s.ok()) return s;
  std::unique_ptr<Journal> j(new Journal());
  const std::string path = dir + "/journal.db";
  j->path_ = path;
  j->dir_ = dir;
  if (Status s = j->Lock(); !s.ok()) return s;
  if (Status s = j->MakeFilesOwnerOnly(); !s.ok()) return s;
  // Not through a symbolic link or a hard link planted there: the daemon does not start.
  if (Status s = OpenOwnerOnlyDb(path, &j->db_); !s.ok()) return s;
  sqlite3_busy_timeout(j->db_, 5000);
  for (const char* sql :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        // Debian's SQLite is built with secure_delete on: every page a compaction freed was
        // written over with zeros, through the WAL, in the compaction's commit (256 MB of 3 MB
        // records: a 276 MB WAL, kept at that size, and a 1.4 s commit that every request
        // waited for). FAST zeroes deleted content on b-tree pages only (no extra I/O); the freed
        // overflow pages of big records go to the freelist as they are, reused by the next
        // records (the older snapshot's file is not zeroed either).
        "PRAGMA secure_delete=FAST",
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, record TEXT NOT NULL, "
        "commands BLOB)",
        "CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER "
        "NOT NULL, data BLOB NOT NULL)"}) {
    if (Status s = j->Exec(sql); !s.ok()) return s;
  }
  // The instance id (uids) and the format version, written together when the journal is new.
  auto instance = j->MetaValue("instance");
  if (!instance.ok()) return instance.status();
  auto format = j->MetaValue("format");
  if (!format.ok()) return format.status();
  j->instance_id_ = instance.value();
  if (j->instance_id_.empty()) {
    if (!format.value().empty())
      return Status::Internal(path + " has a format (" + format.value() + ") but no instance id");
    j->instance_id_ = Hex8();
    Txn t(j->db_, "journal");
    if (!t.ok()) return t.status();
    Stmt ins(j->db_, "INSERT INTO meta (key, value) VALUES ('instance', ?1), ('format', ?2)");
    ins.Text(1, j->instance_id_);
    ins.Text(2, kFormatPrefix + std::to_string(kFormatVersion));
    if (Status s = ins.Run("journal: writing its format"); !s.ok()) return s;
    if (Status s = t.Commit(); !s.ok()) return s;
    j->format_version_ = kFormatVersion;
    return j;
  }
  const int version = FormatVersion(format.value());
  if (version == 0)
    return Status::Internal(path + ": unknown journal format \"" + format.value() +
                            "\" (this arbiter reads \"" + kFormatPrefix + "1\" to \"" +
                            kFormatPrefix + std::to_string(kFormatVersion) + "\")");
  if (version > kFormatVersion)
    return Status::Internal(path + " is journal format " + std::to_string(version) +
                            ", written by a newer arbiter; this arbiter reads formats up to " +
                            std::to_string(kFormatVersion) +
                            " (run the newer arbiter, or start from an empty --data directory)");
  j->format_version_ = version;
  // Formats 1-3 walked pending pods, 1-4 ran Jobs, 1-5 and 1-6 stored pods by their own rules:
  // every record of such a journal; once migrated, the records up to meta's mark.
  for (size_t i = 0; i < kMarkCount; ++i) {
    auto through = j->Through(kMarks[i].key, kMarks[i].format + 1);
    if (!through.ok()) return through.status();
    j->through_[i] = through.value();
  }
  return j;
}

int Journal::RecordFormat(int64_t seq) const {
  for (size_t i = 0; i < kMarkCount; ++i)
    if (seq <= through_[i]) return kMarks[i].format;
  return kFormatVersion;
}

Result<int64_t> Journal::Through(const char* key, int from_version) {
  if (format_version_ < from_version) return std::numeric_limits<int64_t>::max();
  auto value = MetaValue(key);
  if (!value.ok()) return value.status();
  const std::string& v = value.value();
  if (v.empty()) return int64_t{0};
  errno = 0;
  const int64_t seq = std::strtoll(v.c_str(), nullptr, 10);
  if (v.find_first_not_of("0123456789") != std::string::npos || errno == ERANGE)
    return Status::Internal(path_ + ": meta " + key + " is not a record number: \"" + v + "\"");
  return seq;
}

Journal::~Journal() {
  Stop();
  if (db_) sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

// journal.db made here when it is not there (never through a symbolic link), so that SQLite
// opens it rather than creating it 0644 (its -wal and -shm take its mode). The daemon's files
// there (an older release's 0644 ones, a spare snapshot) are made 0600 too, as far as the daemon
// may: a symbolic link named like one (its target is not the daemon's to chmod: a planted
// `snapshot.bin.old -> ~/.somefile`), a hard link and another user's file keep their modes, and
// are warned of (warnings()).
Status Journal::MakeFilesOwnerOnly() {
  const int fd =
      ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode);
  if (fd < 0 && errno != EEXIST)
    return Status::Internal("cannot create " + path_ + ": " + std::strerror(errno));
  if (fd >= 0) ::close(fd);
  const std::string snapshot = dir_ + "/" + kSnapshotFile;
  // A crash between StoreSnapshot's link and its rename left the spare a second name of
  // snapshot.bin: it goes (rather than both being warned of as hard links).
  struct stat current {};
  struct stat spare {};
  if (::lstat(snapshot.c_str(), &current) == 0 && S_ISREG(current.st_mode) &&
      current.st_nlink == 2 && ::lstat((snapshot + ".old").c_str(), &spare) == 0 &&
      spare.st_dev == current.st_dev && spare.st_ino == current.st_ino)
    std::remove((snapshot + ".old").c_str());
  for (std::string& w : MakeOwnerOnly(
           {path_, path_ + "-wal", path_ + "-shm", snapshot, snapshot + ".tmp", snapshot + ".old"}))
    warnings_.push_back(std::move(w));
  return Status::Ok();
}

// A second daemon on the same directory used to start, serve a copy of the state and turn
// read-only at its first write (its record numbers taken by the first's). The lock is the
// kernel's: it goes with the process, a crash included. The file holds the holder's pid.
Status Journal::Lock() {
  const std::string lock = dir_ + "/LOCK";
  // Not through a symbolic link: the pid is written over the file's bytes.
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, kFileMode);
  if (lock_fd_ < 0) return Status::Internal("cannot open " + lock + ": " + std::strerror(errno));
  // Nor through a hard link: the same bytes are another name's (planted before the start).
  struct stat st {};
  if (::fstat(lock_fd_, &st) == 0)
    if (std::string linked = HardLinked(lock, st); !linked.empty())
      return Status::FailedPrecondition(linked + "; arbiter will not write it (remove it)");
  // An older release made it 0644.
  if (std::string w = MakeOwnerOnly(lock_fd_, lock); !w.empty()) warnings_.push_back(std::move(w));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK)
      return Status::Internal("cannot lock " + lock + ": " + std::strerror(err));
    char pid[32] = {};
    const ssize_t n = ::pread(lock_fd_, pid, sizeof pid - 1, 0);
    const std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "";
    return Status::FailedPrecondition("--data " + dir_ + " is in use by another arbiter serve" +
                                      (holder.empty() ? "" : " (pid " + holder + ")") + ": " +
                                      lock + " is locked; stop that one or give another directory");
  }
  const std::string self = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 ||
      ::pwrite(lock_fd_, self.data(), self.size(), 0) != static_cast<ssize_t>(self.size()))
    return Status::Internal("cannot write " + lock + ": " + std::strerror(errno));
  return Status::Ok();
}

Result<std::optional<Journal::Snapshot>> Journal::LoadSnapshotFile() const {
  const std::string path = dir_ + "/" + kSnapshotFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<Snapshot>();  // none (yet)
  std::string head;
  std::getline(in, head);
  const std::string prefix = kSnapshotPrefix;
  Snapshot s;
  unsigned long long len = 0;
  long long seq = 0;
  if (head.rfind(prefix, 0) != 0 ||
      std::sscanf(head.c_str() + prefix.size(), "%lld %llu", &seq, &len) != 2 || seq <= 0)
    return Status::Internal(path + ": not an arbiter snapshot file");
  s.seq = seq;
  s.bytes.resize(len);
  in.read(s.bytes.data(), static_cast<std::streamsize>(len));
  if (static_cast<unsigned long long>(in.gcount()) != len || in.peek() != EOF)
    return Status::Internal(path + ": truncated or too long (" + std::to_string(len) +
                            " bytes expected)");
  return std::optional<Snapshot>(std::move(s));
}

// The newest of the snapshot file and the `snapshot` table (formats 1 and 2, and migrations).
Result<std::optional<Journal::Snapshot>> Journal::LoadSnapshot() {
  auto file = LoadSnapshotFile();
  if (!file.ok()) return file.status();
  std::optional<Snapshot> out = std::move(file).value();
  Stmt st(db_, "SELECT seq, data FROM snapshot WHERE id = 1");
  if (!st.ok()) return Status::Internal("journal: " + st.error());
  const int rc = st.Step();
  if (rc == SQLITE_ROW) {
    if (!out || st.ColInt(0) > out->seq) {
      Snapshot s;
      s.seq = st.ColInt(0);
      s.bytes = st.ColBlob(1);
      out = std::move(s);
    }
  } else if (rc != SQLITE_DONE) {
    return Status::Internal(std::string("journal: reading the snapshot: ") + sqlite3_errmsg(db_));
  }
  if (out) {
    std::lock_guard<std::mutex> l(mu_);
    snapshot_seq_ = out->seq;
  }
  return out;
}

Status Journal::Replay(int64_t after_seq,
                       const std::function<Status(int64_t seq, const std::string& record)>& fn) {
  return Replay(after_seq, [&](int64_t seq, const std::string& record, const std::string&) {
    return fn(seq, record);
  });
}

Status Journal::Replay(int64_t after_seq,
                       const std::function<Status(int64_t seq, const std::string& record,
                                                  const std::string& commands)>& fn) {
  Stmt st(db_, format_version_ >= 2
                   ? "SELECT seq, record, commands FROM journal WHERE seq > ?1 ORDER BY seq"
                   : "SELECT seq, record, NULL FROM journal WHERE seq > ?1 ORDER BY seq");
  if (!st.ok()) return Status::Internal("journal: " + st.error());
  st.Int(1, after_seq);
  Status result;
  int64_t last = after_seq;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    const int64_t seq = st.ColInt(0);
    if (seq != last + 1) {
      result = Status::Internal("journal: record " + std::to_string(last + 1) +
                                " is missing (next is " + std::to_string(seq) + ")");
      break;
    }
    last = seq;
    if (Status s = fn(seq, st.ColText(1), st.ColBlob(2)); !s.ok()) {
      result = Status::Internal("journal record " + std::to_string(seq) + ": " + s.message());
      break;
    }
  }
  if (result.ok() && rc != SQLITE_DONE && rc != SQLITE_ROW)
    result = Status::Internal(std::string("journal: ") + sqlite3_errmsg(db_));
  {
    std::lock_guard<std::mutex> l(mu_);
    durable_seq_ = std::max(durable_seq_, last);
    next_seq_ = std::max(next_seq_, last + 1);
  }
  return result;
}

Status Journal::Migrate(int64_t last_seq, const std::function<std::string()>& snapshot) {
  if (format_version_ >= kFormatVersion) return Status::Ok();
  Txn t(db_, "journal");
  if (!t.ok()) return t.status();
  if (format_version_ < 2) {
    if (Status s = Exec("ALTER TABLE journal ADD COLUMN commands BLOB"); !s.ok()) return s;
    if (last_seq > 0) {
      Stmt snap(db_, "INSERT OR REPLACE INTO snapshot (id, seq, data) VALUES (1, ?1, ?2)");
      const std::string bytes = snapshot();
      snap.Int(1, last_seq);
      snap.BlobRef(2, bytes);
      if (Status s = snap.Run("journal: migrating (the snapshot)"); !s.ok()) return s;
      Stmt compact(db_, "DELETE FROM journal WHERE seq <= ?1");
      compact.Int(1, last_seq);
      if (Status s = compact.Run("journal: migrating (compaction)"); !s.ok()) return s;
    }
  }
  Stmt format(db_, "UPDATE meta SET value = ?1 WHERE key = 'format'");
  format.Text(1, kFormatPrefix + std::to_string(kFormatVersion));
  if (Status s = format.Run("journal: migrating (the format)"); !s.ok()) return s;
  // The marks of the behaviours the journal's format had (Through): a format-4 journal keeps its
  // walk-through, which its own migration wrote.
  for (const Mark& m : kMarks) {
    if (format_version_ > m.format) continue;
    Stmt mark(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
    mark.Text(1, m.key);
    mark.Text(2, std::to_string(last_seq));
    if (Status s = mark.Run("journal: migrating (" + std::string(m.key) + ")"); !s.ok()) return s;
  }
  if (Status s = t.Commit(); !s.ok()) return s;
  for (size_t i = 0; i < kMarkCount; ++i)
    if (format_version_ <= kMarks[i].format) through_[i] = last_seq;
  const bool snapshotted = format_version_ < 2 && last_seq > 0;
  format_version_ = kFormatVersion;
  std::lock_guard<std::mutex> l(mu_);
  if (snapshotted) snapshot_seq_ = last_seq;
  return Status::Ok();
}

void Journal::Start(int64_t last_seq, std::function<void()> after_commit,
                    std::function<void(const std::string&)> on_failure) {
  ARB_CHECK_MSG(format_version_ == kFormatVersion, "a journal of an older format (Migrate first)");
  after_commit_ = std::move(after_commit);
  on_failure_ = std::move(on_failure);
  // Records the snapshot covers that a crash left in the middle of their compaction.
  compact_to_ = snapshot_seq_;
  compacting_ = snapshot_seq_ > 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    next_seq_ = last_seq + 1;
    durable_seq_ = last_seq;
  }
  writer_ = std::thread([this] { WriterLoop(); });
}

int64_t Journal::Append(std::string record, std::string commands,
                        std::function<void()> on_durable) {
  std::lock_guard<std::mutex> l(mu_);
  const int64_t seq = next_seq_++;
  queue_.push_back(Item{seq, std::move(record), std::move(commands), std::move(on_durable), false});
  work_cv_.notify_one();
  return seq;
}

Status Journal::StoreSnapshot(int64_t seq, const std::string& bytes) {
  return StoreSnapshot(
      seq, [&](const std::function<bool(std::string_view)>& out) { return out(bytes); });
}

Status Journal::StoreSnapshot(int64_t seq, const SnapshotWriter& write) {
  const std::string path = dir_ + "/" + kSnapshotFile;
  const std::string tmp = path + ".tmp";
  if (Status s = WriteSnapshotFile(tmp, seq, write); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  // Never a snapshot of changes that are not durable: after a failed write the daemon rebuilds
  // from the snapshot and the records that were written.
  if (!WaitDurable(seq)) {
    std::remove(tmp.c_str());
    return Status::Unavailable("snapshot: the records it covers were not written");
  }
  // The snapshot it replaces keeps its blocks: linked to `spare` first, and after the rename
  // given the tmp name, the next snapshot is written over it. Freed instead, its hundreds of MB
  // were discarded (ext4 mounted with `discard`) in the commit that followed, and the journal's
  // fsync waited for it: the longest create grew with the live pods (issue 27). A spare a crash
  // left is freed here, once.
  const std::string spare = path + ".old";
  std::remove(spare.c_str());
  const bool kept = ::link(path.c_str(), spare.c_str()) == 0;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = strerror(errno);
    std::remove(tmp.c_str());
    if (kept) std::remove(spare.c_str());
    return Status::Internal("snapshot: renaming " + tmp + ": " + why);
  }
  if (kept) (void)std::rename(spare.c_str(), tmp.c_str());
  if (Status s = SyncDir(dir_); !s.ok()) {
    // The renames may not be on the disk: the file now named tmp may still be snapshot.bin
    // there, so it is never written over.
    std::remove(tmp.c_str());
    return s;
  }
  std::lock_guard<std::mutex> l(mu_);
  queue_.push_back(Item{seq, {}, {}, nullptr, true});
  work_cv_.notify_one();
  return Status::Ok();
}

bool Journal::WaitDurable(int64_t seq) {
  std::unique_lock<std::mutex> l(mu_);
  durable_cv_.wait(l, [&] { return durable_seq_ >= seq || failed_ || writer_done_; });
  return durable_seq_ >= seq;
}

int Journal::Durable(int64_t seq) const {
  std::lock_guard<std::mutex> l(mu_);
  if (durable_seq_ >= seq) return 1;
  return failed_ || writer_done_ ? -1 : 0;
}

Status Journal::Commit(std::deque<Item>& batch, Stmt& ins, Stmt& drop_table_snapshot, int64_t* last,
                       uint64_t* n) {
  Txn t(db_, "journal");
  if (!t.ok()) return t.status();
  int64_t appended_bytes = 0;  // the records' text and commands: the compaction deletes twice that
  for (auto& it : batch) {
    if (it.snapshot) {  // the records a stored snapshot covers go in pieces; an older one in the
                        // table at once
      compact_to_ = std::max(compact_to_, it.seq);
      compacting_ = true;
      drop_table_snapshot.Reset();
      drop_table_snapshot.Int(1, it.seq);
      if (Status s = drop_table_snapshot.Run("journal: compaction"); !s.ok()) return s;
      continue;
    }
    ins.Reset();
    ins.Int(1, it.seq);
    ins.TextRef(2, it.record);
    ins.BlobRef(3, it.commands);
    if (Status s = ins.Run("journal: writing"); !s.ok()) return s;
    *last = it.seq;
    ++*n;
    appended_bytes += static_cast<int64_t>(it.record.size() + it.commands.size());
  }
  uint64_t deleted = 0;
  if (compacting_)
    if (Status s = CompactPiece(static_cast<int64_t>(*n), appended_bytes, &deleted); !s.ok())
      return s;
  if (Status s = t.Commit(); !s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  stats_.compacted += deleted;
  stats_.most_compacted_in_one = std::max(stats_.most_compacted_in_one, deleted);
  return Status::Ok();
}

Status Journal::CompactPiece(int64_t appended, int64_t appended_bytes, uint64_t* deleted) {
  // The oldest record, then a range of seq: each statement a search of the primary key.
  Stmt first(db_, "SELECT min(seq) FROM journal");
  if (!first.ok()) return Status::Internal("journal: compaction: " + first.error());
  if (first.Step() != SQLITE_ROW)
    return Status::Internal(std::string("journal: compaction: ") + sqlite3_errmsg(db_));
  const bool empty = sqlite3_column_type(first.get(), 0) == SQLITE_NULL;
  const int64_t from = first.ColInt(0);
  if (empty || from > compact_to_) {
    compacting_ = false;
    return Status::Ok();
  }
  // Stopping: the rest at once (no create waits for it), rather than a commit and fsync a piece.
  // Else at most compaction_chunk_ records, or twice as many as this commit appends: with a
  // fixed piece, a writer appending more than it in each commit (group commit under load) would
  // outrun the compaction, and the journal grow without bound.
  int64_t to = finishing_
                   ? compact_to_
                   : std::min(compact_to_, from + std::max(compaction_chunk_, 2 * appended) - 1);
  if (!finishing_) {
    // And at most compaction_bytes_ of records (at least one): deleting a record reads its
    // overflow pages, and 512 records of 3 MB (an object near the size limit) in one commit
    // held every request's commit for as long. But at least twice the bytes this commit appends
    // (within those records): a writer of 12 MB a commit (4 records of 3 MB) against 8 MiB
    // (2 of them) deleted grew the journal by 6 MB a commit, forever. So the records a snapshot
    // covers shrink at least twice as fast as the journal grows (in bytes, or in records when the
    // record bound stops them first), and are gone before the next snapshot is due.
    // Their sizes are read in order up to that.
    Stmt sizes(
        db_,
        "SELECT seq, length(CAST(record AS BLOB)) + coalesce(length(commands), 0) FROM journal "
        "WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq");
    if (!sizes.ok()) return Status::Internal("journal: compaction: " + sizes.error());
    sizes.Int(1, from);
    sizes.Int(2, to);
    const int64_t owed = 2 * appended_bytes;
    int64_t bytes = 0, last = from;
    int rc;
    while ((rc = sizes.Step()) == SQLITE_ROW) {
      const int64_t size = sizes.ColInt(1);
      if (sizes.ColInt(0) > from && bytes >= owed && bytes + size > compaction_bytes_) break;
      bytes += size;
      last = sizes.ColInt(0);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      return Status::Internal(std::string("journal: compaction: ") + sqlite3_errmsg(db_));
    to = last;
  }
  Stmt del(db_, "DELETE FROM journal WHERE seq <= ?1");
  del.Int(1, to);
  if (Status s = del.Run("journal: compaction"); !s.ok()) return s;
  *deleted = static_cast<uint64_t>(sqlite3_changes(db_));
  compacting_ = to < compact_to_;
  return Status::Ok();
}

void Journal::WriterLoop() {
  std::string failure;
  {
    Stmt ins(db_, "INSERT INTO journal (seq, record, commands) VALUES (?1, ?2, ?3)");
    Stmt snap(db_, "DELETE FROM snapshot WHERE seq <= ?1");
    for (const Stmt* s : {&ins, &snap})
      if (!s->ok()) failure = "journal: " + s->error();
    while (failure.empty()) {
      std::deque<Item> batch;
      std::function<Status()> hook;
      {
        std::unique_lock<std::mutex> l(mu_);
        // A compaction left in pieces goes on while no records come (and before stopping).
        work_cv_.wait(l, [&] { return !queue_.empty() || stopping_ || compacting_; });
        if (queue_.empty() && stopping_ && !compacting_) break;
        finishing_ = stopping_;
        batch.swap(queue_);
        hook = commit_hook_;
      }
      const auto t0 = std::chrono::steady_clock::now();
      int64_t last = 0;
      uint64_t n = 0;
      Status s = hook ? hook() : Status::Ok();
      if (s.ok()) s = Commit(batch, ins, snap, &last, &n);
      if (!s.ok()) {
        failure = s.message();
        break;
      }
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (batch.empty()) continue;  // a piece of compaction alone: no commit anybody waits for
      for (auto& it : batch)
        if (it.on_durable) it.on_durable();
      {
        std::lock_guard<std::mutex> l(mu_);
        for (auto& it : batch)
          if (it.snapshot) snapshot_seq_ = it.seq;
        if (last) durable_seq_ = last;
        stats_.commits++;
        stats_.records += n;
        stats_.sum_seconds += secs;
        for (size_t i = 0; i < stats_.bounds.size(); ++i)
          if (secs <= stats_.bounds[i]) stats_.buckets[i]++;
      }
      if (after_commit_) after_commit_();
      std::lock_guard<std::mutex> l(mu_);
      durable_cv_.notify_all();
    }
  }
  if (!failure.empty()) {
    // Sticky: nothing is written after a failure (LevelDB's bg_error_). What was queued, and
    // anything appended later, never becomes durable; its waiters are told.
    {
      std::lock_guard<std::mutex> l(mu_);
      failed_ = true;
      error_ = failure;
      queue_.clear();
    }
    if (on_failure_) on_failure_(failure);
  }
  std::lock_guard<std::mutex> l(mu_);
  writer_done_ = true;
  durable_cv_.notify_all();
}

void Journal::SetCommitHook(std::function<Status()> hook) {
  std::lock_guard<std::mutex> l(mu_);
  commit_hook_ = std::move(hook);
}

void Journal::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    work_cv_.notify_all();
  }
  if (writer_.joinable()) writer_.join();
  std::lock_guard<std::mutex> l(mu_);
  durable_cv_.notify_all();
}

int64_t Journal::last_seq() const {
  std::lock_guard<std::mutex> l(mu_);
  return next_seq_ - 1;
}
int64_t Journal::durable_seq() const {
  std::lock_guard<std::mutex> l(mu_);
  return durable_seq_;
}
bool Journal::failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return failed_;
}
std::string Journal::error() const {
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}
JournalStats Journal::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}
int64_t Journal::records_since_snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return durable_seq_ - snapshot_seq_;
}

}  // namespace arbiter::server

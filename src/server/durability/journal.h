// The daemon's journal: every accepted mutation (cluster.h's Mutation, one JSON text each, with
// the time it was applied, and the engine commands it gave the engine: command_tape.h) in SQLite
// under the data directory (DIR/journal.db, WAL mode, synchronous=FULL), and the latest snapshot of
// the whole state. docs/serve.md states the format.
//
// Group commit: Append() (called under the daemon's lock, in the order mutations were applied)
// only queues a record and gives it the next sequence number; one writer thread commits
// whatever is queued in one transaction (one fsync for many concurrent requests) and then marks
// those sequence numbers durable. A request is acknowledged after WaitDurable(seq).
// Snapshots (format 3) are written beside the journal, not in its transactions, so that neither
// the daemon's lock nor the writer waits for them: StoreSnapshot(seq, bytes), on the daemon's
// snapshot thread, writes DIR/snapshot.bin.tmp and syncs it, waits until the records up to seq
// are durable, renames it to DIR/snapshot.bin (and syncs the directory; the file it replaces is
// kept as the next snapshot.bin.tmp and written over, never freed), and only then queues
// the compaction of the records it covers for the writer. A crash at any point leaves a complete
// snapshot (the new one or the one before) and every record after it. Start-up reads the newest
// snapshot (the file, or the `snapshot` table of formats 1 and 2), then the records after it.
// The compaction is done in pieces, at most compaction_chunk records (and compaction_bytes of
// them) in each commit beside the records it writes, or twice what the commit writes if more
// (so a writer never outruns it), and while idle; what is left at Stop() in one commit:
// deleting a whole interval's records in one transaction (as many as the live objects, issue 27)
// held every create's commit for seconds at 1M live pods. Records a snapshot
// covers that are still in the table are never replayed (nor are those a crash left).
// A failed write is sticky (LevelDB's bg_error_): the writer stops, nothing queued or appended
// after it is ever written, every WaitDurable answers false, and `on_failure` is told once.
// The format version (meta.format, "arbiter-journal N") is checked at Open: a journal of a newer
// format is refused with both versions named. Formats 1 (records without commands) and 2 (the
// snapshot in the `snapshot` table) are read, and migrated to the current format by Migrate()
// before anything is written.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"

struct sqlite3;

namespace arbiter::sqlite {
class Stmt;
}

namespace arbiter::server {

struct JournalStats {
  uint64_t commits = 0;  // transactions (fsyncs)
  uint64_t records = 0;
  // Commit (fsync) latency histogram: upper bounds in seconds, cumulative counts.
  std::vector<double> bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};
  std::vector<uint64_t> buckets = std::vector<uint64_t>(10, 0);
  double sum_seconds = 0;
  uint64_t compacted = 0;              // records deleted after snapshots
  uint64_t most_compacted_in_one = 0;  // the most of those in one commit
};

class Journal {
 public:
  struct Snapshot {
    int64_t seq = 0;  // the last record it covers
    std::string bytes;
  };

  // The format this arbiter writes (and the newest it reads). 3: snapshots in DIR/snapshot.bin.
  // 4: its records are replayed with pending pods' statuses following the engine's restatements
  // (Cluster::SetPendingWalk off); records of formats 1-3 (meta.walk-through: up to which seq a
  // migrated journal holds them) with the walk. 5: a Job's pods are named from the store's
  // resourceVersion and its back-off counts only the failures it counted (Cluster::SetFormat4Jobs
  // off); records of formats 1-4 (meta.format4-jobs-through) by those releases' rules. 6: a pod
  // is stored with the resources kube-apiserver's defaulting and LimitRanger write into it, and a
  // finished container with its startedAt (Cluster::SetFormat5Rules off); records of formats 1-5
  // (meta.format5-through) by those releases' rules. 7: a deleted pod's deletionTimestamp is when
  // its grace period ends and a second, shorter delete shortens it (Cluster::SetRecordFormat);
  // records of formats 1-6 (meta.format6-through) by those releases' rules. 8: a Job's sync makes
  // and deletes at most 500 pods, the rest at later syncs, each an advance record of its own
  // (Cluster::SetFormat7Rules off); records of formats 1-7 (meta.format7-through) made or deleted
  // every pod of a sync in one record, and replay so. 9: a Job being filled (more pods than a sync
  // makes) is synced by the clock's advances and its own object's mutations alone, not by any
  // other mutation that comes first (Cluster::SetFormat8Rules off); records of formats 1-8
  // (meta.format8-through) synced it at any mutation, and replay so. 10: a deleted Job's pods
  // beyond one sync's worth are deleted or released by the clock's advances, within their budget
  // (Cluster::SetFormat9Rules off); records of formats 1-9 (meta.format9-through) acted on every
  // pod in the delete's record, and replay so. 11: a Job that fails or succeeds counts its
  // unfinished pods (takes their tracking finalizers off) a sync's worth at a time, the rest by
  // the clock's advances, and a Job's sync in a request of its own acts on 200 pods
  // (Cluster::SetFormat10Rules off); records of formats 1-10 (meta.format10-through) counted
  // every one in one sync and acted on 500, and replay so.
  static constexpr int kFormatVersion = 11;
  // The marks of the rules older formats had: meta `key` holds the last record a release of
  // formats 1 to `format` wrote (a journal of such a format migrates with it; every record of a
  // journal of such a format, unmigrated; 0 for a journal begun in a later format).
  struct Mark {
    const char* key;
    int format;
  };
  static constexpr Mark kMarks[] = {{"walk-through", 3},    {"format4-jobs-through", 4},
                                    {"format5-through", 5}, {"format6-through", 6},
                                    {"format7-through", 7}, {"format8-through", 8},
                                    {"format9-through", 9}, {"format10-through", 10}};
  static constexpr size_t kMarkCount = sizeof(kMarks) / sizeof(kMarks[0]);

  // Opens (creating) DIR/journal.db. A new journal gets a random 8-hex-digit instance id. A
  // journal of a newer format than kFormatVersion, or of no known format, is refused. DIR is
  // made 0700 if it is not there; the files (journal.db and its -wal and -shm, LOCK,
  // snapshot.bin*) are made 0600 (owner_only.h). Fails, naming the file, when journal.db or its
  // -wal or -shm is a symbolic link or a hard link, or LOCK a hard link (each written through).
  static Result<std::unique_ptr<Journal>> Open(const std::string& dir);
  ~Journal();

  // What Open left as it was, for the log: a daemon file that is a symbolic link or a hard
  // link (snapshot.bin*), another user's, or could not be made 0600 (MakeOwnerOnly's warnings).
  const std::vector<std::string>& warnings() const { return warnings_; }

  const std::string& instance_id() const { return instance_id_; }
  int format_version() const { return format_version_; }
  // The last record written by a release of formats 1-3, which refreshed pending pods by walking
  // them all (Cluster::SetPendingWalk): every record of a journal of those formats; 0 for one
  // begun in format 4.
  int64_t pending_walk_through() const { return through_[0]; }
  // The last record written by a release of formats 1-4, whose Job controller named pods from a
  // count started at each sync and backed off after suspended pods (Cluster::SetFormat4Jobs):
  // every record of a journal of those formats; 0 for one begun in format 5.
  int64_t format4_jobs_through() const { return through_[1]; }
  // The last record written by a release of formats 1-5, which stored a pod's resources as sent
  // and wrote no terminated startedAt (Cluster::SetFormat5Rules): every record of a journal of
  // those formats; 0 for one begun in format 6.
  int64_t format5_through() const { return through_[2]; }
  // The last record written by a release of formats 1-6 (meta.format6-through).
  int64_t format6_through() const { return through_[3]; }
  // The last record written by a release of formats 1-7 (meta.format7-through).
  int64_t format7_through() const { return through_[4]; }
  // The last record written by a release of formats 1-8 (meta.format8-through).
  int64_t format8_through() const { return through_[5]; }
  // The last record written by a release of formats 1-9 (meta.format9-through).
  int64_t format9_through() const { return through_[6]; }
  // The last record written by a release of formats 1-10 (meta.format10-through).
  int64_t format10_through() const { return through_[7]; }
  // The format whose rules record `seq` replays by: the oldest mark that holds it (3 for every
  // format up to 3), else kFormatVersion.
  int RecordFormat(int64_t seq) const;
  const std::string& path() const { return path_; }

  // ---- start-up (before Start)
  Result<std::optional<Snapshot>> LoadSnapshot();
  // Calls `fn` for each record after `after_seq`, in order, with its commands (format 1: none);
  // stops at the first error.
  Status Replay(int64_t after_seq,
                const std::function<Status(int64_t seq, const std::string& record,
                                           const std::string& commands)>& fn);
  Status Replay(int64_t after_seq,
                const std::function<Status(int64_t seq, const std::string& record)>& fn);
  // An older format made current, in one transaction. Format 1: `snapshot()` (the state after
  // every record, up to `last_seq`) replaces the records, which the current format could not
  // append to; formats 2 to 6: only the format changes (format 2's snapshot is read from the
  // table). Each notes `last_seq` as the mark of the rules its format had (kMarks: those of a
  // format up to the journal's), which it keeps.
  Status Migrate(int64_t last_seq, const std::function<std::string()>& snapshot);

  // ---- running
  // Starts the writer; the next record gets `last_seq + 1`. `after_commit` (if set) runs on the
  // writer thread after each commit's on_durable callbacks, once durable_seq() includes them.
  // `on_failure` (if set) runs once on the writer thread when a write fails, after the writer
  // has let go of its statements (LoadSnapshot and Replay read what is durable from it).
  void Start(int64_t last_seq, std::function<void()> after_commit = nullptr,
             std::function<void(const std::string&)> on_failure = nullptr);
  // Queues a record and its commands (call in apply order); `on_durable` runs on the writer
  // thread once it is committed, in sequence order. Returns its sequence number. The journal
  // must be of the current format (Migrate).
  int64_t Append(std::string record, std::string commands,
                 std::function<void()> on_durable = nullptr);
  // Blocks until `seq` is committed. False if the journal failed (an I/O error: the daemon must
  // stop accepting writes) or stopped first.
  bool WaitDurable(int64_t seq);
  // Without waiting: 1 when `seq` is durable, -1 when it never will be (a failed write, or the
  // writer stopped), else 0.
  int Durable(int64_t seq) const;
  // Stores a snapshot covering every record up to `seq` (on a thread of the caller's, while
  // records are appended and committed), then queues the compaction of those records. Returns
  // once the snapshot is in place (an error: not stored, nothing compacted; the records stay).
  // `write` gives the snapshot's bytes to its argument in pieces (false: it failed).
  using SnapshotWriter = std::function<bool(const std::function<bool(std::string_view)>& out)>;
  Status StoreSnapshot(int64_t seq, const SnapshotWriter& write);
  Status StoreSnapshot(int64_t seq, const std::string& bytes);
  // Commits what is queued, then stops the writer.
  void Stop();
  // Tests: `hook` runs on the writer thread before each commit; an error fails that commit as
  // an I/O error would (sticky). nullptr: none.
  void SetCommitHook(std::function<Status()> hook);
  // The most records one commit deletes after a snapshot, or twice the records it appends if
  // more (tests: smaller; before Start).
  static constexpr int64_t kCompactionChunk = 512;
  void SetCompactionChunk(int64_t records) { compaction_chunk_ = std::max<int64_t>(1, records); }
  // And the most bytes of records (text and commands) one commit deletes, at least one record:
  // 512 records of 3 MB (objects near the size limit) were a 1.5 GB commit. Or, if more, twice
  // the bytes the commit appends (and the record that crosses that): a fixed 8 MiB was outrun by
  // a writer of more than 8 MiB a commit, and the journal grew without bound.
  static constexpr int64_t kCompactionBytes = int64_t{8} << 20;
  void SetCompactionBytes(int64_t bytes) { compaction_bytes_ = std::max<int64_t>(1, bytes); }

  int64_t last_seq() const;     // the last record appended
  int64_t durable_seq() const;  // the last record committed
  bool failed() const;
  std::string error() const;
  JournalStats stats() const;
  // Records currently in the journal (after the snapshot).
  int64_t records_since_snapshot() const;

 private:
  Journal() = default;
  struct Item {
    int64_t seq = 0;
    std::string record;
    std::string commands;
    std::function<void()> on_durable;
    bool snapshot = false;  // the compaction after a snapshot up to seq
  };
  void WriterLoop();
  // One transaction of the batch; sets *last (the last record's seq) and *n (records).
  Status Commit(std::deque<Item>& batch, sqlite::Stmt& ins, sqlite::Stmt& drop_table_snapshot,
                int64_t* last, uint64_t* n);
  // In the commit's transaction (writer thread): deletes the next piece of the records up to
  // compact_to_, at most max(compaction_chunk_, 2 x `appended`) records and, within those,
  // max(compaction_bytes_, 2 x `appended_bytes`) bytes (the bytes' bound crossed by one record
  // at most; at least one record), `appended` records of `appended_bytes` being what the commit
  // writes; sets *deleted to how many it deleted.
  Status CompactPiece(int64_t appended, int64_t appended_bytes, uint64_t* deleted);
  Result<std::optional<Snapshot>> LoadSnapshotFile() const;
  Status Exec(const char* sql);
  Result<std::string> MetaValue(const char* key);  // "" when absent
  // A behaviour's mark (meta `key`): the last record written by a format before `from_version`;
  // every record when the journal is of such a format, 0 when the mark is absent.
  Result<int64_t> Through(const char* key, int from_version);

  // Holds the data directory's LOCK (flock) for the journal's life: one daemon a directory.
  Status Lock();
  // Open's: journal.db made 0600 if it is not there, the daemon's files there made 0600.
  Status MakeFilesOwnerOnly();

  sqlite3* db_ = nullptr;
  int lock_fd_ = -1;
  std::string path_, dir_;
  std::string instance_id_;
  int format_version_ = 0;
  int64_t through_[kMarkCount] = {};  // kMarks' values, in order
  std::vector<std::string> warnings_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, durable_cv_;
  std::deque<Item> queue_;
  int64_t next_seq_ = 1;
  int64_t durable_seq_ = 0;
  int64_t snapshot_seq_ = 0;
  // The writer's: records up to compact_to_ are to be deleted; compacting_ while some may remain.
  int64_t compact_to_ = 0;
  bool compacting_ = false, finishing_ = false;  // finishing_: Stop() was called
  int64_t compaction_chunk_ = kCompactionChunk;
  int64_t compaction_bytes_ = kCompactionBytes;
  bool stopping_ = false;
  bool failed_ = false;
  bool writer_done_ = false;
  std::string error_;
  std::function<void()> after_commit_;
  std::function<void(const std::string&)> on_failure_;
  std::function<Status()> commit_hook_;
  JournalStats stats_;
  std::thread writer_;
};

}  // namespace arbiter::server

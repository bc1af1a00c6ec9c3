// Snapshots by the journal's bytes (DaemonOptions::snapshot_bytes). Found by a hostile-tenant
// trial: a tenant merge-patching one label of a ~1.5 MB PodDisruptionBudget wrote ~3 MB records;
// the journal was bounded by its record count alone (a snapshot every 50,000), so it grew by
// ~25 MB/s until the disk filled and the daemon went read-only for everyone. Now a snapshot also
// comes once the records since the last one hold snapshot_bytes (or snapshot_growth times the
// last snapshot's size), and its compaction deletes them.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "apps/run_command.h"
#include "server/daemon.h"
#include "server/dashboard/history_store.h"
#include "server/dashboard/sampler.h"
#include "server/durability/journal.h"

namespace arbiter::server {
namespace snapshot_bytes_test {

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-snapshot-bytes-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

struct FakeClock {
  std::atomic<Millis> now{1764583200000};
  std::function<Millis()> fn() {
    return [this] { return now.load(); };
  }
};

// DaemonOptions::steady_clock: the daemon's own delays (a failed snapshot's back-off).
struct FakeSteadyClock {
  std::atomic<int64_t> ms{5000000};
  std::function<std::chrono::steady_clock::time_point()> fn() {
    return [this] { return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms)); };
  }
};

// Sets the umask for a scope (restored when a failed ASSERT returns early too).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : was_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(was_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t was_;
};

mode_t Mode(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string Contents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The warnings of `warnings` that hold `text`.
size_t CountHolding(const std::vector<std::string>& warnings, const std::string& text) {
  return static_cast<size_t>(std::count_if(warnings.begin(), warnings.end(), [&](auto& w) {
    return w.find(text) != std::string::npos;
  }));
}

// A budget with a `kb` KB annotation, its label `round` set to `round`.
Mutation Budget(int kb, int round, bool create) {
  Json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata",
               {{"name", "big"},
                {"namespace", "default"},
                {"labels", {{"round", std::to_string(round)}}},
                {"annotations", {{"filler", std::string(kb * 1024, 'x')}}}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "a"}}}}}}}};
  Mutation m;
  m.op = create ? Mutation::Op::kCreate : Mutation::Op::kUpdate;
  m.kind = "PodDisruptionBudget";
  m.namespace_ = "default";
  m.name = "big";
  m.object = pdb;
  return m;
}

// The journal's rows and their bytes (record text and commands), read from the file.
struct Rows {
  int64_t count = 0, bytes = 0;
};
Rows JournalRows(const std::filesystem::path& dir) {
  sqlite3* db = nullptr;
  Rows r;
  EXPECT_EQ(sqlite3_open((dir / "journal.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT count(*), coalesce(sum(length(CAST(record AS BLOB)) + "
                               "coalesce(length(commands), 0)), 0) FROM journal",
                               -1, &st, nullptr),
            SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) {
    r.count = sqlite3_column_int64(st, 0);
    r.bytes = sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return r;
}

constexpr int64_t kMiB = 1 << 20;

// 60 updates of a 200 KB object (~12 MB of records) with a snapshot every 10,000 records and
// every 1 MiB: snapshots come by bytes (the records would never call for one), and after the
// last one's compaction the journal holds less than the bound and one record more; a restart
// restores the snapshot and replays only those records, to the same state.
TEST(SnapshotBytesTest, BigRecordsTakeASnapshotByBytesAndTheJournalStaysBounded) {
  const auto dir = Dir("bounded");
  FakeClock clock;
  Json saved;
  int64_t record_bytes = 0;
  {
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(Budget(200, 0, true)).ok());
    for (int i = 1; i <= 60; ++i) {
      clock.now += 100;
      const int64_t before = d.value()->snapshot_stats().bytes_since;
      auto r = d.value()->Mutate(Budget(200, i, false));
      ASSERT_TRUE(r.ok()) << r.error->message;
      const int64_t after = d.value()->snapshot_stats().bytes_since;
      if (after > before) record_bytes = std::max(record_bytes, after - before);
    }
    EXPECT_GT(record_bytes, 200 * 1024);  // each record holds the object
    const Daemon::SnapshotStats stats = d.value()->snapshot_stats();
    // 60 x >200 KB in 1 MiB pieces: at least one snapshot for every ~5 records (some may have
    // come while one was being stored, and be taken together).
    EXPECT_GE(stats.stored, 3u);
    EXPECT_EQ(stats.failed, 0u);
    EXPECT_GT(stats.last_size, 200 * 1024);  // it holds the object
    EXPECT_LT(stats.last_size, kMiB);        // so the bound is snapshot_bytes, not growth x size
    EXPECT_LT(stats.bytes_since, kMiB);
    saved = d.value()->Read([](const Cluster& c) { return c.store().Save(); });
  }  // Stop(): a capture taken is stored, its compaction finished
  const Rows rows = JournalRows(dir);
  EXPECT_LT(rows.bytes, kMiB + record_bytes) << rows.count << " records";
  EXPECT_LT(rows.count, 10);

  auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(d.value()->startup().from_snapshot);
  EXPECT_GT(d.value()->startup().snapshot_seq, 50);
  EXPECT_EQ(d.value()->startup().replayed, rows.count);
  EXPECT_EQ(d.value()->startup().replayed_bytes, rows.bytes);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return c.store().Save(); }), saved);
}

// The bytes since the last snapshot are carried across a restart (those of the records
// replayed): 3 records of ~300 KB (a 150 KB object, in the record and in its command) before a
// restart and 1 after reach 1 MiB and take a snapshot;
// counted from 0 at each start-up, a daemon restarted often would never take one.
TEST(SnapshotBytesTest, TheBytesSinceTheSnapshotAreCarriedAcrossARestart) {
  const auto dir = Dir("carried");
  FakeClock clock;
  int64_t before_restart = 0;
  {
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(Budget(150, 0, true)).ok());
    for (int i = 1; i <= 2; ++i) {
      clock.now += 100;
      ASSERT_TRUE(d.value()->Mutate(Budget(150, i, false)).ok());
    }
    before_restart = d.value()->snapshot_stats().bytes_since;
    EXPECT_EQ(d.value()->snapshot_stats().stored, 0u);
  }
  EXPECT_GT(before_restart, 3 * 2 * 150 * 1024);
  EXPECT_LT(before_restart, kMiB);
  {
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_FALSE(d.value()->startup().from_snapshot);
    EXPECT_EQ(d.value()->snapshot_stats().bytes_since, before_restart);
    EXPECT_EQ(d.value()->startup().replayed_bytes, JournalRows(dir).bytes);
    clock.now += 100;
    ASSERT_TRUE(d.value()->Mutate(Budget(150, 3, false)).ok());
  }
  auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(d.value()->startup().from_snapshot);
  EXPECT_EQ(d.value()->startup().replayed, 0);
  EXPECT_EQ(d.value()->snapshot_stats().bytes_since, 0);
  EXPECT_GT(d.value()->snapshot_stats().last_size, 150 * 1024);  // the restored snapshot's size
}

// The bound grows with the snapshot (snapshot_growth x its size), as the record bound grows with
// its objects: a big state is not snapshotted every few records. And 0 turns the bytes off.
TEST(SnapshotBytesTest, TheBoundIsGrowthTimesTheLastSnapshotsSizeWhenLarger) {
  for (const int64_t bound : {int64_t{64} * 1024, int64_t{0}}) {
    const auto dir = Dir("growth-" + std::to_string(bound));
    FakeClock clock;
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 2.0, bound});
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(Budget(300, 0, true)).ok());
    d.value()->SnapshotNow();  // ~300 KB of snapshot
    const Daemon::SnapshotStats first = d.value()->snapshot_stats();
    ASSERT_GE(first.stored, 1u);
    const int64_t size = first.last_size;
    EXPECT_GT(size, 300 * 1024);
    EXPECT_EQ(first.bytes_since, 0);
    // Records of ~40 KB: the next snapshot is captured at the record that brings the bytes since
    // to 2 x the snapshot (~1.2 MB: the object is in the store's part and the engine's), not to
    // 64 KB.
    int64_t at_capture = -1, record = 0;
    for (int i = 1; i < 100 && at_capture < 0; ++i) {
      clock.now += 100;
      const int64_t before = d.value()->snapshot_stats().bytes_since;
      auto r = d.value()->Mutate(Budget(20, i, false));
      ASSERT_TRUE(r.ok()) << r.error->message;
      const int64_t after = d.value()->snapshot_stats().bytes_since;
      if (after < before)
        at_capture = before;
      else
        record = after - before;
    }
    if (bound == 0) {
      EXPECT_EQ(at_capture, -1) << "off: by records alone";
      EXPECT_EQ(d.value()->snapshot_stats().stored, first.stored);
      EXPECT_GT(d.value()->snapshot_stats().bytes_since, 3 * size);
    } else {
      EXPECT_GT(record, 20 * 1024);
      ASSERT_GE(at_capture, 0) << "no snapshot after 100 records";
      EXPECT_LT(at_capture, 2 * size);           // the bytes before the last record
      EXPECT_GE(at_capture + record, 2 * size);  // and with it
    }
  }
}

// The compaction of big records: each commit deletes at most Journal::kCompactionBytes of them
// (here 1 MiB), as it deletes at most kCompactionChunk records; 85 records of 3 MB in one commit
// held every request's commit behind it. And the pages it frees are not written over (Debian's
// SQLite has secure_delete on: 12 MB of records deleted in one commit wrote 12 MB of zeros to
// the WAL, which stays that large).
TEST(SnapshotBytesTest, ACompactionOfBigRecordsDeletesAtMostItsBytesInACommit) {
  for (const int64_t piece : {kMiB, int64_t{64} * kMiB}) {
    const auto dir = Dir("compaction-" + std::to_string(piece));
    std::filesystem::create_directories(dir);
    auto j = Journal::Open(dir.string());
    ASSERT_TRUE(j.ok()) << j.message();
    Journal& journal = *j.value();
    journal.SetCompactionBytes(piece);
    journal.Start(0);
    const std::string record(200 * 1024, 'r'), commands(100 * 1024, 'c');
    for (int64_t i = 1; i <= 41; ++i) {  // one commit each: the WAL is checkpointed as it goes
      ASSERT_EQ(journal.Append(record, commands), i);
      ASSERT_TRUE(journal.WaitDurable(i));
    }
    ASSERT_TRUE(journal.StoreSnapshot(40, "the state").ok());
    while (journal.stats().compacted < 40)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int64_t wal = static_cast<int64_t>(std::filesystem::file_size(dir / "journal.db-wal"));
    const JournalStats stats = journal.stats();
    journal.Stop();
    EXPECT_EQ(stats.compacted, 40u);
    if (piece == kMiB) {
      EXPECT_EQ(stats.most_compacted_in_one, 3u);  // 3 x 300 KB, not the 512 records' chunk
    } else {
      EXPECT_EQ(stats.most_compacted_in_one, 40u);  // 12 MB in one commit
      EXPECT_LT(wal, 8 * kMiB) << "the freed pages were written";
    }
    EXPECT_EQ(JournalRows(dir).count, 1);
  }
}

// A steady writer whose every commit appends more than a compaction piece (here 4 records of
// 64 KiB a commit against 128 KiB, as 4 records of 3 MB against 8 MiB; and 4 records against a
// piece of 2 records): with pieces of a fixed size the compaction fell further behind at each
// commit, and the journal grew without bound (by 128 KiB, or 2 records, a commit: 50 MiB, 800
// records after these 400 commits). Each commit now deletes at least twice what it appends, so
// the journal stays within about twice the snapshot's bound (1 MiB of records here, or 16).
TEST(SnapshotBytesTest, ASteadyWriterOfBigRecordsDoesNotOutrunTheCompaction) {
  struct Case {
    const char* name;
    int64_t record, commands;            // each record's bytes
    int64_t piece_records, piece_bytes;  // SetCompactionChunk, SetCompactionBytes
    int64_t snapshot_records;            // a snapshot once this many records are not in one
  };
  for (const Case& c : {Case{"bytes", 48 * 1024, 16 * 1024, 512, 128 * 1024, 16},
                        Case{"records", 100, 0, 2, 8 * kMiB, 16}}) {
    SCOPED_TRACE(c.name);
    const auto dir = Dir(std::string("steady-") + c.name);
    std::filesystem::create_directories(dir);
    auto j = Journal::Open(dir.string());
    ASSERT_TRUE(j.ok()) << j.message();
    Journal& journal = *j.value();
    journal.SetCompactionChunk(c.piece_records);
    journal.SetCompactionBytes(c.piece_bytes);
    const std::string record(static_cast<size_t>(c.record), 'r');
    const std::string commands(static_cast<size_t>(c.commands), 'c');
    constexpr int kCommits = 400, kPerCommit = 4;
    // The writer itself appends the next commit's records (before each commit, so each commit
    // holds 4 of them) and stores a snapshot once 16 records are durable after the last one, as
    // the daemon would.
    std::atomic<int> commits{0};
    std::atomic<bool> done{false};
    int64_t snapshot = 0;
    Rows most;
    journal.SetCommitHook([&]() -> Status {
      const int n = commits++;
      if (n >= kCommits) {
        done = true;
        return Status::Ok();
      }
      const int64_t durable = journal.durable_seq();
      if (durable - snapshot >= c.snapshot_records) {
        if (Status s = journal.StoreSnapshot(durable, "the state"); !s.ok()) return s;
        snapshot = durable;
      }
      if (n % 8 == 0) {
        const Rows now = JournalRows(dir);
        if (now.bytes > most.bytes) most.bytes = now.bytes;
        if (now.count > most.count) most.count = now.count;
      }
      for (int i = 0; i < kPerCommit; ++i) journal.Append(record, commands);
      return Status::Ok();
    });
    journal.Start(0);
    ASSERT_EQ(journal.Append(record, commands), 1);  // the first commit: the hook goes on
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(journal.WaitDurable(journal.last_seq()));
    const JournalStats stats = journal.stats();
    journal.Stop();
    const int64_t each = c.record + c.commands;
    EXPECT_GE(stats.records, static_cast<uint64_t>(kCommits * kPerCommit));
    // Appended: 1600 records. Kept at most: the records up to a snapshot not compacted yet (16
    // and the commit's 4) and as many after it, and a commit's worth.
    const int64_t bound = 3 * (c.snapshot_records + kPerCommit);
    EXPECT_LE(most.count, bound) << most.bytes << " bytes";
    EXPECT_LE(most.bytes, bound * each);
    EXPECT_GT(stats.compacted, static_cast<uint64_t>(kCommits * kPerCommit - bound));
  }
}

// A snapshot that fails (here snapshot.bin.tmp cannot be made: a directory has its name) is not
// stored and nothing is compacted, so the records and bytes it would have covered still count
// toward the next one: given back, they call for it at the first record after a back-off (1 s),
// where the counts were left at 0 and the next came a whole bound later (by bytes, 1 MiB; by
// records, 5). Not at every record: the back-off doubles at each failure in a row. The back-off
// is timed on the steady clock, not the wall clock: the wall clock stepped back an hour (NTP) put
// the retry an hour off, one stepped forward (a VM resumed) let it come at once. Captures are
// counted (SnapshotStats::captures: taken under the lock, in the Mutate that records), so "no
// capture" is checked at once, not by waiting for a failure that may not have come yet.
TEST(SnapshotBytesTest, AFailedSnapshotLeavesTheTriggerArmed) {
  for (const bool by_bytes : {true, false}) {
    SCOPED_TRACE(by_bytes ? "by bytes" : "by records");
    const auto dir = Dir(by_bytes ? "failed-bytes" : "failed-records");
    FakeClock clock;
    FakeSteadyClock steady;
    DaemonOptions options = by_bytes
                                ? DaemonOptions{dir.string(), clock.fn(), 10000, false, 0, kMiB}
                                : DaemonOptions{dir.string(), clock.fn(), 5, false, 0, 0};
    options.steady_clock = steady.fn();
    auto d = Daemon::Open(options);
    ASSERT_TRUE(d.ok()) << d.message();
    Daemon& daemon = *d.value();
    // (Not empty: a failed snapshot removes its file, an empty directory included.)
    std::filesystem::create_directories(dir / "snapshot.bin.tmp");
    std::ofstream(dir / "snapshot.bin.tmp" / "x") << "x";
    const int kb = by_bytes ? 200 : 1;
    ASSERT_TRUE(daemon.Mutate(Budget(kb, 0, true)).ok());
    auto wait_for = [&](auto done) {
      for (int i = 0; i < 10000 && !done(daemon.snapshot_stats()); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return daemon.snapshot_stats();
    };
    int round = 0;
    auto update = [&] {
      clock.now += 10;
      auto r = daemon.Mutate(Budget(kb, ++round, false));
      ASSERT_TRUE(r.ok()) << r.error->message;
    };
    // Until a record captures the state.
    while (round < 20 && daemon.snapshot_stats().captures == 0) update();
    Daemon::SnapshotStats stats =
        wait_for([](const Daemon::SnapshotStats& s) { return s.failed > 0; });
    ASSERT_EQ(stats.captures, 1u) << "no snapshot was tried";
    ASSERT_EQ(stats.failed, 1u);
    EXPECT_EQ(stats.stored, 0u);
    EXPECT_NE(stats.last_error.find("snapshot.bin.tmp"), std::string::npos) << stats.last_error;
    if (by_bytes)
      EXPECT_GE(stats.bytes_since, kMiB);
    else
      EXPECT_GE(stats.records_since, 5);
    const int64_t records = stats.records_since;
    // Within the back-off: no capture, whatever the records; nor with the wall clock an hour on
    // (a VM resumed: the steady clock did not move).
    update();
    update();
    clock.now += 3600 * 1000;
    update();
    stats = daemon.snapshot_stats();
    EXPECT_EQ(stats.captures, 1u);
    EXPECT_EQ(stats.failed, 1u);
    EXPECT_EQ(stats.records_since, records + 3);
    // It is tried again, and fails, at the first record after it, the wall clock stepped back two
    // hours meanwhile (an hour before the failure): the next back-off is 2 s.
    clock.now -= 2 * 3600 * 1000;
    steady.ms += 1000;
    update();
    EXPECT_EQ(daemon.snapshot_stats().captures, 2u);
    stats = wait_for([](const Daemon::SnapshotStats& s) { return s.failed == 2; });
    EXPECT_EQ(stats.failed, 2u);
    EXPECT_GE(stats.records_since, records + 4);
    const int64_t records_again = stats.records_since;
    steady.ms += 1500;
    update();
    stats = daemon.snapshot_stats();
    EXPECT_EQ(stats.captures, 2u);
    EXPECT_EQ(stats.failed, 2u);
    EXPECT_EQ(stats.records_since, records_again + 1);
    // The disk lets it now: the next record after the back-off takes one, and it compacts.
    std::filesystem::remove_all(dir / "snapshot.bin.tmp");
    steady.ms += 1000;
    update();
    EXPECT_EQ(daemon.snapshot_stats().captures, 3u);
    stats = wait_for([](const Daemon::SnapshotStats& s) { return s.stored == 1; });
    EXPECT_EQ(stats.stored, 1u);
    EXPECT_EQ(stats.failed, 2u);
    EXPECT_EQ(stats.records_since, 0);
    EXPECT_EQ(stats.bytes_since, 0);
  }
}

// --snapshot-bytes below 1Mi (but 0, off) is refused with the minimum named: 1 byte took a
// snapshot of the whole state after every record.
TEST(SnapshotBytesTest, SnapshotBytesBelowOneMebibyteAreRefused) {
  const auto dir = Dir("cli");
  std::filesystem::create_directories(dir);
  // An unusable --data: an accepted value fails on it, after the options are checked.
  auto serve = [&](const std::string& bytes) {
    return testing::RunCommand("timeout 60 " + std::string(ARBITER_BINARY) +
                               " serve --data /dev/null/arbiter-data --listen 127.0.0.1:0 "
                               "--snapshot-bytes " +
                               bytes + " 2>&1");
  };
  for (const std::string bad : {"1", "1023Ki", "1000000"}) {
    const testing::CommandOutput out = serve(bad);
    EXPECT_NE(out.rc, 0) << out.out;
    EXPECT_NE(out.out.find("must be at least 1Mi (1048576 bytes; 0: off), not " + bad),
              std::string::npos)
        << out.out;
  }
  for (const std::string good : {"0", "1Mi", "1048576", "256Mi"}) {
    const testing::CommandOutput out = serve(good);
    EXPECT_NE(out.rc, 0) << out.out;
    EXPECT_EQ(out.out.find("--snapshot-bytes"), std::string::npos) << out.out;
    EXPECT_NE(out.out.find("/dev/null/arbiter-data"), std::string::npos) << out.out;
  }
  const testing::CommandOutput help =
      testing::RunCommand(std::string(ARBITER_BINARY) + " serve --help 2>&1");
  EXPECT_NE(help.out.find("least 1Mi"), std::string::npos) << help.out;
}

// The data directory holds every tenant's objects, and deleted ones stay in journal.db's free
// pages (secure_delete=FAST) and in the older snapshot's file: the directory is made 0700 and
// the daemon's files 0600, whatever the umask lets (they were 0755 and 0644: anybody's to
// read). Files an older release made are made 0600 at start-up, its -wal and -shm included
// (SQLite deletes them at a clean close: an older release's crash left them); a directory that
// exists keeps its mode (the operator's).
TEST(SnapshotBytesTest, TheDataDirectoryAndItsFilesAreTheOwnersAlone) {
  const ScopedUmask umask(022);
  const auto dir = Dir("modes");
  const std::vector<std::string> files = {"journal.db", "journal.db-wal", "journal.db-shm",
                                          "LOCK",       "snapshot.bin",   "snapshot.bin.tmp",
                                          "history.db", "history.db-wal", "history.db-shm"};
  {
    FakeClock clock;
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(Budget(1, 0, true)).ok());
    d.value()->SnapshotNow();
    d.value()->SnapshotNow();  // the first one's file is kept as snapshot.bin.tmp
    ASSERT_EQ(d.value()->snapshot_stats().stored, 2u);
    EXPECT_TRUE(d.value()->startup().warnings.empty());
    auto history = dashboard::HistoryStore::Open(dir.string(), 3);
    ASSERT_TRUE(history.ok()) << history.message();
    EXPECT_TRUE(history.value()->warnings().empty());
    EXPECT_EQ(Mode(dir), 0700u);
    for (const std::string& f : files) EXPECT_EQ(Mode(dir / f), 0600u) << f;
  }
  // As an older release left them, after a crash: its -wal and -shm are there (0644 too), and
  // not empty (SQLite itself gives an empty one the database's mode; a WAL of zeros holds no
  // frame, a -shm is rebuilt).
  std::filesystem::permissions(dir, std::filesystem::perms(0755));
  for (const std::string& f : files) {
    if (!std::filesystem::exists(dir / f)) std::ofstream(dir / f) << std::string(4096, '\0');
    ASSERT_GT(std::filesystem::file_size(dir / f), 0u) << f;
    std::filesystem::permissions(dir / f, std::filesystem::perms(0644));
    ASSERT_EQ(Mode(dir / f), 0644u) << f;
  }
  {
    FakeClock clock;
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    auto history = dashboard::HistoryStore::Open(dir.string(), 3);
    ASSERT_TRUE(history.ok()) << history.message();
    for (const std::string& f : files) EXPECT_EQ(Mode(dir / f), 0600u) << f;
    EXPECT_EQ(Mode(dir), 0755u);
    EXPECT_TRUE(d.value()->startup().warnings.empty());
    EXPECT_TRUE(history.value()->warnings().empty());
  }
  // A directory the daemon makes is 0700 whatever the umask (0 here), and so are its files.
  {
    const ScopedUmask none(0);
    const auto fresh = Dir("modes-umask-0") / "data";
    FakeClock clock;
    auto d = Daemon::Open({fresh.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(Mode(fresh), 0700u);
    for (const std::string f : {"journal.db", "journal.db-wal", "journal.db-shm", "LOCK"})
      EXPECT_EQ(Mode(fresh / f), 0600u) << f;
  }
}

// chmod(name) followed symbolic links: with --data a shared directory, a link planted under a
// daemon file's name (snapshot.bin.old -> ~/.somefile) had its target made 0600 at start-up,
// and one named snapshot.bin.tmp had the snapshot written over its target. Now a link is left
// as it is (its target's mode and bytes unchanged) and warned of; a snapshot is never written
// through one (the link fails that snapshot and is removed: the next is stored); LOCK, whose
// bytes are written over with the pid, is not opened through one (the daemon does not start).
TEST(SnapshotBytesTest, ASymbolicLinkNamedLikeADaemonFileKeepsItsTargetAsItWas) {
  const ScopedUmask umask(022);
  const auto root = Dir("symlinks");
  const auto dir = root / "data", outside = root / "outside";
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(outside);
  const std::vector<std::string> names = {"snapshot.bin.old", "snapshot.bin.tmp"};
  for (const std::string& name : names) {
    std::ofstream(outside / name) << "the user's own " << name;
    std::filesystem::permissions(outside / name, std::filesystem::perms(0644));
  }
  for (const std::string& name : names) std::filesystem::create_symlink(outside / name, dir / name);
  auto targets_as_they_were = [&] {
    for (const std::string& name : names) {
      EXPECT_EQ(Mode(outside / name), 0644u) << name;
      EXPECT_EQ(Contents(outside / name), "the user's own " + name) << name;
    }
  };
  {
    FakeClock clock;
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    const std::vector<std::string>& warnings = d.value()->startup().warnings;
    EXPECT_EQ(warnings.size(), 2u);
    for (const std::string& name : names)
      EXPECT_EQ(CountHolding(warnings, name + " is a symbolic link"), 1u) << name;
    targets_as_they_were();
    ASSERT_TRUE(d.value()->Mutate(Budget(1, 0, true)).ok());
    d.value()->SnapshotNow();  // not through the link: fails, and the link goes
    Daemon::SnapshotStats stats = d.value()->snapshot_stats();
    EXPECT_EQ(stats.failed, 1u);
    EXPECT_NE(stats.last_error.find("snapshot.bin.tmp"), std::string::npos) << stats.last_error;
    d.value()->SnapshotNow();
    d.value()->SnapshotNow();
    stats = d.value()->snapshot_stats();
    EXPECT_EQ(stats.failed, 1u);
    EXPECT_EQ(stats.stored, 2u);
    targets_as_they_were();
    for (const std::string name : {"snapshot.bin", "snapshot.bin.tmp"})
      EXPECT_FALSE(std::filesystem::is_symlink(dir / name)) << name;
  }
  // LOCK through a link: refused, its target not truncated nor chmodded.
  std::filesystem::remove_all(root / "lockdata");
  std::filesystem::create_directories(root / "lockdata");
  std::ofstream(outside / "lock") << "the user's own lock";
  std::filesystem::permissions(outside / "lock", std::filesystem::perms(0644));
  std::filesystem::create_symlink(outside / "lock", root / "lockdata" / "LOCK");
  FakeClock clock;
  auto d = Daemon::Open({(root / "lockdata").string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.message().find("LOCK"), std::string::npos) << d.message();
  EXPECT_EQ(Mode(outside / "lock"), 0644u);
  EXPECT_EQ(Contents(outside / "lock"), "the user's own lock");
}

// A daemon file of another user (the daemon running as root, a file left by another account)
// keeps the mode that user gave it, and is warned of; a snapshot.bin.tmp of another user is not
// written (removed, the next snapshot's file is the daemon's). As root only (chown).
TEST(SnapshotBytesTest, AnotherUsersFileIsWarnedOf) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  const ScopedUmask umask(022);
  const auto dir = Dir("others");
  constexpr uid_t kNobody = 65534;
  {
    FakeClock clock;
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    d.value()->SnapshotNow();
    d.value()->SnapshotNow();
    ASSERT_EQ(d.value()->snapshot_stats().stored, 2u);
    ASSERT_TRUE(dashboard::HistoryStore::Open(dir.string(), 3).ok());
  }
  for (const std::string name : {"snapshot.bin.tmp", "history.db"}) {
    ASSERT_EQ(::chown((dir / name).c_str(), kNobody, kNobody), 0) << name;
    std::filesystem::permissions(dir / name, std::filesystem::perms(0644));
  }
  FakeClock clock;
  auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_TRUE(d.ok()) << d.message();
  const std::vector<std::string>& warnings = d.value()->startup().warnings;
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(CountHolding(warnings, "snapshot.bin.tmp belongs to uid 65534"), 1u)
      << (warnings.empty() ? "" : warnings[0]);
  EXPECT_EQ(Mode(dir / "snapshot.bin.tmp"), 0644u);
  auto history = dashboard::HistoryStore::Open(dir.string(), 3);
  ASSERT_TRUE(history.ok()) << history.message();
  EXPECT_EQ(CountHolding(history.value()->warnings(), "history.db belongs to uid 65534"), 1u);
  EXPECT_EQ(Mode(dir / "history.db"), 0644u);
  // Not written: its snapshot fails, the file goes; the next snapshot's file is the daemon's.
  d.value()->SnapshotNow();
  EXPECT_EQ(d.value()->snapshot_stats().failed, 1u);
  EXPECT_NE(d.value()->snapshot_stats().last_error.find("belongs to uid 65534"), std::string::npos)
      << d.value()->snapshot_stats().last_error;
  d.value()->SnapshotNow();
  d.value()->SnapshotNow();
  EXPECT_EQ(d.value()->snapshot_stats().stored, 2u);
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "snapshot.bin.tmp").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

// SQLite followed a symbolic link planted as journal.db or history.db (made 0600 and written
// into its target), and wrote through a hard link planted under a database's name, its -wal's or
// its -shm's (another name of a file of the daemon user's, /etc/shadow under root). Now such a
// file fails the open, naming it: the daemon does not start (the history stays in memory); the
// target keeps its bytes and mode.
TEST(SnapshotBytesTest, ALinkPlantedAsADatabaseFileFailsItsOpen) {
  const ScopedUmask umask(022);
  const auto root = Dir("db-links");
  const auto outside = root / "outside";
  std::filesystem::create_directories(outside);
  auto target = [&](const std::string& name) {
    std::ofstream(outside / name) << "the user's own " << name;
    std::filesystem::permissions(outside / name, std::filesystem::perms(0644));
    return outside / name;
  };
  auto as_it_was = [&](const std::string& name) {
    EXPECT_EQ(Mode(outside / name), 0644u) << name;
    EXPECT_TRUE(Contents(outside / name) == "the user's own " + name) << name;  // (not shown)
  };
  auto open_journal = [&](const std::filesystem::path& dir) {
    FakeClock clock;
    return Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  };
  auto open_history = [&](const std::filesystem::path& dir) {
    return dashboard::HistoryStore::Open(dir.string(), 3);
  };
  // A symbolic link as the database: NOFOLLOW, whether its target is there or not.
  for (const std::string db : {"journal.db", "history.db"}) {
    for (const bool dangling : {false, true}) {
      const auto dir = root / (db + (dangling ? "-dangling" : "-symlink"));
      std::filesystem::create_directories(dir);
      const auto to = dangling ? outside / ("none-" + db) : target(db);
      std::filesystem::create_symlink(to, dir / db);
      const std::string error =
          db == "journal.db" ? open_journal(dir).message() : open_history(dir).message();
      EXPECT_NE(error.find(db + " is a symbolic link; arbiter will not follow it"),
                std::string::npos)
          << error;
      if (dangling)
        EXPECT_FALSE(std::filesystem::exists(to)) << db;
      else
        as_it_was(db);
    }
  }
  // A hard link as a database's -wal or -shm (of a database there already), or as the database.
  for (const std::string db : {"journal.db", "history.db"}) {
    for (const std::string suffix : {"", "-wal", "-shm"}) {
      const std::string name = db + suffix;
      const auto dir = root / ("hard-" + name);
      ASSERT_TRUE(db == "journal.db" ? open_journal(dir).ok() : open_history(dir).ok()) << name;
      std::filesystem::remove(dir / name);
      std::filesystem::create_hard_link(target(name), dir / name);
      const std::string error =
          db == "journal.db" ? open_journal(dir).message() : open_history(dir).message();
      EXPECT_NE(error.find(name + " is a hard link"), std::string::npos) << error;
      as_it_was(name);
    }
  }
  // The dashboard's history stays in memory, the refusal logged and in its store's state.
  {
    FakeClock clock;
    auto d = Daemon::Open({(root / "daemon").string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    std::vector<std::string> logged;
    dashboard::HistorySampler sampler(*d.value(), dashboard::History(), clock.fn(),
                                      (root / "history.db-symlink").string(),
                                      [&](const std::string& w) { logged.push_back(w); });
    EXPECT_EQ(CountHolding(logged, "history.db is a symbolic link"), 1u);
    EXPECT_NE(sampler.StoreState().dump().find("history.db is a symbolic link"), std::string::npos);
  }
  as_it_was("history.db");
  // The daemon refuses to start, saying why.
  const auto dir = root / "journal.db-symlink";
  const testing::CommandOutput out =
      testing::RunCommand("timeout 60 " + std::string(ARBITER_BINARY) + " serve --data " +
                          dir.string() + " --listen 127.0.0.1:0 2>&1");
  EXPECT_EQ(out.rc, 1) << out.out;
  EXPECT_NE(out.out.find("journal.db is a symbolic link; arbiter will not follow it"),
            std::string::npos)
      << out.out;
  as_it_was("journal.db");
}

// SQLITE_OPEN_NOFOLLOW refuses a symbolic link anywhere in the name: a --data reached through
// one (the operator's: a link to a larger disk) opens, the journal and the history there.
TEST(SnapshotBytesTest, ADataDirectoryReachedThroughASymbolicLinkOpens) {
  const auto root = Dir("linked-dir");
  std::filesystem::create_directories(root / "disk" / "data");
  std::filesystem::create_directory_symlink(root / "disk", root / "link");
  const auto dir = root / "link" / "data";
  {
    FakeClock clock;
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(Budget(1, 0, true)).ok());
    auto history = dashboard::HistoryStore::Open(dir.string(), 3);
    ASSERT_TRUE(history.ok()) << history.message();
  }
  for (const std::string f : {"journal.db", "history.db"})
    EXPECT_TRUE(std::filesystem::is_regular_file(root / "disk" / "data" / f)) << f;
  FakeClock clock;
  auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_GE(d.value()->startup().replayed, 2);
}

// A hard link planted as a daemon file the journal does not open with SQLite: LOCK (its bytes
// written over with the pid) fails the start; snapshot.bin.old and snapshot.bin.tmp keep their
// modes and are warned of, and no snapshot is written through snapshot.bin.tmp (that snapshot
// fails, the name goes: the next is stored). A spare a crash left as snapshot.bin's second name
// (StoreSnapshot links it, then renames) is removed, not warned of.
TEST(SnapshotBytesTest, AHardLinkNamedLikeADaemonFileKeepsItsTargetAsItWas) {
  const ScopedUmask umask(022);
  const auto root = Dir("hardlinks");
  const auto dir = root / "data", outside = root / "outside";
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(outside);
  const std::vector<std::string> names = {"snapshot.bin.old", "snapshot.bin.tmp", "LOCK"};
  for (const std::string& name : names) {
    std::ofstream(outside / name) << "the user's own " << name;
    std::filesystem::permissions(outside / name, std::filesystem::perms(0644));
  }
  auto as_it_was = [&](const std::string& name) {
    EXPECT_EQ(Mode(outside / name), 0644u) << name;
    EXPECT_TRUE(Contents(outside / name) == "the user's own " + name) << name;  // (not shown)
  };
  std::filesystem::create_hard_link(outside / "LOCK", dir / "LOCK");
  FakeClock clock;
  auto refused = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("LOCK is a hard link"), std::string::npos) << refused.message();
  as_it_was("LOCK");
  std::filesystem::remove(dir / "LOCK");
  for (const std::string name : {"snapshot.bin.old", "snapshot.bin.tmp"})
    std::filesystem::create_hard_link(outside / name, dir / name);
  {
    auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
    ASSERT_TRUE(d.ok()) << d.message();
    const std::vector<std::string>& warnings = d.value()->startup().warnings;
    EXPECT_EQ(warnings.size(), 2u);
    for (const std::string name : {"snapshot.bin.old", "snapshot.bin.tmp"}) {
      EXPECT_EQ(CountHolding(warnings, name + " is a hard link"), 1u) << name;
      as_it_was(name);
    }
    ASSERT_TRUE(d.value()->Mutate(Budget(1, 0, true)).ok());
    d.value()->SnapshotNow();  // not through the link: fails, and the name goes
    EXPECT_EQ(d.value()->snapshot_stats().failed, 1u);
    EXPECT_NE(d.value()->snapshot_stats().last_error.find("snapshot.bin.tmp is a hard link"),
              std::string::npos)
        << d.value()->snapshot_stats().last_error;
    d.value()->SnapshotNow();
    d.value()->SnapshotNow();
    EXPECT_EQ(d.value()->snapshot_stats().stored, 2u);
    for (const std::string name : {"snapshot.bin.old", "snapshot.bin.tmp"}) as_it_was(name);
  }
  // As a crash between StoreSnapshot's link and rename leaves them.
  std::filesystem::remove(dir / "snapshot.bin.old");
  std::filesystem::create_hard_link(dir / "snapshot.bin", dir / "snapshot.bin.old");
  auto d = Daemon::Open({dir.string(), clock.fn(), 10000, false, 1.0, kMiB});
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(d.value()->startup().warnings.empty()) << d.value()->startup().warnings[0];
  EXPECT_FALSE(std::filesystem::exists(dir / "snapshot.bin.old"));
  EXPECT_TRUE(d.value()->startup().from_snapshot);
}

}  // namespace snapshot_bytes_test
}  // namespace arbiter::server

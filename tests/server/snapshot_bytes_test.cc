// Snapshots by the journal's bytes (DaemonOptions::snapshot_bytes). Found by a hostile-tenant
// trial: a tenant merge-patching one label of a ~1.5 MB PodDisruptionBudget wrote ~3 MB records;
// the journal was bounded by its record count alone (a snapshot every 50,000), so it grew by
// ~25 MB/s until the disk filled and the daemon went read-only for everyone. Now a snapshot also
// comes once the records since the last one hold snapshot_bytes (or snapshot_growth times the
// last snapshot's size), and its compaction deletes them.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "server/daemon.h"
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

}  // namespace snapshot_bytes_test
}  // namespace arbiter::server

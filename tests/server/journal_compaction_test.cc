// The journal's compaction after a snapshot, in pieces (issue 27): deleting all the records a
// snapshot covers in one commit held every create's commit for as long (0.9 s for 140k records at
// 300k live pods, growing with the state). Each commit now deletes at most a chunk of them, beside
// the records it writes; what a crash leaves of them is never replayed, and is deleted after the
// restart.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/durability/journal.h"

namespace arbiter::server {
namespace journal_compaction_test {

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-journal-compaction-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

// The records in DIR/journal.db's table.
int64_t Rows(const std::filesystem::path& dir) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open((dir / "journal.db").string().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM journal", -1, &st, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
  const int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

// A journal of `records` records (chunk: the most one commit deletes), a snapshot of the first
// `snapshot` stored. `hook` (if set) runs before each commit from before the snapshot on.
std::unique_ptr<Journal> Filled(const std::filesystem::path& dir, int64_t records, int64_t snapshot,
                                int64_t chunk, std::function<Status()> hook = nullptr) {
  auto j = Journal::Open(dir.string());
  EXPECT_TRUE(j.ok()) << j.message();
  std::unique_ptr<Journal> journal = std::move(j).value();
  journal->SetCompactionChunk(chunk);
  journal->Start(0);
  for (int64_t i = 1; i <= records; ++i)
    EXPECT_EQ(journal->Append("record " + std::to_string(i), ""), i);
  EXPECT_TRUE(journal->WaitDurable(records));
  if (hook) journal->SetCommitHook(std::move(hook));
  EXPECT_TRUE(journal->StoreSnapshot(snapshot, "the state").ok());
  return journal;
}

// Until the compaction is done (it goes on while no records come).
void WaitCompacted(const Journal& j, uint64_t records) {
  while (j.stats().compacted < records) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(JournalCompactionTest, ASnapshotsRecordsAreDeletedAChunkInEachCommit) {
  const auto dir = Dir("chunks");
  auto j = Filled(dir, 120, 100, 10);
  WaitCompacted(*j, 100);
  j->Stop();
  const JournalStats stats = j->stats();
  EXPECT_EQ(stats.compacted, 100u);
  EXPECT_EQ(stats.most_compacted_in_one, 10u);  // 100 before: all in one commit
  EXPECT_EQ(Rows(dir), 20);
  j.reset();
  auto again = Journal::Open(dir.string());
  ASSERT_TRUE(again.ok()) << again.message();
  auto snap = again.value()->LoadSnapshot();
  ASSERT_TRUE(snap.ok() && snap.value());
  EXPECT_EQ(snap.value()->seq, 100);
  std::vector<int64_t> replayed;
  ASSERT_TRUE(again.value()
                  ->Replay(100,
                           [&](int64_t seq, const std::string&) {
                             replayed.push_back(seq);
                             return Status::Ok();
                           })
                  .ok());
  ASSERT_EQ(replayed.size(), 20u);
  EXPECT_EQ(replayed.front(), 101);
}

// A crash (here a failed write) after the first piece: the records the snapshot covers that are
// left are not replayed, and are deleted once the journal is started again (here by Stop()).
TEST(JournalCompactionTest, RecordsACompactionLeftAreSkippedAndDeletedAfterARestart) {
  const auto dir = Dir("left");
  // The first commit after the hook is set stores the snapshot's marker and the first piece;
  // the second fails (counted here: the hook may run before Filled() returns).
  auto commits = std::make_shared<std::atomic<int>>(0);
  auto j = Filled(dir, 120, 100, 10, [commits] {
    return ++*commits >= 2 ? Status::Internal("the disk is gone") : Status::Ok();
  });
  EXPECT_FALSE(j->WaitDurable(121));  // the failed write stopped the writer
  EXPECT_TRUE(j->failed());
  j->Stop();
  EXPECT_EQ(j->stats().compacted, 10u);
  j.reset();
  EXPECT_EQ(Rows(dir), 110);

  auto again = Journal::Open(dir.string());
  ASSERT_TRUE(again.ok()) << again.message();
  auto snap = again.value()->LoadSnapshot();
  ASSERT_TRUE(snap.ok() && snap.value());
  int64_t first = 0, count = 0;
  ASSERT_TRUE(again.value()
                  ->Replay(snap.value()->seq,
                           [&](int64_t seq, const std::string&) {
                             if (count++ == 0) first = seq;
                             return Status::Ok();
                           })
                  .ok());
  EXPECT_EQ(first, 101);
  EXPECT_EQ(count, 20);
  again.value()->Start(120);
  again.value()->Stop();  // what is left of a compaction is done before it stops
  EXPECT_EQ(again.value()->stats().compacted, 90u);
  EXPECT_EQ(Rows(dir), 20);
}

}  // namespace journal_compaction_test
}  // namespace arbiter::server

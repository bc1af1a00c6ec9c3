// The snapshot file (DIR/snapshot.bin) as the journal stores it (issue 27): the file a new
// snapshot replaces is not freed but kept as DIR/snapshot.bin.tmp and written over by the next
// one. On a file system mounted with `discard` (this machine's ext4), freeing hundreds of MB
// discarded them in the journal commit that came next, and that create waited for it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "server/durability/journal.h"

namespace arbiter::server {
namespace journal_snapshot_file_test {

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-journal-snapshot-file-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

ino_t Inode(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::unique_ptr<Journal> Started(const std::filesystem::path& dir, int64_t records) {
  auto j = Journal::Open(dir.string());
  EXPECT_TRUE(j.ok()) << j.message();
  std::unique_ptr<Journal> journal = std::move(j).value();
  journal->Start(0);
  for (int64_t i = 1; i <= records; ++i)
    EXPECT_EQ(journal->Append("record " + std::to_string(i), ""), i);
  EXPECT_TRUE(journal->WaitDurable(records));
  return journal;
}

// Three snapshots, the second shorter than the first and the third longer than the second: each
// is read back exactly (nothing of the longer file it was written over is left at its end), and
// from the second on the file written is the one the snapshot before it replaced.
TEST(JournalSnapshotFileTest, TheReplacedFileIsWrittenOverByTheNextSnapshot) {
  const auto dir = Dir("reuse");
  auto j = Started(dir, 30);
  const std::string big(3u << 20, 'a'), small(100, 'b'), mid(1u << 20, 'c');
  ASSERT_TRUE(j->StoreSnapshot(10, big).ok());
  const ino_t first = Inode(dir / "snapshot.bin");
  ASSERT_NE(first, 0u);
  ASSERT_TRUE(j->StoreSnapshot(20, small).ok());
  EXPECT_EQ(Inode(dir / "snapshot.bin.tmp"), first) << "the replaced snapshot is kept";
  const ino_t second = Inode(dir / "snapshot.bin");
  ASSERT_TRUE(j->StoreSnapshot(30, mid).ok());
  EXPECT_EQ(Inode(dir / "snapshot.bin"), first) << "the third was written over the first";
  EXPECT_EQ(Inode(dir / "snapshot.bin.tmp"), second);
  EXPECT_FALSE(std::filesystem::exists(dir / "snapshot.bin.old"));
  j->Stop();
  j.reset();
  auto again = Journal::Open(dir.string());
  ASSERT_TRUE(again.ok()) << again.message();
  auto snap = again.value()->LoadSnapshot();
  ASSERT_TRUE(snap.ok()) << snap.message();
  ASSERT_TRUE(snap.value());
  EXPECT_EQ(snap.value()->seq, 30);
  EXPECT_EQ(snap.value()->bytes, mid);
  std::filesystem::remove_all(dir);
}

// What a crash can leave beside the snapshot: the spare (DIR/snapshot.bin.old, a second link to
// snapshot.bin, between the link and the rename) is removed by the next snapshot, and a
// half-written DIR/snapshot.bin.tmp is never read, then written over.
TEST(JournalSnapshotFileTest, WhatACrashLeftBesideTheSnapshotIsNeverRead) {
  const auto dir = Dir("crash");
  auto j = Started(dir, 20);
  ASSERT_TRUE(j->StoreSnapshot(10, std::string(1000, 'a')).ok());
  std::filesystem::create_hard_link(dir / "snapshot.bin", dir / "snapshot.bin.old");
  std::ofstream(dir / "snapshot.bin.tmp") << "a snapshot half written";
  j->Stop();
  j.reset();
  {
    auto again = Journal::Open(dir.string());
    ASSERT_TRUE(again.ok()) << again.message();
    auto snap = again.value()->LoadSnapshot();
    ASSERT_TRUE(snap.ok() && snap.value()) << snap.message();
    EXPECT_EQ(snap.value()->seq, 10);
    EXPECT_EQ(snap.value()->bytes, std::string(1000, 'a'));
    ASSERT_TRUE(
        again.value()->Replay(10, [](int64_t, const std::string&) { return Status::Ok(); }).ok());
    again.value()->Start(20);
    ASSERT_TRUE(again.value()->StoreSnapshot(20, "the state at 20").ok());
    EXPECT_FALSE(std::filesystem::exists(dir / "snapshot.bin.old"));
    again.value()->Stop();
  }
  auto last = Journal::Open(dir.string());
  ASSERT_TRUE(last.ok()) << last.message();
  auto snap = last.value()->LoadSnapshot();
  ASSERT_TRUE(snap.ok() && snap.value()) << snap.message();
  EXPECT_EQ(snap.value()->seq, 20);
  EXPECT_EQ(snap.value()->bytes, "the state at 20");
  std::filesystem::remove_all(dir.parent_path());
}

}  // namespace journal_snapshot_file_test
}  // namespace arbiter::server

// The journal's format row is checked at open: a journal of a newer format, or of no known
// format, is refused with a message naming both versions; the current format opens. A data
// directory is one journal's at a time (its LOCK).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "server/durability/journal.h"

namespace arbiter::server {
namespace journal_format_test {

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-journal-format-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

// A new journal, then its format row set to `format`.
void WriteFormat(const std::filesystem::path& dir, const std::string& format) {
  {
    auto j = Journal::Open(dir.string());
    ASSERT_TRUE(j.ok()) << j.message();
    EXPECT_EQ(j.value()->format_version(), Journal::kFormatVersion);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "journal.db").string().c_str(), &db), SQLITE_OK);
  const std::string sql = "UPDATE meta SET value = '" + format + "' WHERE key = 'format'";
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);
}

TEST(JournalFormatTest, ANewerFormatIsRefusedNamingBothVersions) {
  const auto dir = Dir("newer");
  WriteFormat(dir, "arbiter-journal " + std::to_string(Journal::kFormatVersion + 1));
  auto j = Journal::Open(dir.string());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.message().find("is journal format " + std::to_string(Journal::kFormatVersion + 1) +
                             ", written by a newer arbiter"),
            std::string::npos)
      << j.message();
  EXPECT_NE(j.message().find("reads formats up to " + std::to_string(Journal::kFormatVersion)),
            std::string::npos)
      << j.message();
}

TEST(JournalFormatTest, AnUnknownFormatIsRefused) {
  const auto dir = Dir("unknown");
  WriteFormat(dir, "something else 1");
  auto j = Journal::Open(dir.string());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.message().find("unknown journal format \"something else 1\""), std::string::npos)
      << j.message();
}

TEST(JournalFormatTest, TheCurrentFormatOpensAndKeepsItsInstance) {
  const auto dir = Dir("current");
  std::string instance;
  {
    auto j = Journal::Open(dir.string());
    ASSERT_TRUE(j.ok()) << j.message();
    instance = j.value()->instance_id();
  }
  auto j = Journal::Open(dir.string());
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ(j.value()->instance_id(), instance);
  EXPECT_EQ(j.value()->format_version(), Journal::kFormatVersion);
}

// meta.walk-through (the last record of formats 1-3 in a migrated journal: they replay with the
// pending walk), meta.format4-jobs-through (of formats 1-4: their Job pod names) and
// meta.format5-through (of formats 1-5: pods stored as sent), meta.format6-through (of formats
// 1-6: deletes' timestamps), meta.format7-through (of formats 1-7: a Job's pods all made in one
// sync), meta.format8-through (of formats 1-8: a Job's fill synced by any mutation),
// meta.format9-through (of formats 1-9: a deleted Job's pods all in the delete's record) and
// meta.format10-through (of formats 1-10: an ending Job's pods all counted in one sync) must be
// record numbers: anything else is refused, named, rather than replayed by the wrong rules.
TEST(JournalFormatTest, AMarkThatIsNotARecordNumberIsRefused) {
  using Mark = int64_t (Journal::*)() const;
  const std::vector<std::pair<std::string, Mark>> marks = {
      {"walk-through", &Journal::pending_walk_through},
      {"format4-jobs-through", &Journal::format4_jobs_through},
      {"format5-through", &Journal::format5_through},
      {"format6-through", &Journal::format6_through},
      {"format7-through", &Journal::format7_through},
      {"format8-through", &Journal::format8_through},
      {"format9-through", &Journal::format9_through},
      {"format10-through", &Journal::format10_through}};
  for (const auto& [key, mark] : marks) {
    for (const std::string bad : {"abc", "12x", "-3", " 12", "+12", "99999999999999999999", ""}) {
      SCOPED_TRACE(key + " \"" + bad + "\"");
      const auto dir = Dir("walk");
      WriteFormat(dir, "arbiter-journal " + std::to_string(Journal::kFormatVersion));
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open((dir / "journal.db").string().c_str(), &db), SQLITE_OK);
      std::string sql = "INSERT INTO meta (key, value) VALUES ('" + key + "', '" + bad + "')";
      for (const auto& [other, unused] : marks)  // the others well formed
        if (other != key) sql += ", ('" + other + "', '7')";
      EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
      auto j = Journal::Open(dir.string());
      if (bad.empty()) {  // (as absent: a journal begun in the format after the mark's)
        ASSERT_TRUE(j.ok()) << j.message();
        for (const auto& [other, other_mark] : marks)
          EXPECT_EQ(((*j.value()).*other_mark)(), other == key ? 0 : 7) << other;
        continue;
      }
      ASSERT_FALSE(j.ok());
      EXPECT_NE(j.message().find("meta " + key + " is not a record number: \"" + bad + "\""),
                std::string::npos)
          << j.message();
    }
  }
}

// A second journal on a directory whose journal is open (a second `arbiter serve --data` on it)
// is refused, naming the holder's pid; it opens once the first is closed.
TEST(JournalFormatTest, ASecondJournalOnTheSameDirectoryIsRefusedWhileTheFirstIsOpen) {
  const auto dir = Dir("locked");
  {
    auto first = Journal::Open(dir.string());
    ASSERT_TRUE(first.ok()) << first.status().message();
    auto second = Journal::Open(dir.string());
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("is in use by another arbiter serve (pid " +
                                             std::to_string(getpid()) + ")"),
              std::string::npos)
        << second.status().message();
  }
  auto again = Journal::Open(dir.string());
  EXPECT_TRUE(again.ok()) << again.status().message();
}

}  // namespace journal_format_test
}  // namespace arbiter::server

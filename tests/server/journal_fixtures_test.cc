// Journals written by an earlier release (tests/data/journal/, made by its make-fixtures.sh with
// the release before the journal recorded engine commands) open and replay to the cluster that
// release served: every object with its resourceVersion, where each pod runs and its phase, the
// quota's usage. One fixture is all records, one a snapshot and the records after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/daemon.h"

namespace arbiter::server {
namespace journal_fixtures_test {

const std::filesystem::path kFixtures =
    std::filesystem::path(ARBITER_SOURCE_DIR) / "tests/data/journal";

std::string ReadWhole(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy of the fixture's data directory (opening writes to it).
std::filesystem::path CopyOf(const std::string& fixture) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arbiter-journal-fixtures-" + std::to_string(getpid())) / fixture;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kFixtures / fixture / "data/journal.db", dir / "journal.db");
  return dir;
}

// The same lines make-fixtures.sh wrote from the live daemon's lists.
std::string Summary(const Cluster& c) {
  std::vector<std::string> lines;
  for (const char* kind :
       {"Node", "Namespace", "PriorityClass", "ResourceQuota", "PodDisruptionBudget", "Pod"}) {
    for (const Json* o : c.store().List(kind, "")) {
      const Json& meta = o->at("metadata");
      std::string line = std::string(kind) + " " + meta.value("namespace", "") + "/" +
                         meta.value("name", "") + " rv=" + meta.value("resourceVersion", "");
      if (std::string(kind) == "Pod") {
        line += " node=" + o->value("/spec/nodeName"_json_pointer, std::string()) +
                " phase=" + o->value("/status/phase"_json_pointer, std::string());
      } else if (std::string(kind) == "ResourceQuota") {
        const Json used = o->value("/status/used"_json_pointer, Json::object());
        line += " used.cpu=" + used.value("requests.cpu", "");
      }
      lines.push_back(line);
    }
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

void ExpectReplaysAsWritten(const std::string& fixture, bool from_snapshot) {
  const auto dir = CopyOf(fixture);
  DaemonOptions o;
  o.data_dir = dir.string();
  o.clock = [] { return Millis{0}; };  // the journal's own last time: no timer fires
  o.snapshot_every = 0;
  o.check_invariants = true;
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().from_snapshot, from_snapshot);
  EXPECT_GT(d.value()->startup().replayed, 0);
  const std::string got = d.value()->Read([](const Cluster& c) { return Summary(c); });
  EXPECT_EQ(got, ReadWhole(kFixtures / fixture / "expected.txt"));
  d.value()->Stop();
}

TEST(JournalFixturesTest, AllRecordsReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("tail", false);
}

TEST(JournalFixturesTest, SnapshotAndTailReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("snapshot", true);
}

}  // namespace journal_fixtures_test
}  // namespace arbiter::server

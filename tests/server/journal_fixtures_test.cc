// Journals written by earlier releases (tests/data/journal/, made by its make-fixtures.sh: format
// 1 with the release before the journal recorded engine commands, format 2 with the release that
// introduced them, format 3 with the one that moved snapshots beside the journal) open and replay
// to the cluster that release served: every object with its resourceVersion, where each pod runs
// and its phase, the quota's usage. One fixture of each format is all records, one a snapshot and
// the records after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
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
  // journal.db, and from format 3 on snapshot.bin beside it
  for (const auto& f : std::filesystem::directory_iterator(kFixtures / fixture / "data"))
    std::filesystem::copy_file(f.path(), dir / f.path().filename());
  return dir;
}

// The same lines make-fixtures.sh wrote from the live daemon's lists.
std::string Summary(const Cluster& c) {
  std::vector<std::string> lines;
  for (const char* kind : {"Node", "Namespace", "PriorityClass", "ResourceQuota",
                           "PodDisruptionBudget", "Pod", "Job"}) {
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

// A daemon on `dir` at `clock`'s time: no snapshots, invariants checked after the replay.
DaemonOptions OptionsFor(const std::filesystem::path& dir, std::function<Millis()> clock) {
  DaemonOptions o;
  o.data_dir = dir.string();
  o.clock = std::move(clock);
  o.snapshot_every = 0;
  o.check_invariants = true;
  return o;
}

// Opens a copy of the fixture: it replays to what the release served, is migrated to the current
// format if older (a snapshot replaces its records), and opens again to the same cluster.
void ExpectReplaysAsWritten(const std::string& fixture, bool from_snapshot, int format) {
  const auto dir = CopyOf(fixture);
  // (clock 0: the journal's own last time, no timer fires)
  const DaemonOptions o = OptionsFor(dir, [] { return Millis{0}; });
  const std::string expected = ReadWhole(kFixtures / fixture / "expected.txt");
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d.value()->startup().from_snapshot, from_snapshot);
    EXPECT_GT(d.value()->startup().replayed, 0);
    EXPECT_EQ(d.value()->startup().migrated_from, format < Journal::kFormatVersion ? format : 0);
    EXPECT_EQ(d.value()->journal().format_version(), Journal::kFormatVersion);
    EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Summary(c); }), expected);
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);  // the migrated journal, or the same one again
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 0);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Summary(c); }), expected);
  d.value()->Stop();
}

// Format 1 (records are requests; made with commit 3d77801).
TEST(JournalFixturesTest, AllRecordsReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("tail", false, 1);
}

TEST(JournalFixturesTest, SnapshotAndTailReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("snapshot", true, 1);
}

// Format 2 (records carry their engine commands; tests/data/journal/format2, made by
// make-fixtures.sh with the release that introduced it).
TEST(JournalFixturesTest, Format2AllRecordsReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("format2/tail", false, 2);
}

TEST(JournalFixturesTest, Format2SnapshotAndTailReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("format2/snapshot", true, 2);
}

// Format 3 (the snapshot in snapshot.bin beside the journal, written off the daemon's lock;
// tests/data/journal/format3, made by make-fixtures.sh with the release that introduced it).
TEST(JournalFixturesTest, Format3AllRecordsReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("format3/tail", false, 3);
}

TEST(JournalFixturesTest, Format3SnapshotAndTailReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("format3/snapshot", true, 3);
}

// A pending pod's reservation moved with no Event (format3/restated, make-fixtures.sh): the
// release of format 3 left its stored status as it was, and its records replay so (the pending
// walk, Cluster::SetPendingWalk), with the resourceVersions it served.
TEST(JournalFixturesTest, Format3RestatedReplaysWithThePendingWalk) {
  ExpectReplaysAsWritten("format3/restated", false, 3);
}

// Format 4: a pending pod's status rewritten when the engine restates it (tests/data/journal/
// format4, made by make-fixtures.sh with the release that introduced it).
TEST(JournalFixturesTest, Format4AllRecordsReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("format4/tail", false, 4);
}

TEST(JournalFixturesTest, Format4SnapshotAndTailReplayToTheClusterTheReleaseServed) {
  ExpectReplaysAsWritten("format4/snapshot", true, 4);
}

TEST(JournalFixturesTest, Format4RestatedReplaysToTheStatusItsReleaseWrote) {
  ExpectReplaysAsWritten("format4/restated", false, 4);
}

// A Job's first pod deleted and replaced (format4/jobs): the release of format 4 named the
// replacement as the pod it replaced, and its records replay so.
TEST(JournalFixturesTest, Format4JobsReplayToThePodNamesItsReleaseGave) {
  ExpectReplaysAsWritten("format4/jobs", false, 4);
}

// The names of Job train's pods in `c` (those not being deleted with `active`).
std::set<std::string> PodNames(const Cluster& c, bool active = false) {
  std::set<std::string> names;
  for (const Json* p : c.store().List("Pod", "default")) {
    const std::string name = p->at("metadata").value("name", "");
    if (name.rfind("train-", 0) == 0 &&
        (!active || !p->at("metadata").contains("deletionTimestamp")))
      names.insert(name);
  }
  return names;
}

// A format-4 journal migrated to format 5: its records replay with the names they were written
// with (meta.format4-jobs-through), a pod deleted since is replaced under a name no pod of the Job
// had, and the journal reopens to the same pods.
TEST(JournalFixturesTest, AMigratedJournalNamesLaterJobPodsAfresh) {
  const auto dir = CopyOf("format4/jobs");
  Millis now = 0;
  const DaemonOptions o = OptionsFor(dir, [&now] { return now; });
  std::string served;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d.value()->startup().migrated_from, 4);
    EXPECT_EQ(d.value()->journal().format4_jobs_through(), d.value()->journal().last_seq());
    EXPECT_EQ(d.value()->journal().pending_walk_through(), 0);  // begun in format 4: kept
    const std::set<std::string> before =
        d.value()->Read([](const Cluster& c) { return PodNames(c); });
    const std::set<std::string> active =
        d.value()->Read([](const Cluster& c) { return PodNames(c, true); });
    ASSERT_EQ(active.size(), 2u);
    now = d.value()->Read([](const Cluster& c) { return c.now(); }) + 1000;
    Mutation del;
    del.op = Mutation::Op::kDelete;
    del.kind = "Pod";
    del.namespace_ = "default";
    del.name = *active.begin();
    del.grace_period = 0;
    ASSERT_TRUE(d.value()->Mutate(std::move(del)).ok());
    now += 21000;  // past the back-off: the Job's second failure (20 s)
    ASSERT_TRUE(d.value()->Mutate(Mutation{}).ok());
    const std::set<std::string> after =
        d.value()->Read([](const Cluster& c) { return PodNames(c, true); });
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after.count(*active.rbegin()), 1u);
    for (const auto& name : after)  // the replacement's is new (format 4 gave the first name back)
      if (name != *active.rbegin()) {
        EXPECT_EQ(before.count(name), 0u) << name;
      }
    served = d.value()->Read([](const Cluster& c) { return Summary(c); });
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 0);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Summary(c); }), served);
  d.value()->Stop();
}

// A format-3 journal migrated to format 4 keeps its records, and later records are appended:
// reopened, the old records replay with the walk and the new ones without it, each to the
// versions served. Here the new record is a Namespace's create whose cycle moves pod b's
// reservation with no Event: format 4 rewrites b's status (it is not left as format 3 left it).
TEST(JournalFixturesTest, AMigratedJournalReplaysEachRecordByTheRulesItWasWrittenWith) {
  const auto dir = CopyOf("format3/restated");
  Millis now = 0;  // the journal's own last time until set
  const DaemonOptions o = OptionsFor(dir, [&now] { return now; });
  std::string served;
  int64_t walked = 0;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d.value()->startup().migrated_from, 3);
    walked = d.value()->journal().pending_walk_through();
    EXPECT_EQ(walked, d.value()->journal().last_seq());
    auto rv_of_b = [&] {
      return d.value()->Read([](const Cluster& c) {
        return c.store().Get("Pod", "default", "b")->at("metadata").value("resourceVersion", "");
      });
    };
    const std::string before = rv_of_b();
    now = d.value()->Read([](const Cluster& c) { return c.now(); }) + 5000;
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Namespace";
    m.object = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "again"}}}};
    ASSERT_TRUE(d.value()->Mutate(std::move(m)).ok());
    EXPECT_NE(rv_of_b(), before);  // b's reservation moved: its status written
    served = d.value()->Read([](const Cluster& c) { return Summary(c); });
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 0);
  EXPECT_EQ(d.value()->journal().pending_walk_through(), walked);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Summary(c); }), served);
  d.value()->Stop();
}

}  // namespace journal_fixtures_test
}  // namespace arbiter::server

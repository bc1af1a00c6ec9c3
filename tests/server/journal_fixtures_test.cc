// Journals written by earlier releases (tests/data/journal/, made by its make-fixtures.sh: format
// 1 with the release before the journal recorded engine commands, format 2 with the release that
// introduced them, format 3 with the one that moved snapshots beside the journal) open and replay
// to the cluster that release served: every object with its resourceVersion, where each pod runs
// and its phase, the quota's usage. One fixture of each format is all records, one a snapshot and
// the records after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "server/daemon.h"
#include "server/state/pod_status.h"

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

// Pods created beside a LimitRange with defaults (format5/limits): the release of format 5 stored
// them as sent, and its records replay so.
TEST(JournalFixturesTest, Format5LimitsReplayToThePodsItsReleaseStored) {
  ExpectReplaysAsWritten("format5/limits", false, 5);
}

// Every pod of `c` in namespace default, whole, by name.
std::map<std::string, Json> Pods(const Cluster& c) {
  std::map<std::string, Json> pods;
  for (const Json* p : c.store().List("Pod", "default"))
    pods.emplace(p->at("metadata").value("name", ""), *p);
  return pods;
}

// A format-5 journal migrated to format 6: its pods stay as they were sent (no defaults written
// into them, meta.format5-through); a pod and a Job's pod created since get the LimitRange's
// defaults, a limit's request and kube's annotation; the journal reopens to the same pods, whole.
TEST(JournalFixturesTest, AMigratedJournalWritesLimitRangeDefaultsIntoLaterPodsOnly) {
  const auto dir = CopyOf("format5/limits");
  Millis now = 0;
  const DaemonOptions o = OptionsFor(dir, [&now] { return now; });
  std::map<std::string, Json> served;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d.value()->startup().migrated_from, 5);
    EXPECT_EQ(d.value()->journal().format5_through(), d.value()->journal().last_seq());
    EXPECT_EQ(d.value()->journal().format4_jobs_through(), 0);  // begun in format 5: kept
    const auto before = d.value()->Read([](const Cluster& c) { return Pods(c); });
    ASSERT_EQ(before.size(), 3u);
    for (const auto& [name, pod] : before) {
      EXPECT_FALSE(pod.at("metadata").contains("annotations") &&
                   pod["metadata"]["annotations"].contains("kubernetes.io/limit-ranger"))
          << name;
      const Json& resources = pod["spec"]["containers"][0].value("resources", Json::object());
      EXPECT_FALSE(resources.contains("requests")) << name << " " << resources.dump();
    }
    now = d.value()->Read([](const Cluster& c) { return c.now(); }) + 1000;
    auto create = [&](const char* kind, Json object) {
      Mutation m;
      m.op = Mutation::Op::kCreate;
      m.kind = kind;
      m.namespace_ = "default";
      m.name = object["metadata"]["name"];
      m.object = std::move(object);
      const MutationResult r = d.value()->Mutate(std::move(m));
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error->message);
    };
    const Json container = {{"name", "c"}, {"image", "busybox"}};
    create("Pod", {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", "later"}}},
                   {"spec", {{"containers", {container}}}}});
    Json limited = container;
    limited["resources"] = {{"limits", {{"cpu", "1"}}}};
    create("Pod", {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", "later-limited"}}},
                   {"spec", {{"containers", {limited}}}}});
    Json job_spec = {{"restartPolicy", "Never"}, {"containers", {container}}};
    Json job = {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", {{"name", "later-job"}}}};
    job["spec"]["template"]["spec"] = job_spec;
    create("Job", job);
    served = d.value()->Read([](const Cluster& c) { return Pods(c); });
    ASSERT_EQ(served.size(), 6u);
    const Json defaulted = {{"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}},
                            {"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}}};
    const std::string note =
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for "
        "container c";
    for (const auto& [name, pod] : served) {
      if (before.count(name)) {
        EXPECT_EQ(pod, before.at(name)) << name;  // (its status did not move)
        continue;
      }
      SCOPED_TRACE(name);
      const Json& resources = pod["spec"]["containers"][0]["resources"];
      const Json& annotations = pod["metadata"]["annotations"];
      if (name == "later-limited") {  // its limit, requested; the rest from the LimitRange
        EXPECT_EQ(resources, Json({{"limits", {{"cpu", "1"}, {"memory", "256Mi"}}},
                                   {"requests", {{"cpu", "1"}, {"memory", "256Mi"}}}}));
        EXPECT_EQ(annotations.value("kubernetes.io/limit-ranger", ""),
                  "LimitRanger plugin set: memory request for container c; memory limit for "
                  "container c");
      } else {  // later, and the Job's pod
        EXPECT_EQ(resources, defaulted);
        EXPECT_EQ(annotations.value("kubernetes.io/limit-ranger", ""), note);
      }
    }
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 0);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Pods(c); }), served);
  d.value()->Stop();
}

// Pods deleted twice while they shut down (format6/deletes, made with 9e80595): the releases of
// formats 1-6 rewrote the deletionTimestamp (the delete's instant) at each delete and let a
// second one's grace 0 change nothing; their records replay so.
TEST(JournalFixturesTest, Format6DeletesReplayAsTheirReleaseAnswered) {
  ExpectReplaysAsWritten("format6/deletes", false, 6);
}

// The same journal migrated to format 7 (meta.format6-through): `forced`, which its release left
// shutting down with deletionGracePeriodSeconds 0, goes at the next delete (kube deletes such an
// object at once); a delete of `longer` (600 s) with a longer grace changes nothing (the same
// object). The journal reopens to the same pods.
TEST(JournalFixturesTest, AMigratedJournalLetsALaterDeleteOnlyShortenTheGrace) {
  const auto dir = CopyOf("format6/deletes");
  Millis now = 0;
  const DaemonOptions o = OptionsFor(dir, [&now] { return now; });
  std::map<std::string, Json> served;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d.value()->startup().migrated_from, 6);
    EXPECT_EQ(d.value()->journal().format6_through(), d.value()->journal().last_seq());
    EXPECT_EQ(d.value()->journal().format5_through(), 0);  // begun in format 6
    EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq()), 6);
    EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq() + 1),
              Journal::kFormatVersion);
    const auto before = d.value()->Read([](const Cluster& c) { return Pods(c); });
    ASSERT_EQ(before.size(), 2u);
    now = d.value()->Read([](const Cluster& c) { return c.now(); }) + 1000;
    auto remove = [&](const char* name, int64_t grace_seconds) {
      Mutation m;
      m.op = Mutation::Op::kDelete;
      m.kind = "Pod";
      m.namespace_ = "default";
      m.name = name;
      m.grace_period = grace_seconds * 1000;
      const MutationResult r = d.value()->Mutate(std::move(m));
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error->message);
    };
    remove("longer", 900);
    remove("forced", 0);
    now += 1;
    ASSERT_TRUE(d.value()->Mutate(Mutation{}).ok());
    served = d.value()->Read([](const Cluster& c) { return Pods(c); });
    ASSERT_EQ(served.size(), 1u);
    EXPECT_EQ(served.at("longer"), before.at("longer"));
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 0);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Pods(c); }), served);
  d.value()->Stop();
}

// A Job of 510 pods created, then suspended (format7/bigjob, made with 7839f80): the releases of
// formats 1-7 made every pod in the create's record and deleted every one in the suspend's; their
// records replay so (by format 8's rules the replay would make 500, which the commands do not fit).
// Migrated (meta.format7-through), the journal's later syncs make 200 pods each (journal format
// 11; 500 in formats 8-10): the resume answers with 200, the clock's advances make the other 310,
// and the journal reopens to the same pods.
TEST(JournalFixturesTest, Format7BigJobReplaysAsItsReleaseMadeIt) {
  ExpectReplaysAsWritten("format7/bigjob", false, 7);
  const auto dir = CopyOf("format7/bigjob");
  std::atomic<Millis> now{0};
  const DaemonOptions o = OptionsFor(dir, [&now] { return now.load(); });
  auto active = [](const Cluster& c) {
    int n = 0;
    for (const Json* p : c.store().List("Pod", "default"))
      n += !p->at("metadata").contains("deletionTimestamp");
    return n;
  };
  std::string served;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d.value()->startup().migrated_from, 7);
    EXPECT_EQ(d.value()->journal().format7_through(), d.value()->journal().last_seq());
    EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq()), 7);
    EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq() + 1),
              Journal::kFormatVersion);
    EXPECT_EQ(d.value()->Read(active), 0);
    now = d.value()->Read([](const Cluster& c) { return c.now(); }) + 1000;
    Mutation m;
    m.op = Mutation::Op::kUpdate;
    m.kind = "Job";
    m.namespace_ = "default";
    m.name = "wide";
    m.object =
        d.value()->Read([](const Cluster& c) { return *c.store().Get("Job", "default", "wide"); });
    m.object["spec"]["suspend"] = false;
    const MutationResult r = d.value()->Mutate(std::move(m));
    ASSERT_TRUE(r.ok()) << (r.ok() ? "" : r.error->message);
    EXPECT_EQ(r.object.at("status").value("active", 0), Cluster::kMaxPodCreateDeletePerAdvance);
    for (int i = 0; i < 1000 && d.value()->Read(active) < 510; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(d.value()->Read(active), 510);
    served = d.value()->Read([](const Cluster& c) { return Summary(c); });
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 0);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return Summary(c); }), served);
  d.value()->Stop();
}

// Another namespace's pod create between a Job's create (500 of its 505 pods) and the clock's
// advance (format8/fill, made with 3063bc0): the releases of format 8 synced the Job at any
// mutation, and that create's record made the Job's other 5 pods; it replays so (by format 9's
// rules the create would make none, which its commands do not fit). Migrated
// (meta.format8-through), the journal's later records are format 9's.
TEST(JournalFixturesTest, Format8FillReplaysAsItsReleaseMadeIt) {
  ExpectReplaysAsWritten("format8/fill", false, 8);
  const auto dir = CopyOf("format8/fill");
  const DaemonOptions o = OptionsFor(dir, [] { return Millis{0}; });
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 8);
  EXPECT_EQ(d.value()->journal().format8_through(), d.value()->journal().last_seq());
  EXPECT_EQ(d.value()->journal().format7_through(), 0);  // begun in format 8
  EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq()), 8);
  EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq() + 1),
            Journal::kFormatVersion);
  d.value()->Stop();
}

// Jobs of 1,200 and 510 pods deleted Background, Foreground, Orphan (format9/jobdelete, made with
// c4ed47a): the releases of formats 1-9 acted on every pod in the delete's record and made 500
// pods an advance, and it replays so (by format 10's rules an advance makes 200, the Background
// delete deletes 500: their commands do not fit). Migrated (meta.format9-through), the journal's
// later records are format 10's.
TEST(JournalFixturesTest, Format9JobDeletesReplayAsTheirReleaseMadeThem) {
  ExpectReplaysAsWritten("format9/jobdelete", false, 9);
  const auto dir = CopyOf("format9/jobdelete");
  auto d = Daemon::Open(OptionsFor(dir, [] { return Millis{0}; }));
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 9);
  EXPECT_EQ(d.value()->journal().format9_through(), d.value()->journal().last_seq());
  EXPECT_EQ(d.value()->journal().format8_through(), 0);  // begun in format 9
  EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq()), 9);
  EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq() + 1),
            Journal::kFormatVersion);
  d.value()->Stop();
}

// Jobs of 1,200 pods that end with their pods unfinished (format10/jobend, made with 199e6b9):
// "first" meets its successPolicy with its other pods running, "late" fails at its deadline with
// all its pods terminating (a user deleted them; podReplacementPolicy Failed), the journal's last
// record. The releases of formats 1-10 took every unfinished pod's tracking finalizer off
// (failing: counted each in status.failed) in the sync that ended the Job, and it replays so (by
// format 11's rules that sync counts 500, and no later record counts the rest). Migrated
// (meta.format10-through), the journal's later records are format 11's.
TEST(JournalFixturesTest, Format10JobEndsReplayAsTheirReleaseMadeThem) {
  ExpectReplaysAsWritten("format10/jobend", false, 10);
  const auto dir = CopyOf("format10/jobend");
  auto d = Daemon::Open(OptionsFor(dir, [] { return Millis{0}; }));
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->startup().migrated_from, 10);
  EXPECT_EQ(d.value()->journal().format10_through(), d.value()->journal().last_seq());
  EXPECT_EQ(d.value()->journal().format9_through(), 0);  // begun in format 10
  EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq()), 10);
  EXPECT_EQ(d.value()->journal().RecordFormat(d.value()->journal().last_seq() + 1),
            Journal::kFormatVersion);
  d.value()->Read([](const Cluster& c) {
    EXPECT_EQ(c.store().Get("Job", "default", "late")->at("status").value("failed", 0), 1200);
    for (const Json* pod : c.store().List("Pod", "default"))
      EXPECT_FALSE(pod->at("metadata").contains("finalizers"));
  });
  d.value()->Stop();
}

// The terminated state of a finished container: the releases of formats 1-5 wrote no startedAt
// (format4/tail's team-b/short), and their records replay so; a pod that finishes once the
// journal is migrated has it (its run's start), and the journal reopens to the same pod.
TEST(JournalFixturesTest, AMigratedJournalWritesStartedAtIntoLaterFinishedContainersOnly) {
  const auto dir = CopyOf("format4/tail");
  Millis now = 0;
  const DaemonOptions o = OptionsFor(dir, [&now] { return now; });
  auto terminated = [](const Cluster& c, const char* ns, const char* name) {
    const Json* p = c.store().Get("Pod", ns, name);
    return p ? p->value("/status/containerStatuses/0/state/terminated"_json_pointer, Json())
             : Json();
  };
  Json quick;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    const Json old =
        d.value()->Read([&](const Cluster& c) { return terminated(c, "team-b", "short"); });
    ASSERT_TRUE(old.is_object()) << old.dump();
    EXPECT_FALSE(old.contains("startedAt")) << old.dump();
    const Millis start = d.value()->Read([](const Cluster& c) { return c.now(); }) + 1000;
    now = start;
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Pod";
    m.namespace_ = "team-b";
    m.name = "quick";
    m.object = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "quick"}, {"annotations", {{"arbiter.dev/duration", "1s"}}}}},
        {"spec",
         {{"priorityClassName", "low"},
          {"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "100m"}}}}}}}}}}};
    const MutationResult r = d.value()->Mutate(std::move(m));
    ASSERT_TRUE(r.ok()) << r.error->message;
    now = start + 2000;
    ASSERT_TRUE(d.value()->Mutate(Mutation{}).ok());
    quick = d.value()->Read([&](const Cluster& c) { return terminated(c, "team-b", "quick"); });
    ASSERT_TRUE(quick.is_object()) << quick.dump();
    EXPECT_EQ(quick.value("startedAt", ""), KubeTime(start)) << quick.dump();
    EXPECT_EQ(quick.value("finishedAt", ""), KubeTime(start + 1000)) << quick.dump();
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->Read([&](const Cluster& c) { return terminated(c, "team-b", "quick"); }),
            quick);
  EXPECT_FALSE(d.value()
                   ->Read([&](const Cluster& c) { return terminated(c, "team-b", "short"); })
                   .contains("startedAt"));
  d.value()->Stop();
}

}  // namespace journal_fixtures_test
}  // namespace arbiter::server

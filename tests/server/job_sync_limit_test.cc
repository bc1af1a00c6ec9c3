// A Job's sync makes at most 500 pods and deletes at most as many (kube's
// MaxPodCreateDeletePerSync, job_controller.h), the rest at the next sync, due at once: the
// daemon's clock makes them in advances of their own (journal format 8). Found by a hostile-tenant
// trial: one Job of parallelism 100,000 was made whole in its create, 15 s under the daemon's lock.
// Records of formats 1-7 replay as their releases made them (every pod in one sync). The fill is
// the clock's alone (journal format 9): format 8 made the next 500 in whichever mutation came
// first, another tenant's pod create as well. Also kube's
// limits of Indexed Jobs (validation.go), refused 422 with its words.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "cluster_fixtures.h"
#include "server/daemon.h"
#include "server/durability/command_tape.h"
#include "server/durability/journal.h"
#include "server/state/cluster.h"
#include "server/state/job_controller.h"

namespace arbiter::server {
namespace job_sync_limit_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::JobCondition;
using fixtures::JobStatus;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Ok;
using fixtures::PodsOf;
using fixtures::Update;

// The clock's budget: pods made or deleted by one advance (across all Jobs); how many advances
// make or delete `pods` pods.
constexpr int64_t kPerAdvance = Cluster::kMaxPodCreateDeletePerAdvance;
// What a Job's sync in a request of its own (its create, a spec change, its DELETE) acts on:
// journal format 11 as much as an advance (Cluster::SyncBudget); formats 8-10
// kMaxPodCreateDeletePerSync (500).
constexpr int kPerSync = static_cast<int>(Cluster::kMaxPodCreateDeletePerAdvance);
int PerSync(int format) { return format >= 11 ? kPerSync : kMaxPodCreateDeletePerSync; }
int AdvancesFor(int64_t pods) { return static_cast<int>((pods + kPerAdvance - 1) / kPerAdvance); }

// A node every pod below fits on: 1,000 CPUs, room for 10,000 pods.
Json BigNode() {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", "big"}}},
          {"status", {{"capacity", {{"cpu", "1000"}, {"memory", "4Ti"}, {"pods", "10000"}}}}}};
}

// A Job whose pods ask 100m and run `duration`; `spec` is merged into its spec.
Json JobOf(const std::string& name, const Json& spec, const std::string& duration = "1h") {
  Json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec",
             {{"template",
               {{"metadata", {{"annotations", {{"arbiter.dev/duration", duration}}}}},
                {"spec",
                 {{"restartPolicy", "Never"},
                  {"containers",
                   {{{"name", "c"},
                     {"image", "busybox"},
                     {"resources", {{"requests", {{"cpu", "100m"}}}}}}}}}}}}}}};
  j["spec"].update(spec);
  return j;
}

struct Count {
  int active = 0;    // not being deleted, not finished
  int deleting = 0;  // metadata.deletionTimestamp
};
Count CountPods(const Cluster& c, const std::string& job) {
  Count n;
  for (const Json* p : PodsOf(c, job)) {
    const std::string phase = p->at("status").value("phase", "");
    if (p->at("metadata").contains("deletionTimestamp"))
      ++n.deleting;
    else if (phase != "Succeeded" && phase != "Failed")
      ++n.active;
  }
  return n;
}

// The pods of Job `job` still tracked by it (the finalizer) and still owned by it (an
// ownerReference to a Job).
struct Kept {
  int tracked = 0, owned = 0;
};
Kept KeptBy(const Cluster& c, const std::string& job) {
  Kept k;
  for (const Json* p : PodsOf(c, job)) {
    const Json& meta = p->at("metadata");
    const Json fin = meta.value("finalizers", Json::array());
    k.tracked += std::find(fin.begin(), fin.end(), Json(kJobTrackingFinalizer)) != fin.end();
    k.owned += meta.contains("ownerReferences");
  }
  return k;
}

// Applies mutations as the daemon does, each then replayed from its command tape into `replica`
// (what a restart does with the journal); the same rules (record format) on both.
struct Journaled {
  Cluster live{"0000abcd"}, replica{"0000abcd"};
  std::vector<Mutation> history;
  int format = Journal::kFormatVersion;
  int most_made = 0, most_gone = 0;  // the most pods one mutation made / took away (any Job)
  int most_untracked = 0;            // the most pods one mutation took the tracking finalizer off

  static bool Tracked(const Json& pod) {
    const Json fin = pod.at("metadata").value("finalizers", Json::array());
    return std::find(fin.begin(), fin.end(), Json(kJobTrackingFinalizer)) != fin.end();
  }
  void Apply(const Mutation& m) {
    std::set<std::string> had, tracked;
    for (const Json* p : live.store().List("Pod", "default")) {
      if (!p->at("metadata").contains("deletionTimestamp"))
        had.insert(p->at("metadata").value("name", ""));
      if (Tracked(*p)) tracked.insert(p->at("metadata").value("name", ""));
    }
    live.SetRecordFormat(format);
    Ok(live, m);
    int made = 0, gone = 0;
    std::set<std::string> now, still;
    for (const Json* p : live.store().List("Pod", "default")) {
      const std::string name = p->at("metadata").value("name", "");
      if (!had.count(name) && !p->at("metadata").contains("deletionTimestamp")) ++made;
      if (!p->at("metadata").contains("deletionTimestamp")) now.insert(name);
      if (Tracked(*p)) still.insert(name);
    }
    for (const auto& name : had) gone += !now.count(name);
    int untracked = 0;
    for (const auto& name : tracked) untracked += !still.count(name);
    most_made = std::max(most_made, made);
    most_gone = std::max(most_gone, gone);
    most_untracked = std::max(most_untracked, untracked);
    auto tape = CommandTape::Decode(live.TakeTape());
    ASSERT_TRUE(tape.ok()) << tape.message();
    replica.SetRecordFormat(format);
    const Status s = replica.Replay(Mutation::Decode(m.Encode()).value(), tape.value());
    ASSERT_TRUE(s.ok()) << s.message() << " replaying " << m.Encode();
    history.push_back(m);
  }
  // The replay of the records (their tapes) gave the same cluster.
  void ExpectReplicaMatches() const {
    EXPECT_EQ(fixtures::JobsAndPods(replica), fixtures::JobsAndPods(live));
    EXPECT_EQ(replica.decision_digest(), live.decision_digest());
  }
  // Namespace default, the big node, and Job `name` of `pods` pods, all made (they run 1h).
  void MakeRunningJob(const std::string& name, int pods) {
    Apply(Create(kT0, Namespace("default")));
    Apply(Create(kT0, BigNode()));
    Apply(Create(kT0 + 1, JobOf(name, {{"parallelism", pods}, {"completions", pods}})));
    AdvanceWhileDue(kT0 + 1);
  }
  // The clock's advances while something is due by `t` (at most `limit` of them): how many.
  int AdvanceWhileDue(Millis t, int limit = 1000) {
    int n = 0;
    while (n < limit) {
      const auto due = live.NextDue();
      if (!due || *due > t) break;
      Apply(Advance(std::max(*due, t)));
      ++n;
    }
    return n;
  }
};

TEST(JobSyncLimit, A2000PodJobIsMadeASyncsWorthAtOnceAndTheRestByTheClock) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  j.Apply(Create(kT0 + 1, JobOf("wide", {{"parallelism", 2000}, {"completions", 2000}})));
  // The create made the first 200 (kPerSync) and counts them; the Job is due again at once.
  EXPECT_EQ(CountPods(j.live, "wide").active, kPerSync);
  EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), kPerSync);
  EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 1));
  // The clock's advances (records of their own) make the rest, 200 each.
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 1), AdvancesFor(2000 - kPerSync));
  EXPECT_EQ(CountPods(j.live, "wide").active, 2000);
  EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), 2000);
  EXPECT_EQ(JobStatus(j.live, "wide").value("ready", 0), 2000);
  EXPECT_EQ(j.most_made, kPerSync);
  EXPECT_GT(j.live.NextDue().value_or(0), kT0 + 1);  // nothing more to do now

  // A suspend deletes a sync's worth too: the others count as active until their turn.
  Json suspended = *j.live.store().Get("Job", "default", "wide");
  suspended["spec"]["suspend"] = true;
  j.Apply(Update(kT0 + 2, suspended));
  EXPECT_EQ(CountPods(j.live, "wide").active, 2000 - kPerSync);
  EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), 2000 - kPerSync);
  EXPECT_EQ(JobCondition(j.live, "wide", "Suspended"), "True/JobSuspended");
  j.AdvanceWhileDue(kT0 + 2);  // (Job syncs, and the deleted pods' exits)
  EXPECT_EQ(CountPods(j.live, "wide").active, 0);
  EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), 0);
  EXPECT_EQ(j.most_gone, kPerSync);

  // Resumed: a sync's worth at once, the rest by the clock; then they run to completion.
  Json resumed = *j.live.store().Get("Job", "default", "wide");
  resumed["spec"]["suspend"] = false;
  j.Apply(Update(kT0 + 3, resumed));
  EXPECT_EQ(CountPods(j.live, "wide").active, kPerSync);
  EXPECT_EQ(JobCondition(j.live, "wide", "Suspended"), "False/JobResumed");
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 3), AdvancesFor(2000 - kPerSync));
  EXPECT_EQ(CountPods(j.live, "wide").active, 2000);
  j.AdvanceWhileDue(kT0 + 3 + 3600 * 1000 + 1000);
  EXPECT_EQ(JobCondition(j.live, "wide", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(JobStatus(j.live, "wide").value("succeeded", 0), 2000);
  EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), 0);
  EXPECT_EQ(j.most_made, kPerSync);

  // The replay of the records (their tapes) gave the same cluster.
  j.ExpectReplicaMatches();
}

// A Job that fails with 1,200 running pods (its activeDeadlineSeconds) counts them as failed and
// deletes them a sync's worth at a time: the sync that fails it 200 (their tracking finalizers
// off, added to status.failed, deleted), the clock's advances the rest, 200 each; Failed once
// none is left. Found by measuring: at 10,000 running pods the advance that failed a Job took
// 536-654 ms, every finalizer taken off in it (journal format 11). Format 10 records replay as
// their release made them: all 1,200 counted in the sync that failed the Job (which deleted 500).
TEST(JobSyncLimit, AFailedJobCountsAndDeletesItsPodsASyncsWorthAtATimeThenFails) {
  for (int format : {Journal::kFormatVersion, 10}) {
    SCOPED_TRACE(format);
    Journaled j;
    j.format = format;
    const int per = PerSync(format);
    j.Apply(Create(kT0, Namespace("default")));
    j.Apply(Create(kT0, BigNode()));
    j.Apply(Create(kT0 + 1, JobOf("late", {{"parallelism", 1200},
                                           {"completions", 1200},
                                           {"activeDeadlineSeconds", 10}})));
    EXPECT_EQ(j.AdvanceWhileDue(kT0 + 1), AdvancesFor(1200 - per));
    ASSERT_EQ(CountPods(j.live, "late").active, 1200);
    j.Apply(Advance(kT0 + 11000));  // the deadline: a sync's worth deleted
    EXPECT_EQ(JobCondition(j.live, "late", "FailureTarget"), "True/DeadlineExceeded");
    EXPECT_EQ(JobCondition(j.live, "late", "Failed"), "");
    EXPECT_EQ(CountPods(j.live, "late").active, 1200 - per);
    const int counted = format == 10 ? 1200 : per;
    EXPECT_EQ(JobStatus(j.live, "late").value("failed", 0), counted);
    EXPECT_EQ(KeptBy(j.live, "late").tracked, 1200 - counted);
    EXPECT_EQ(JobStatus(j.live, "late").value("active", 0), 1200 - per);
    EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 11000));  // the rest, at once
    // 200 deleted an advance, and one more: the last of them exit, the Job is Failed.
    EXPECT_EQ(j.AdvanceWhileDue(kT0 + 11000), AdvancesFor(1200 - per) + 1);
    EXPECT_EQ(CountPods(j.live, "late").active, 0);
    EXPECT_EQ(JobCondition(j.live, "late", "Failed"), "True/DeadlineExceeded");
    EXPECT_EQ(JobStatus(j.live, "late").value("failed", 0), 1200);
    EXPECT_EQ(KeptBy(j.live, "late").tracked, 0);
    EXPECT_EQ(j.most_gone, per);
    EXPECT_EQ(j.most_untracked, counted);
    j.ExpectReplicaMatches();
  }
}

// Jobs failing with pods that are not deleted in the sync (terminating: a user deleted them, and
// under podReplacementPolicy Failed they stay unfinished until they exit) count them within the
// advance's budget, as makes and deletes are: a finalizer taken off without a delete costs 1.
// Found by review: each of three such Jobs' turns took 200 off in one advance.
TEST(JobSyncLimit, AnAdvanceCountsAtMostItsBudgetAcrossJobs) {
  Cluster c{"0000abcd"};
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, BigNode()));
  for (const char* n : {"a", "b", "c"}) {
    Json job = JobOf(n, {{"parallelism", 600},
                         {"completions", 600},
                         {"activeDeadlineSeconds", 10},
                         {"podReplacementPolicy", "Failed"}});
    job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/shutdown-time"] = "10m";
    job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 600;
    Ok(c, Create(kT0 + 1, job));
  }
  for (int i = 0; i < 20 && c.NextDue() <= kT0 + 1; ++i) Ok(c, Advance(kT0 + 1));
  const auto tracked = [&] {
    int n = 0;
    for (const char* job : {"a", "b", "c"}) n += KeptBy(c, job).tracked;
    return n;
  };
  ASSERT_EQ(tracked(), 1800);
  for (const char* n : {"a", "b", "c"}) {  // a user deletes every pod: terminating for 10 min
    std::vector<std::string> names;
    for (const Json* p : PodsOf(c, n)) names.push_back(p->at("metadata").value("name", ""));
    for (const auto& name : names)  // (without Ok's checks: 1,800 of them)
      ASSERT_TRUE(c.Apply(fixtures::Delete(kT0 + 2, "Pod", "default", name)).ok());
  }
  Ok(c, Advance(kT0 + 11000));  // three FailureTargets: each sync counts 200 of its 600
  for (const char* n : {"a", "b", "c"})
    EXPECT_EQ(JobCondition(c, n, "FailureTarget"), "True/DeadlineExceeded");
  ASSERT_EQ(tracked(), 1800 - 3 * kPerSync);
  int advances = 0;
  for (int before = tracked(); before > 0 && advances < 20; before = tracked()) {
    Ok(c, Advance(kT0 + 11000 + ++advances));
    EXPECT_LE(before - tracked(), kPerAdvance);
  }
  EXPECT_EQ(advances, AdvancesFor(1800 - 3 * kPerSync));
  for (const char* n : {"a", "b", "c"}) EXPECT_EQ(JobStatus(c, n).value("failed", 0), 600);
}

// A Job deleted Foreground while it counts its pods as failed (FailureTarget) goes on counting
// them: the collector deletes them and leaves the finalizers to the Job's syncs, so every pod is
// in status.failed until the Job goes (as kube's controller counts a deleted Job's pods once its
// FailureTarget is set). Found by review: the collector took the finalizers off uncounted.
TEST(JobSyncLimit, AFailingJobDeletedForegroundMidCountCountsEveryPod) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  j.Apply(Create(kT0 + 1, JobOf("late", {{"parallelism", 2000},
                                         {"completions", 2000},
                                         {"activeDeadlineSeconds", 10}})));
  j.AdvanceWhileDue(kT0 + 1);
  j.Apply(Advance(kT0 + 11000));  // FailureTarget; a sync's worth counted
  ASSERT_EQ(JobStatus(j.live, "late").value("failed", 0), kPerSync);
  Mutation fg = fixtures::Delete(kT0 + 11000, "Job", "default", "late");
  fg.propagation = "Foreground";
  // The DELETE's collector deletes 100 running pods (2 each of its 200: failed at once, being
  // deleted), and the Job's sync counts 200 more.
  j.Apply(fg);
  EXPECT_EQ(JobStatus(j.live, "late").value("failed", 0), kPerSync + kPerSync / 2 + kPerSync);
  for (Millis t = kT0 + 11001; j.live.store().Get("Job", "default", "late") && t < kT0 + 11200;
       ++t) {
    const Json* job = j.live.store().Get("Job", "default", "late");
    EXPECT_EQ(job->at("status").value("failed", 0) + KeptBy(j.live, "late").tracked, 2000);
    const int before = KeptBy(j.live, "late").tracked;
    j.Apply(Advance(t));
    EXPECT_LE(before - KeptBy(j.live, "late").tracked, kPerAdvance);  // (shared with the collector)
  }
  EXPECT_EQ(j.live.store().Get("Job", "default", "late"), nullptr);
  EXPECT_TRUE(PodsOf(j.live, "late").empty());
  j.ExpectReplicaMatches();
}

// A Job deleted Foreground, then Orphan while its pods are collected: the Job goes, and the
// collection walks its pods again by the new policy, releasing the ones still running instead of
// deleting them (journal format 11; format 10 kept deleting them all). Found by review.
TEST(JobSyncLimit, AForegroundDeleteFollowedByAnOrphanDeleteReleasesTheRest) {
  for (const int format : {Journal::kFormatVersion, 10}) {
    SCOPED_TRACE(format);
    Journaled j;
    j.format = format;
    j.MakeRunningJob("big", 2000);
    Mutation fg = fixtures::Delete(kT0 + 2, "Job", "default", "big");
    fg.propagation = "Foreground";
    j.Apply(fg);
    j.Apply(Advance(kT0 + 3));
    const int running = CountPods(j.live, "big").active;
    ASSERT_LT(running, 2000);
    Mutation orphan = fixtures::Delete(kT0 + 4, "Job", "default", "big");
    orphan.propagation = "Orphan";
    j.Apply(orphan);
    EXPECT_EQ(j.live.store().Get("Job", "default", "big"), nullptr);
    j.AdvanceWhileDue(kT0 + 4);
    EXPECT_EQ(CountPods(j.live, "big").active, format == 10 ? 0 : running);
    EXPECT_EQ(KeptBy(j.live, "big").owned, 0);
    EXPECT_EQ(KeptBy(j.live, "big").tracked, 0);
    j.ExpectReplicaMatches();
  }
}

// A Job that met its successPolicy, deleted Foreground while it still has pods running, counts
// none of them as failed: the collector takes their finalizers off as it deletes them, as before
// (only a failing Job's count is its own). Found by review: they were counted as failures.
TEST(JobSyncLimit, ASucceedingJobDeletedForegroundCountsNoFailure) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  j.Apply(Create(kT0 + 1,
                 JobOf("first", {{"completionMode", "Indexed"},
                                 {"completions", 1200},
                                 {"parallelism", 1},
                                 {"successPolicy", {{"rules", {{{"succeededIndexes", "0"}}}}}}})));
  Json wider = *j.live.store().Get("Job", "default", "first");
  wider["spec"]["parallelism"] = 1200;
  j.Apply(Update(kT0 + 2, wider));
  j.AdvanceWhileDue(kT0 + 2);
  const Millis met = kT0 + 1 + 3600 * 1000;
  j.Apply(Advance(met));
  ASSERT_EQ(JobCondition(j.live, "first", "SuccessCriteriaMet"), "True/SuccessPolicy");
  Mutation fg = fixtures::Delete(met, "Job", "default", "first");
  fg.propagation = "Foreground";
  j.Apply(fg);
  for (Millis t = met + 1; j.live.store().Get("Job", "default", "first") && t < met + 100; ++t) {
    EXPECT_EQ(JobStatus(j.live, "first").value("failed", 0), 0);
    j.Apply(Advance(t));
  }
  EXPECT_EQ(j.live.store().Get("Job", "default", "first"), nullptr);
  EXPECT_TRUE(PodsOf(j.live, "first").empty());
  j.ExpectReplicaMatches();
}

// A Job that meets its successPolicy with 1,199 pods running counts them (takes their tracking
// finalizers off) and deletes them a sync's worth at a time, then Complete (journal format 11;
// format 10: every finalizer off in the sync that met the policy).
TEST(JobSyncLimit, AJobThatSucceedsWithPodsRunningCountsThemASyncsWorthAtATime) {
  for (int format : {Journal::kFormatVersion, 10}) {
    SCOPED_TRACE(format);
    Journaled j;
    j.format = format;
    const int per = PerSync(format);
    j.Apply(Create(kT0, Namespace("default")));
    j.Apply(Create(kT0, BigNode()));
    j.Apply(Create(
        kT0 + 1, JobOf("first", {{"completionMode", "Indexed"},
                                 {"completions", 1200},
                                 {"parallelism", 1},
                                 {"successPolicy", {{"rules", {{{"succeededIndexes", "0"}}}}}}})));
    Json wider = *j.live.store().Get("Job", "default", "first");  // index 0 runs first
    wider["spec"]["parallelism"] = 1200;
    j.Apply(Update(kT0 + 2, wider));
    j.AdvanceWhileDue(kT0 + 2);
    ASSERT_EQ(CountPods(j.live, "first").active, 1200);
    j.Apply(Advance(kT0 + 1 + 3600 * 1000));  // index 0 succeeds: the policy is met
    EXPECT_EQ(JobCondition(j.live, "first", "SuccessCriteriaMet"), "True/SuccessPolicy");
    EXPECT_EQ(JobCondition(j.live, "first", "Complete"), "");
    EXPECT_EQ(CountPods(j.live, "first").active, 1199 - per);
    const int left = format == 10 ? 0 : 1199 - per;
    EXPECT_EQ(KeptBy(j.live, "first").tracked, left);
    j.AdvanceWhileDue(kT0 + 1 + 3600 * 1000);
    EXPECT_EQ(CountPods(j.live, "first").active, 0);
    EXPECT_EQ(KeptBy(j.live, "first").tracked, 0);
    EXPECT_EQ(JobCondition(j.live, "first", "Complete"), "True/SuccessPolicy");
    EXPECT_EQ(JobStatus(j.live, "first").value("succeeded", 0), 1);
    EXPECT_EQ(JobStatus(j.live, "first").value("failed", 0), 0);
    EXPECT_EQ(j.most_untracked, format == 10 ? 1200 : 1 + per);
    j.ExpectReplicaMatches();
  }
}

// An Indexed Job gets its lowest indexes first, a sync's worth at a time; parallelism lowered
// deletes the surplus a sync's worth at a time.
TEST(JobSyncLimit, IndexedPodsAreMadeLowestFirstAndASurplusDeletedASyncsWorthAtATime) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  j.Apply(Create(
      kT0 + 1,
      JobOf("ix", {{"parallelism", 1100}, {"completions", 3000}, {"completionMode", "Indexed"}})));
  std::set<int64_t> indexes;
  for (const Json* p : PodsOf(j.live, "ix"))
    indexes.insert(std::stoll(p->at("metadata").at("annotations").value(kJobCompletionIndex, "")));
  ASSERT_EQ(indexes.size(), static_cast<size_t>(kPerSync));
  EXPECT_EQ(*indexes.begin(), 0);
  EXPECT_EQ(*indexes.rbegin(), kPerSync - 1);
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 1), AdvancesFor(1100 - kPerSync));
  EXPECT_EQ(CountPods(j.live, "ix").active, 1100);
  Json lowered = *j.live.store().Get("Job", "default", "ix");
  lowered["spec"]["parallelism"] = 50;
  j.Apply(Update(kT0 + 2, lowered));
  EXPECT_EQ(CountPods(j.live, "ix").active, 1100 - kPerSync);
  EXPECT_EQ(JobStatus(j.live, "ix").value("active", 0), 1100 - kPerSync);
  j.AdvanceWhileDue(kT0 + 2);  // (Job syncs, and the deleted pods' exits)
  EXPECT_EQ(CountPods(j.live, "ix").active, 50);
  EXPECT_EQ(JobStatus(j.live, "ix").value("active", 0), 50);
  EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));
}

// An Indexed Job with more indexes to run than a sync makes, whose failed indexes all back off
// (backoffLimitPerIndex), waits for their back-off: no sync at once that makes nothing.
TEST(JobSyncLimit, IndexesThatAllBackOffAreWaitedForNotSyncedAtOnce) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  Json failing = JobOf("flaky",
                       {{"parallelism", 600},
                        {"completions", 600},
                        {"completionMode", "Indexed"},
                        {"backoffLimitPerIndex", 2}},
                       "1s");
  failing["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] = "1";
  j.Apply(Create(kT0 + 1, failing));
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 1), AdvancesFor(600 - kPerSync));
  ASSERT_EQ(CountPods(j.live, "flaky").active, 600);
  // Every pod fails at 1 s; each index's replacement waits 10 s.
  EXPECT_LT(j.AdvanceWhileDue(kT0 + 9000, 50), 50);
  EXPECT_EQ(CountPods(j.live, "flaky").active, 0);
  EXPECT_GT(j.live.NextDue().value_or(0), kT0 + 9000);
  j.AdvanceWhileDue(kT0 + 12000, 50);
  EXPECT_EQ(CountPods(j.live, "flaky").active, 600);  // the replacements, a sync's worth at a time
  EXPECT_EQ(j.most_made, kPerSync);
  EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));
}

// A refused create (LimitRanger) still backs off as before (kube's API back-off, 1 s doubling):
// a Job with more pods to make than a sync makes is not due again at once.
TEST(JobSyncLimit, ARefusedCreateBacksOffRatherThanRetryingAtOnce) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  j.Apply(Create(kT0,
                 Json{{"apiVersion", "v1"},
                      {"kind", "LimitRange"},
                      {"metadata", {{"name", "floor"}, {"namespace", "default"}}},
                      {"spec", {{"limits", {{{"type", "Container"}, {"min", {{"cpu", "1"}}}}}}}}}));
  j.Apply(Create(kT0 + 1, JobOf("refused", {{"parallelism", 2000}, {"completions", 2000}})));
  EXPECT_EQ(PodsOf(j.live, "refused").size(), 0u);
  EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 1 + 1000));
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 1 + 1000), 1);
  EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 1 + 1000 + 2000));
  j.Apply(fixtures::Delete(kT0 + 1500 + 1000, "LimitRange", "default", "floor"));
  EXPECT_EQ(CountPods(j.live, "refused").active, 0);  // the retry is the clock's (format 9)
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 3001), AdvancesFor(2000));  // then 200 an advance
  EXPECT_EQ(CountPods(j.live, "refused").active, 2000);
}

// Records of journal formats 1-7 made every pod of a sync in one record: they replay so, and a
// replay by format 8's rules would not fit their commands.
TEST(JobSyncLimit, Format7RecordsMakeEveryPodInOneSyncAndReplaySo) {
  Journaled j;
  j.format = 7;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  const Mutation create = Create(kT0 + 1, JobOf("old", {{"parallelism", 1200}}));
  j.Apply(create);
  EXPECT_EQ(CountPods(j.live, "old").active, 1200);
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 1), 0);
  EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));

  // The create's record (its commands) replayed by format 8's rules: 1,200 pods on the tape, 500
  // made by the replay.
  Cluster mismatch("0000abcd");
  mismatch.SetRecordFormat(7);
  Ok(mismatch, j.history[0]);
  Ok(mismatch, j.history[1]);
  mismatch.SetRecordFormat(8);
  Cluster recorder("0000abcd");
  recorder.SetRecordFormat(7);
  Ok(recorder, j.history[0]);
  Ok(recorder, j.history[1]);
  ASSERT_TRUE(recorder.Apply(create).ok());
  auto tape = CommandTape::Decode(recorder.TakeTape());
  ASSERT_TRUE(tape.ok());
  EXPECT_FALSE(mismatch.Replay(create, tape.value()).ok());
}

// A Job being filled is the clock's (journal format 9): another tenant's pod create, or a pod of
// the Job deleted, makes none of its pods (format 8 made the next 500 inside whichever mutation
// came first); the clock's next advance makes them.
TEST(JobSyncLimit, AnotherTenantsCreateDuringAFillMakesNoneOfTheJobsPods) {
  for (const int format : {8, Journal::kFormatVersion}) {
    SCOPED_TRACE("format " + std::to_string(format));
    Journaled j;
    j.format = format;
    j.Apply(Create(kT0, Namespace("default")));
    j.Apply(Create(kT0, Namespace("other")));
    j.Apply(Create(kT0, BigNode()));
    j.Apply(Create(kT0 + 1, JobOf("wide", {{"parallelism", 2000}, {"completions", 2000}})));
    const int per = PerSync(format);
    ASSERT_EQ(CountPods(j.live, "wide").active, per);
    j.Apply(Create(kT0 + 2, fixtures::PodIn("other", "p1", 0)));
    if (format == 8) {  // (the other tenant's create made the next 500, as that release did)
      EXPECT_EQ(CountPods(j.live, "wide").active, 1000);
      EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));
      continue;
    }
    EXPECT_EQ(CountPods(j.live, "wide").active, per);
    EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), per);
    EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 1));  // still due: the clock's
    j.Apply(Advance(kT0 + 3));
    EXPECT_EQ(CountPods(j.live, "wide").active, per + kPerAdvance);
    EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), per + kPerAdvance);
    // A pod of the Job relabelled (a write of its own namespace, not of the Job's object): the
    // Job waits for the clock too.
    Json relabelled = *PodsOf(j.live, "wide").front();
    relabelled["metadata"]["labels"]["tier"] = "batch";
    j.Apply(Update(kT0 + 4, relabelled));
    j.Apply(Create(kT0 + 4, fixtures::PodIn("other", "p2", 0)));
    EXPECT_EQ(CountPods(j.live, "wide").active, per + kPerAdvance);
    EXPECT_EQ(j.AdvanceWhileDue(kT0 + 5), AdvancesFor(2000 - per - kPerAdvance));
    EXPECT_EQ(CountPods(j.live, "wide").active, 2000);
    EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), 2000);
    EXPECT_EQ(j.most_made, per);
    j.ExpectReplicaMatches();
  }
}

// The filling Job's own update or delete takes effect in that request: lowered below what it has
// made, the surplus is deleted and the fill ends; suspended, its pods are deleted; deleted
// (Background or Foreground), no more are made and its pods are deleted (a collection's worth at
// once, the rest by the clock).
TEST(JobSyncLimit, AFillingJobsOwnUpdateOrDeleteTakesEffectInThatRequest) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, Namespace("other")));
  j.Apply(Create(kT0, BigNode()));
  const Json spec = {{"parallelism", 2000}, {"completions", 3000}};
  for (const char* name : {"lowered", "raised", "suspended", "gone", "fg"})
    j.Apply(Create(kT0 + 1, JobOf(name, spec)));
  for (const char* name : {"lowered", "raised", "suspended", "gone", "fg"})
    ASSERT_EQ(CountPods(j.live, name).active, kPerSync) << name;

  Json lowered = *j.live.store().Get("Job", "default", "lowered");
  lowered["spec"]["parallelism"] = 50;
  j.Apply(Update(kT0 + 2, lowered));
  EXPECT_EQ(CountPods(j.live, "lowered").active, 50);
  EXPECT_EQ(CountPods(j.live, "lowered").deleting, kPerSync - 50);
  EXPECT_EQ(JobStatus(j.live, "lowered").value("active", 0), 50);
  // Raised while it fills: its own update makes the next sync's worth (the rest is still the
  // clock's).
  Json raised = *j.live.store().Get("Job", "default", "raised");
  raised["spec"]["parallelism"] = 2500;
  j.Apply(Update(kT0 + 2, raised));
  EXPECT_EQ(CountPods(j.live, "raised").active, 2 * kPerSync);
  Json suspended = *j.live.store().Get("Job", "default", "suspended");
  suspended["spec"]["suspend"] = true;
  j.Apply(Update(kT0 + 2, suspended));
  EXPECT_EQ(CountPods(j.live, "suspended").active, 0);
  EXPECT_EQ(JobCondition(j.live, "suspended", "Suspended"), "True/JobSuspended");
  j.Apply(fixtures::Delete(kT0 + 2, "Job", "default", "gone"));
  EXPECT_EQ(j.live.store().Get("Job", "default", "gone"), nullptr);
  // (its running pods deleted, 100 of them: each counts twice, its exit follows; the clock's
  // advances the rest: journal format 10)
  EXPECT_EQ(CountPods(j.live, "gone").active, kPerSync - kPerSync / 2);
  Mutation fg = fixtures::Delete(kT0 + 2, "Job", "default", "fg");
  fg.propagation = "Foreground";
  j.Apply(fg);
  EXPECT_EQ(CountPods(j.live, "fg").active, kPerSync - kPerSync / 2);
  // Another tenant's create: nothing of theirs moves (the raised Job is the clock's).
  j.Apply(Create(kT0 + 3, fixtures::PodIn("other", "p1", 0)));
  EXPECT_EQ(CountPods(j.live, "raised").active, 2 * kPerSync);
  j.AdvanceWhileDue(kT0 + 3);
  EXPECT_EQ(CountPods(j.live, "lowered").active, 50);
  EXPECT_EQ(CountPods(j.live, "raised").active, 2500);
  EXPECT_EQ(CountPods(j.live, "suspended").active, 0);
  EXPECT_EQ(CountPods(j.live, "gone").active, 0);
  EXPECT_EQ(CountPods(j.live, "fg").active, 0);
  EXPECT_EQ(j.live.store().Get("Job", "default", "fg"), nullptr);  // gone with its last pod
  EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));
}

// The snapshot's bytes with its header's "jobsMore" taken out, as a release before journal format
// 9 wrote it.
std::string WithoutJobsMore(const std::string& snapshot) {
  const size_t magic = snapshot.find('\n') + 1;
  const size_t nl = snapshot.find('\n', magic);
  const size_t len = std::stoull(snapshot.substr(magic, nl - magic));
  Json h = Json::parse(snapshot.substr(nl + 1, len));
  EXPECT_TRUE(h.contains("jobsMore"));
  h.erase("jobsMore");
  const std::string header = h.dump();
  return snapshot.substr(0, magic) + std::to_string(header.size()) + "\n" + header +
         snapshot.substr(nl + 1 + len);
}

// A restart in the middle of a fill (snapshot, restore): the fill goes on at the clock's next
// advance, not at another tenant's write, as without the restart: each later mutation gives the
// engine the same commands (the journal's records would replay), and the cluster ends the same.
// A snapshot of a release before format 9 (no "jobsMore") is read as its Jobs' plans say.
TEST(JobSyncLimit, ARestoreMidFillResumesAtTheNextAdvanceNotAtAnotherTenantsWrite) {
  for (const bool old_header : {false, true}) {
    SCOPED_TRACE(old_header ? "without jobsMore" : "with jobsMore");
    Cluster live("0000abcd");
    Ok(live, Create(kT0, Namespace("default")));
    Ok(live, Create(kT0, Namespace("other")));
    Ok(live, Create(kT0, BigNode()));
    Ok(live, Create(kT0 + 1, JobOf("wide", {{"parallelism", 1800}, {"completions", 1800}})));
    Ok(live, Create(kT0 + 1, JobOf("small", {{"parallelism", 3}, {"completions", 3}}, "10s")));
    Ok(live, Advance(kT0 + 2));
    ASSERT_EQ(CountPods(live, "wide").active, kPerSync + kPerAdvance);
    const std::string snap = live.Snapshot();
    Cluster restored("0000abcd");
    ASSERT_TRUE(restored.Restore(old_header ? WithoutJobsMore(snap) : snap).ok());
    EXPECT_EQ(live.NextDue(), std::optional<Millis>(kT0 + 2));  // (due at once: the clock's)
    EXPECT_EQ(restored.NextDue(), live.NextDue());
    auto both = [&](const Mutation& m) {
      Ok(live, m);
      Ok(restored, m);
      EXPECT_EQ(restored.TakeTape(), live.TakeTape()) << m.Encode();
    };
    both(Create(kT0 + 3, fixtures::PodIn("other", "p1", 0)));
    EXPECT_EQ(CountPods(restored, "wide").active,
              kPerSync + kPerAdvance);  // not at another's write
    both(Advance(kT0 + 4));
    EXPECT_EQ(CountPods(restored, "wide").active, kPerSync + 2 * kPerAdvance);
    both(Create(kT0 + 4, fixtures::PodIn("other", "p2", 0)));
    EXPECT_EQ(CountPods(restored, "wide").active, kPerSync + 2 * kPerAdvance);
    for (Millis t = kT0 + 5; t < kT0 + 5 + 20000; t += 1000) both(Advance(t));
    EXPECT_EQ(CountPods(restored, "wide").active, 1800);
    EXPECT_EQ(JobCondition(restored, "small", "Complete"), "True/CompletionsReached");
    EXPECT_EQ(fixtures::JobsAndPods(restored), fixtures::JobsAndPods(live));
    EXPECT_EQ(restored.decision_digest(), live.decision_digest());
    EXPECT_EQ(restored.Snapshot(), live.Snapshot());
  }
}

// A Job whose fill was refused (a LimitRange came between its syncs) waits for its retry after a
// restore as without it (kube's API back-off), not synced at once because it has more to make.
TEST(JobSyncLimit, ARestoredRefusedFillWaitsForItsRetry) {
  for (const bool old_header : {false, true}) {
    SCOPED_TRACE(old_header ? "without jobsMore" : "with jobsMore");
    Cluster live("0000abcd");
    Ok(live, Create(kT0, Namespace("default")));
    Ok(live, Create(kT0, BigNode()));
    Ok(live, Create(kT0 + 1, JobOf("wide", {{"parallelism", 1800}, {"completions", 1800}})));
    ASSERT_EQ(CountPods(live, "wide").active, kPerSync);
    Ok(live,
       Create(kT0 + 1,
              Json{{"apiVersion", "v1"},
                   {"kind", "LimitRange"},
                   {"metadata", {{"name", "floor"}, {"namespace", "default"}}},
                   {"spec", {{"limits", {{{"type", "Container"}, {"min", {{"cpu", "1"}}}}}}}}}));
    Ok(live, Advance(kT0 + 2));  // refused: retried at +1 s
    ASSERT_EQ(CountPods(live, "wide").active, kPerSync);
    ASSERT_EQ(live.NextDue(), std::optional<Millis>(kT0 + 2 + 1000));
    const std::string snap = live.Snapshot();
    Cluster restored("0000abcd");
    ASSERT_TRUE(restored.Restore(old_header ? WithoutJobsMore(snap) : snap).ok());
    EXPECT_EQ(restored.NextDue(), std::optional<Millis>(kT0 + 2 + 1000));
    auto both = [&](const Mutation& m) {
      Ok(live, m);
      Ok(restored, m);
      EXPECT_EQ(restored.TakeTape(), live.TakeTape()) << m.Encode();
    };
    both(Advance(kT0 + 2 + 1000));  // refused again: +2 s
    both(fixtures::Delete(kT0 + 3500, "LimitRange", "default", "floor"));
    EXPECT_EQ(CountPods(restored, "wide").active, kPerSync);  // the retry: the clock's
    both(Advance(kT0 + 3500));
    EXPECT_EQ(CountPods(restored, "wide").active, kPerSync + kPerAdvance);
    for (Millis t = kT0 + 3500; t < kT0 + 3510; ++t) both(Advance(t));
    EXPECT_EQ(CountPods(restored, "wide").active, 1800);
    EXPECT_EQ(fixtures::JobsAndPods(restored), fixtures::JobsAndPods(live));
    EXPECT_EQ(restored.Snapshot(), live.Snapshot());
  }
}

// kube's limits of Indexed Jobs (pkg/apis/batch/validation), 422 with its words.
TEST(JobSyncLimit, IndexedJobLimitsAreRefusedWithKubernetesWords) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("default")));
  auto errors = [&](const std::string& name, const Json& spec) {
    const MutationResult r = c.Apply(Create(kT0, JobOf(name, spec)));
    std::multimap<std::string, std::string> out;
    if (!r.ok()) {
      EXPECT_EQ(r.error->reason, ApiError::Reason::kInvalid);  // 422
      for (const auto& d : r.error->diagnostics.items) out.emplace(d.field_path, d.message);
    }
    return out;
  };
  using Errors = std::multimap<std::string, std::string>;
  const Json indexed = {{"completionMode", "Indexed"}, {"completions", 200000}};
  auto with = [&](Json extra) {
    Json s = indexed;
    s.update(extra);
    return s;
  };
  EXPECT_EQ(errors("a", with({{"parallelism", 100001}})),
            (Errors{{"spec.parallelism",
                     "Invalid value: 100001: must be less than or equal to 100000 when completion "
                     "mode is Indexed"}}));
  EXPECT_TRUE(errors("a", with({{"parallelism", 100000}})).empty());
  EXPECT_EQ(errors("b", with({{"backoffLimitPerIndex", 1}, {"parallelism", 10001}})),
            (Errors{{"spec.maxFailedIndexes",
                     "Required value: must be specified when completions is above 100000"},
                    {"spec.parallelism",
                     "Invalid value: 10001: must be less than or equal to 10000 when completions "
                     "are above 100000 and used with backoff limit per index"}}));
  EXPECT_EQ(
      errors("b",
             with({{"backoffLimitPerIndex", 1}, {"parallelism", 1}, {"maxFailedIndexes", 10001}})),
      (Errors{{"spec.maxFailedIndexes",
               "Invalid value: 10001: must be less than or equal to 10000 when completions are "
               "above 100000 and used with backoff limit per index"}}));
  EXPECT_EQ(errors("b", {{"completionMode", "Indexed"},
                         {"completions", 100000},
                         {"parallelism", 1},
                         {"backoffLimitPerIndex", 1},
                         {"maxFailedIndexes", 100001}}),
            (Errors{{"spec.maxFailedIndexes",
                     "Invalid value: 100001: must be less than or equal to completions"},
                    {"spec.maxFailedIndexes",
                     "Invalid value: 100001: must be less than or equal to 100000"}}));
  EXPECT_EQ(errors("b", {{"completionMode", "Indexed"},
                         {"completions", 200000},
                         {"parallelism", 1},
                         {"backoffLimitPerIndex", 1},
                         {"maxFailedIndexes", 100001}}),
            (Errors{{"spec.maxFailedIndexes",
                     "Invalid value: 100001: must be less than or equal to 100000"},
                    {"spec.maxFailedIndexes",
                     "Invalid value: 100001: must be less than or equal to 10000 when completions "
                     "are above 100000 and used with backoff limit per index"}}));
  EXPECT_TRUE(errors("c", with({{"backoffLimitPerIndex", 1},
                                {"parallelism", 10000},
                                {"maxFailedIndexes", 10000}}))
                  .empty());
  // The last index's hostname (NAME-(completions-1)) must be a DNS label.
  EXPECT_EQ(errors("x.y", {{"completionMode", "Indexed"}, {"completions", 3}}),
            (Errors{{"metadata.name",
                     "Invalid value: \"x.y\": will not able to create pod with invalid DNS label: "
                     "x.y-2"}}));
  const std::string long_name(60, 'n');
  EXPECT_EQ(errors(long_name, {{"completionMode", "Indexed"}, {"completions", 1000}}),
            (Errors{{"metadata.name", "Invalid value: \"" + long_name +
                                          "\": will not able to create pod with invalid DNS "
                                          "label: " +
                                          long_name + "-999"}}));
  EXPECT_TRUE(errors(long_name, {{"completionMode", "Indexed"}, {"completions", 100}}).empty());
  EXPECT_TRUE(errors("x.z", {{"parallelism", 3}}).empty());  // (NonIndexed: no hostname)
}

// The daemon: the Job's create answers with its first 200 pods, and the clock makes the rest
// without any request, each 200 an advance record of its own; a restart replays them to the same
// pods.
TEST(JobSyncLimit, TheDaemonsClockMakesTheRestAndARestartReplaysIt) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arbiter-job-sync-limit-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::atomic<Millis> now{kT0};
  DaemonOptions o{dir.string(), [&now] { return now.load(); }, 0, true};
  Json saved;
  {
    auto d = Daemon::Open(o);
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(Create(kT0, BigNode())).ok());
    const int64_t before = d.value()->journal().last_seq();
    const MutationResult r = d.value()->Mutate(
        Create(kT0, JobOf("wide", {{"parallelism", 1600}, {"completions", 1600}})));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.object.at("status").value("active", 0), kPerSync);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int pods = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      pods = d.value()->Read([](const Cluster& c) { return CountPods(c, "wide").active; });
      if (pods == 1600) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(pods, 1600);
    EXPECT_EQ(d.value()->journal().last_seq() - before,
              1 + AdvancesFor(1600 - kPerSync));  // create, advances
    saved = d.value()->Read([](const Cluster& c) { return c.store().Save(); });
    d.value()->Stop();
  }
  auto d = Daemon::Open(o);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return c.store().Save(); }), saved);
  d.value()->Stop();
  std::filesystem::remove_all(dir);
}

// A floor no Job pod below meets (LimitRanger refuses their creates, 403).
Json Floor(const std::string& ns) {
  return {{"apiVersion", "v1"},
          {"kind", "LimitRange"},
          {"metadata", {{"name", "floor"}, {"namespace", ns}}},
          {"spec", {{"limits", {{{"type", "Container"}, {"min", {{"cpu", "1"}}}}}}}}};
}

// Refused Jobs are retried when their back-off is due, by the clock's advances (journal format
// 9), not at another tenant's create: under format 8 each of its creates tried every refused Job
// again (a full create each, its FailedCreate event written), and made their pods once a place
// freed, inside that request.
TEST(JobSyncLimit, RefusedJobsAreRetriedByTheClockNotByAnotherTenantsCreate) {
  for (const int format : {8, Journal::kFormatVersion}) {
    SCOPED_TRACE("format " + std::to_string(format));
    Journaled j;
    j.format = format;
    j.Apply(Create(kT0, Namespace("default")));
    j.Apply(Create(kT0, Namespace("other")));
    j.Apply(Create(kT0, BigNode()));
    j.Apply(Create(kT0, Floor("default")));
    constexpr int kJobs = 60;
    for (int i = 0; i < kJobs; ++i)
      j.Apply(Create(kT0 + 1, JobOf("r" + std::to_string(100 + i), {{"parallelism", 1}})));
    auto made = [&] {
      int n = 0;
      for (int i = 0; i < kJobs; ++i) n += CountPods(j.live, "r" + std::to_string(100 + i)).active;
      return n;
    };
    ASSERT_EQ(made(), 0);
    // Another tenant's create, their retries due or not: format 8 retried each (its event written
    // again), format 9 none.
    const uint64_t rv = j.live.store().resource_version();
    j.Apply(Create(kT0 + 2, fixtures::PodIn("other", "p1", 0)));
    const uint64_t writes = j.live.store().resource_version() - rv;
    if (format == 8) {
      EXPECT_GT(writes, 20u);  // (FailedCreate events: combined, counted)
    } else {
      EXPECT_LT(writes, 5u);
    }
    j.Apply(fixtures::Delete(kT0 + 3, "LimitRange", "default", "floor"));  // a place frees
    j.Apply(Create(kT0 + 5000, fixtures::PodIn("other", "p2", 0)));        // retries due now
    if (format == 8) {
      EXPECT_EQ(made(), kJobs);  // (made in those requests, as that release did)
      continue;
    }
    EXPECT_EQ(made(), 0);
    EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 1 + 1000));  // (their retries)
    j.Apply(Advance(kT0 + 5000));  // the clock's: each retried, its pod made
    EXPECT_EQ(made(), kJobs);
    EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));
  }
}

// Ten Jobs filling at once: each advance makes at most kMaxPodCreateDeletePerAdvance pods across
// them all (format 8's made 500 of each: 5,000 in one record), in turns (the Job waiting longest
// first), and all are made.
TEST(JobSyncLimit, FillingJobsShareTheAdvancesBudgetInTurnsAndAllFinish) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  Json big2 = BigNode();
  big2["metadata"]["name"] = "big2";
  j.Apply(Create(kT0, big2));
  constexpr int kJobs = 10, kEach = 1000;
  auto name = [](int i) { return "f" + std::to_string(i); };
  for (int i = 0; i < kJobs; ++i)
    j.Apply(Create(kT0 + 1, JobOf(name(i), {{"parallelism", kEach}, {"completions", kEach}})));
  for (int i = 0; i < kJobs; ++i) ASSERT_EQ(CountPods(j.live, name(i)).active, kPerSync);
  j.most_made = 0;
  int advances = 0;
  for (Millis t = kT0 + 2; advances < 100; ++t) {
    const auto due = j.live.NextDue();
    if (!due || *due > t) break;
    j.Apply(Advance(t));
    ++advances;
    int least = kEach, most = 0;
    for (int i = 0; i < kJobs; ++i) {
      const int n = CountPods(j.live, name(i)).active;
      least = std::min(least, n);
      most = std::max(most, n);
    }
    EXPECT_LE(most - least, kPerAdvance) << "after advance " << advances;  // (in turns)
  }
  EXPECT_EQ(j.most_made, kPerAdvance);
  EXPECT_EQ(advances, AdvancesFor(kJobs * (kEach - kPerSync)));
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(CountPods(j.live, name(i)).active, kEach) << name(i);
    EXPECT_EQ(JobStatus(j.live, name(i)).value("active", 0), kEach) << name(i);
  }
  j.ExpectReplicaMatches();
}

// A write of a filling Job that leaves its spec alone (a label, an annotation) makes none of its
// pods (a tenant patching its own Job in a loop would else make 200 a request, faster than the
// clock); one that changes its spec (metadata.generation) syncs it at once.
TEST(JobSyncLimit, ALabelPatchOfAFillingJobMakesNoPodsASpecChangeDoes) {
  Journaled j;
  j.Apply(Create(kT0, Namespace("default")));
  j.Apply(Create(kT0, BigNode()));
  j.Apply(Create(kT0 + 1, JobOf("wide", {{"parallelism", 3000}, {"completions", 3000}})));
  ASSERT_EQ(CountPods(j.live, "wide").active, kPerSync);
  for (int i = 0; i < 5; ++i) {
    Json job = *j.live.store().Get("Job", "default", "wide");
    job["metadata"]["labels"]["round"] = std::to_string(i);
    job["metadata"]["annotations"]["note"] = std::to_string(i);
    j.Apply(Update(kT0 + 2 + i, job));
    EXPECT_EQ(j.live.store().Get("Job", "default", "wide")->at("metadata").value("generation", 0),
              1);
  }
  EXPECT_EQ(CountPods(j.live, "wide").active, kPerSync);
  EXPECT_EQ(JobStatus(j.live, "wide").value("active", 0), kPerSync);
  Json job = *j.live.store().Get("Job", "default", "wide");
  job["spec"]["parallelism"] = 2500;
  j.Apply(Update(kT0 + 10, job));
  EXPECT_EQ(CountPods(j.live, "wide").active, 2 * kPerSync);
  EXPECT_EQ(j.AdvanceWhileDue(kT0 + 10), AdvancesFor(2500 - 2 * kPerSync));
  EXPECT_EQ(CountPods(j.live, "wide").active, 2500);
  EXPECT_EQ(fixtures::JobsAndPods(j.replica), fixtures::JobsAndPods(j.live));
}

// A restart in the middle of the clock's turns (snapshot, restore) goes on with the Job whose turn
// is next, as without the restart: the same commands at each later mutation, the same snapshot at
// the end.
TEST(JobSyncLimit, ARestoreMidTurnsGoesOnAsWithoutIt) {
  Cluster live("0000abcd");
  Ok(live, Create(kT0, Namespace("default")));
  Ok(live, Create(kT0, BigNode()));
  for (const char* name : {"a", "b", "c", "d"})
    Ok(live, Create(kT0 + 1, JobOf(name, {{"parallelism", 1500}, {"completions", 1500}})));
  Ok(live, Advance(kT0 + 2));  // a's turn
  Ok(live, Advance(kT0 + 3));  // b's
  ASSERT_EQ(CountPods(live, "a").active, kPerSync + kPerAdvance);
  ASSERT_EQ(CountPods(live, "b").active, kPerSync + kPerAdvance);
  ASSERT_EQ(CountPods(live, "c").active, kPerSync);
  const std::string snap = live.Snapshot();
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(snap).ok());
  EXPECT_EQ(restored.NextDue(), live.NextDue());
  auto both = [&](const Mutation& m) {
    Ok(live, m);
    Ok(restored, m);
    EXPECT_EQ(restored.TakeTape(), live.TakeTape()) << m.Encode();
  };
  both(Advance(kT0 + 4));  // c's turn, not a's
  EXPECT_EQ(CountPods(restored, "c").active, kPerSync + kPerAdvance);
  EXPECT_EQ(CountPods(restored, "a").active, kPerSync + kPerAdvance);
  for (Millis t = kT0 + 5; t < kT0 + 40; ++t) both(Advance(t));
  for (const char* name : {"a", "b", "c", "d"}) EXPECT_EQ(CountPods(restored, name).active, 1500);
  EXPECT_EQ(fixtures::JobsAndPods(restored), fixtures::JobsAndPods(live));
  EXPECT_EQ(restored.Snapshot(), live.Snapshot());
}

// A delete of a Job of 2,000 running pods acts on a sync's worth of them in its own record (200,
// journal format 11; format 10: 500), as kube's garbage collector works through a big Job's pods
// after the DELETE has answered; the clock's advances act on the rest, within 200 each (a running
// pod deleted counts twice: its exit is the next advance's work; journal format 10). Found by
// review: a tenant's DELETE of a Job of 100,000 pods held the daemon 13.6 s in one request.
// Format 9 records replay as their release made them: every pod in the delete's record.
TEST(JobSyncLimit, ADeletedJobsPodsGoASyncsWorthAtOnceAndTheRestByTheClock) {
  for (const char* policy : {"Background", "Orphan", "Foreground"})
    for (const int format : {Journal::kFormatVersion, 10, 9}) {
      SCOPED_TRACE(std::string(policy) + ", format " + std::to_string(format));
      Journaled j;
      j.format = format;
      j.MakeRunningJob("big", 2000);
      ASSERT_EQ(CountPods(j.live, "big").active, 2000);
      j.most_gone = 0;
      Mutation del = fixtures::Delete(kT0 + 2, "Job", "default", "big");
      del.propagation = policy;
      j.Apply(del);
      const bool orphan = std::string(policy) == "Orphan";
      const bool foreground = std::string(policy) == "Foreground";
      // The Job goes at once, or (Foreground) stays, being deleted, until its last pod is gone.
      const Json* job = j.live.store().Get("Job", "default", "big");
      EXPECT_EQ(job != nullptr, foreground);
      EXPECT_TRUE(!job || job->at("metadata").contains("deletionTimestamp"));
      // Acted on by the delete: a sync's worth (200; format 10: 500) released, or half as many
      // running pods deleted (each costs 2: its exit follows at the next advance).
      const int per = PerSync(format);
      const int now = format == 9 ? 2000 : orphan ? per : per / 2;
      EXPECT_EQ(CountPods(j.live, "big").active, orphan ? 2000 : 2000 - now);
      EXPECT_EQ(KeptBy(j.live, "big").owned, orphan ? 2000 - now : 2000);
      EXPECT_EQ(KeptBy(j.live, "big").tracked, 2000 - now);
      if (format != 9) {
        EXPECT_EQ(j.live.NextDue(), std::optional<Millis>(kT0 + 2));  // the rest, at once
      }
      // The clock's advances act on the rest (and the deleted pods, which exit at SIGTERM, go).
      j.AdvanceWhileDue(kT0 + 2);
      EXPECT_EQ(PodsOf(j.live, "big").size(), orphan ? 2000u : 0u);
      EXPECT_EQ(CountPods(j.live, "big").active, orphan ? 2000 : 0);
      EXPECT_EQ(KeptBy(j.live, "big").owned, 0);
      EXPECT_EQ(KeptBy(j.live, "big").tracked, 0);
      EXPECT_EQ(j.live.store().Get("Job", "default", "big"), nullptr);
      EXPECT_EQ(j.most_gone, orphan ? 0 : now);  // (format 9: all at once)
      j.ExpectReplicaMatches();
    }
}

// A Job being deleted (Foreground) deleted again goes on where its collection was, the second
// delete's own turn on the next 100 running pods, not over again from its first pod (a tenant
// deleting it in a loop would else keep the collector on the pods it has done).
TEST(JobSyncLimit, AJobDeletedAgainGoesOnWhereItsCollectionWas) {
  Journaled j;
  j.MakeRunningJob("big", 2000);
  Mutation fg = fixtures::Delete(kT0 + 2, "Job", "default", "big");
  fg.propagation = "Foreground";
  j.Apply(fg);
  j.Apply(Advance(kT0 + 3));
  ASSERT_EQ(CountPods(j.live, "big").active,
            2000 - kPerSync / 2 - kPerAdvance / 2);  // (2 a running pod)
  fg.time = kT0 + 4;
  j.Apply(fg);
  EXPECT_EQ(CountPods(j.live, "big").active, 2000 - kPerSync - kPerAdvance / 2);
  int advances = 0;
  for (Millis t = kT0 + 5; CountPods(j.live, "big").active > 0 && advances < 100; ++t, ++advances)
    j.Apply(Advance(t));
  EXPECT_EQ(advances, AdvancesFor(2 * (2000 - kPerSync - kPerAdvance / 2)));
  j.ExpectReplicaMatches();
}

// A finished Job whose ttlSecondsAfterFinished ran out is deleted (Foreground) by whichever
// mutation finds it due, here another tenant's pod create: that create deletes none of its pods,
// the clock's advances all of them, 200 each (format 9: every one in that create's record).
TEST(JobSyncLimit, AnExpiredJobsPodsAreAllTheClocks) {
  for (const int format : {Journal::kFormatVersion, 9}) {
    SCOPED_TRACE("format " + std::to_string(format));
    Journaled j;
    j.format = format;
    j.Apply(Create(kT0, Namespace("default")));
    j.Apply(Create(kT0, Namespace("other")));
    j.Apply(Create(kT0, BigNode()));
    j.Apply(
        Create(kT0 + 1,
               JobOf("done",
                     {{"parallelism", 1200}, {"completions", 1200}, {"ttlSecondsAfterFinished", 5}},
                     "10s")));
    j.AdvanceWhileDue(kT0 + 1);
    j.AdvanceWhileDue(kT0 + 1 + 10000);
    ASSERT_EQ(JobCondition(j.live, "done", "Complete"), "True/CompletionsReached");
    ASSERT_EQ(PodsOf(j.live, "done").size(), 1200u);
    j.most_gone = 0;
    j.Apply(Create(kT0 + 1 + 20000, fixtures::PodIn("other", "p1", 0)));
    const Json* job = j.live.store().Get("Job", "default", "done");
    EXPECT_TRUE(format == 9 || (job && job->at("metadata").contains("deletionTimestamp")));
    EXPECT_EQ(PodsOf(j.live, "done").size(), format == 9 ? 0u : 1200u);
    j.AdvanceWhileDue(kT0 + 1 + 20000);
    EXPECT_EQ(PodsOf(j.live, "done").size(), 0u);
    EXPECT_EQ(j.live.store().Get("Job", "default", "done"), nullptr);
    EXPECT_EQ(j.most_gone, format == 9 ? 1200 : kPerAdvance);
    j.ExpectReplicaMatches();
  }
}

// The garbage collector's turns share an advance's budget with the fills, the longest waiting
// first: a Job of 2,000 deleted while another of 2,000 fills, no advance makes and deletes more
// than 200 pods in all (a deleted running pod counts twice), and both finish.
TEST(JobSyncLimit, ACollectionAndAFillShareTheAdvancesBudget) {
  Journaled j;
  j.MakeRunningJob("old", 2000);
  j.Apply(Create(kT0 + 2, JobOf("new", {{"parallelism", 2000}, {"completions", 2000}})));
  Mutation del = fixtures::Delete(kT0 + 2, "Job", "default", "old");
  del.propagation = "Background";
  j.Apply(del);
  ASSERT_EQ(CountPods(j.live, "new").active, kPerSync);
  ASSERT_EQ(CountPods(j.live, "old").active, 2000 - kPerSync / 2);  // (2 a running pod deleted)
  // The most pods one advance made and deleted in all; the advances that did (the last is the
  // exits of the last pods deleted).
  int most = 0, advances = 0;
  for (Millis t = kT0 + 3; t < kT0 + 40 && j.live.NextDue().value_or(t + 1) <= t; ++t) {
    const int made = CountPods(j.live, "new").active, left = CountPods(j.live, "old").active;
    j.Apply(Advance(t));
    const int moved =
        CountPods(j.live, "new").active - made + left - CountPods(j.live, "old").active;
    advances += moved > 0;
    most = std::max(most, moved);
  }
  EXPECT_EQ(CountPods(j.live, "old").active, 0);
  EXPECT_EQ(CountPods(j.live, "new").active, 2000);
  EXPECT_EQ(advances,
            AdvancesFor((2000 - kPerSync) + 2 * (2000 - kPerSync / 2)));  // (made, deleted)
  EXPECT_EQ(most, kPerAdvance);
  j.ExpectReplicaMatches();
}

// A restart in the middle of a collection (snapshot, restore) goes on as without it: the same
// commands at each advance and the same cluster; a snapshot keeps where the walk was.
TEST(JobSyncLimit, ARestoreMidCollectionGoesOnAsWithoutIt) {
  Cluster live("0000abcd");
  Ok(live, Create(kT0, Namespace("default")));
  Ok(live, Create(kT0, BigNode()));
  for (const char* name : {"a", "b"})
    Ok(live, Create(kT0 + 1, JobOf(name, {{"parallelism", 1500}, {"completions", 1500}})));
  for (Millis t = kT0 + 2; t < kT0 + 20; ++t) Ok(live, Advance(t));
  ASSERT_EQ(CountPods(live, "b").active, 1500);
  Mutation del = fixtures::Delete(kT0 + 20, "Job", "default", "a");
  del.propagation = "Orphan";
  Ok(live, del);
  Mutation fg = fixtures::Delete(kT0 + 21, "Job", "default", "b");
  fg.propagation = "Foreground";
  Ok(live, fg);
  Ok(live, Advance(kT0 + 22));  // a's turn
  ASSERT_EQ(KeptBy(live, "a").owned, 1500 - kPerSync - kPerAdvance);
  ASSERT_EQ(CountPods(live, "b").active,
            1500 - kPerSync / 2);  // (a running pod deleted counts twice)
  const std::string snap = live.Snapshot();
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(snap).ok());
  EXPECT_EQ(restored.NextDue(), live.NextDue());
  auto both = [&](const Mutation& m) {
    Ok(live, m);
    Ok(restored, m);
    EXPECT_EQ(restored.TakeTape(), live.TakeTape()) << m.Encode();
  };
  both(Advance(kT0 + 23));  // b's turn, not a's
  EXPECT_EQ(CountPods(restored, "b").active, 1500 - kPerSync / 2 - kPerAdvance / 2);
  EXPECT_EQ(KeptBy(restored, "a").owned, 1500 - kPerSync - kPerAdvance);
  for (Millis t = kT0 + 24; t < kT0 + 60; ++t) both(Advance(t));
  EXPECT_EQ(KeptBy(restored, "a").owned, 0);
  EXPECT_EQ(CountPods(restored, "b").active, 0);
  EXPECT_EQ(fixtures::JobsAndPods(restored), fixtures::JobsAndPods(live));
  EXPECT_EQ(restored.Snapshot(), live.Snapshot());
}

}  // namespace job_sync_limit_test
}  // namespace arbiter::server

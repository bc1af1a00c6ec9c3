// The facts the engine answers so that adapters never re-derive or parse them (issue 25): quota
// usage as the quota book charges it (resource_quota_usages, elastic_quota_usages,
// namespace_usages), a pending workload's backfill reservation as fields of its status, and why a
// pod can never be admitted under a ResourceQuota (NeverAdmissible) in Kubernetes' words alone.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/fair_share.h"
#include "core/engine/gpu_objects.h"
#include "core/engine/quota_book.h"
#include "core/engine/sink.h"

namespace arbiter::engine {
namespace quota_usage_test {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;
constexpr Millis kHour = 60 * kMin;

// A pod asking `gpus` GPUs and `cpu_milli` of CPU (0: none, BestEffort when it asks no GPU either
// of cpu or memory), with spec.activeDeadlineSeconds when `deadline` > 0.
Pod MakePod(const std::string& name, const std::string& ns, int gpus, int64_t cpu_milli,
            Millis deadline = 0) {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = ns;
  Container c;
  c.name = "c";
  if (cpu_milli > 0) c.requests.Set("cpu", cpu_milli);
  if (gpus > 0) {
    c.requests.Set("nvidia.com/gpu", gpus * 1000);
    c.limits.Set("nvidia.com/gpu", gpus * 1000);
  }
  p.containers.push_back(c);
  if (deadline > 0) p.active_deadline = deadline;
  return p;
}

ResourceQuota ScopedQuota(const std::string& name, const std::string& ns,
                          const std::string& scope) {
  ResourceQuota q;
  q.meta.name = name;
  q.meta.namespace_ = ns;
  q.hard.push_back({"pods", QuotaTrack::kCount, "pods", 10});
  q.hard.push_back({"count/pods", QuotaTrack::kCount, "pods", 10});
  q.hard.push_back({"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 8000});
  q.scope_selector.push_back({scope, SelectorOperator::kExists, {}});
  return q;
}

ElasticQuota Elastic(const std::string& ns, int64_t min_gpus, int64_t max_gpus) {
  ElasticQuota q;
  q.meta.name = "eq";
  q.meta.namespace_ = ns;
  q.cohort = "pool";
  q.min.Set("nvidia.com/gpu", min_gpus * 1000);
  q.max = ResourceList{};
  q.max->Set("nvidia.com/gpu", max_gpus * 1000);
  return q;
}

class QuotaUsage : public ::testing::Test {
 protected:
  QuotaUsage() : e_(Options()) {}
  static EngineOptions Options() {
    EngineOptions o;
    o.check_invariants = true;
    return o;
  }
  void Do(Millis t, CommandOp op) {
    const Status s = e_.Apply(Command{t, std::move(op)});
    ASSERT_TRUE(s.ok()) << s.message();
  }
  WorkloadId Submit(Millis t, Pod p) {
    const WorkloadId id = e_.next_workload_id();
    Do(t, SubmitPod{std::move(p), false, {}});
    return id;
  }
  const ResourceQuotaUsage::Item* Item(const std::string& quota, const std::string& key) const {
    static std::vector<ResourceQuotaUsage> usages;
    usages = e_.resource_quota_usages();
    for (const auto& u : usages)
      if (u.name == quota)
        for (const auto& item : u.items)
          if (item.key == key) return &item;
    return nullptr;
  }
  int64_t Used(const std::string& quota, const std::string& key) const {
    const auto* item = Item(quota, key);
    EXPECT_NE(item, nullptr) << quota << " " << key;
    return item ? item->used : -1;
  }
  Engine e_;
};

// BestEffort / NotBestEffort and Terminating / NotTerminating scopes select the pods the engine
// charges: a quota's usage counts only those (the daemon's ResourceQuota status once ignored them).
TEST_F(QuotaUsage, ResourceQuotaUsageAppliesEveryScope) {
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  for (const char* scope : {"BestEffort", "NotBestEffort", "Terminating", "NotTerminating"})
    Do(0, UpsertResourceQuota{ScopedQuota(scope, "ml", scope)});
  Submit(0, MakePod("best-effort", "ml", 0, 0));
  Submit(0, MakePod("burstable", "ml", 2, 500));
  Submit(0, MakePod("deadline", "ml", 1, 500, kHour));
  Do(0, Tick{});
  EXPECT_EQ(Used("BestEffort", "pods"), 1);
  EXPECT_EQ(Used("BestEffort", "requests.nvidia.com/gpu"), 0);
  EXPECT_EQ(Used("NotBestEffort", "pods"), 2);
  EXPECT_EQ(Used("NotBestEffort", "requests.nvidia.com/gpu"), 3000);
  EXPECT_EQ(Used("Terminating", "pods"), 1);
  EXPECT_EQ(Used("Terminating", "requests.nvidia.com/gpu"), 1000);
  EXPECT_EQ(Used("NotTerminating", "pods"), 2);
  EXPECT_EQ(Used("NotTerminating", "requests.nvidia.com/gpu"), 2000);
  const auto* hard = Item("NotTerminating", "requests.nvidia.com/gpu");
  ASSERT_NE(hard, nullptr);
  EXPECT_EQ(hard->hard, 8000);
  EXPECT_EQ(hard->resource, "nvidia.com/gpu");
  EXPECT_EQ(Item("Terminating", "count/pods")->resource, "pods");
}

// The workloads holding a node, asked by name (the virtual kubelet's per-node metrics): in bind
// order, the same statuses Workloads gives; nothing for a node that is not there or is gone.
TEST_F(QuotaUsage, WorkloadsOnANodeAreTheOnesHoldingIt) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  Do(0, UpsertNode{GpuNode("n2", 4), 1});
  Submit(0, MakePod("a", "ml", 4, 500));
  Do(0, Tick{});
  Submit(1, MakePod("b", "ml", 2, 500));
  Submit(1, MakePod("c", "ml", 8, 500));  // fits nowhere: pending
  Do(1, Tick{});
  std::map<std::string, std::string> where;
  for (const auto& s : e_.Workloads()) where[s.name] = s.node;
  ASSERT_EQ(where["c"], "");
  ASSERT_NE(where["a"], where["b"]);
  for (const char* node : {"n1", "n2"}) {
    const auto on = e_.WorkloadsOn(node);
    ASSERT_EQ(on.size(), 1u) << node;
    EXPECT_EQ(on[0].node, node);
    EXPECT_EQ(where[on[0].name], node);
    EXPECT_EQ(on[0].requests.Get("nvidia.com/gpu"), on[0].name == "a" ? 4000 : 2000);
  }
  EXPECT_TRUE(e_.WorkloadsOn("n3").empty());
  Do(2, RemoveNode{where["b"]});
  EXPECT_TRUE(e_.WorkloadsOn(where["b"]).empty());
}

// count/pods keeps a finished pod until it is deleted; pods does not.
TEST_F(QuotaUsage, CountPodsUsageKeepsTerminalPodsUntilDeleted) {
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  Do(0, UpsertResourceQuota{ScopedQuota("q", "ml", "NotBestEffort")});
  const WorkloadId a = Submit(0, MakePod("a", "ml", 1, 500));
  Do(0, Tick{});
  Do(kMin, PodFinished{a, 0});
  Do(kMin, Tick{});
  EXPECT_EQ(Used("q", "pods"), 0);
  EXPECT_EQ(Used("q", "count/pods"), 1);
  EXPECT_EQ(Used("q", "requests.nvidia.com/gpu"), 0);
  Do(2 * kMin, DeletePod{a, {}});
  EXPECT_EQ(Used("q", "count/pods"), 0);
}

// What a namespace's running and terminating workloads request; queued ones are not charged.
TEST_F(QuotaUsage, NamespaceUsageCountsWorkloadsHoldingResources) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  Submit(0, MakePod("a", "ml", 3, 1000));
  Submit(0, MakePod("b", "ml", 3, 1000));  // does not fit: pending
  Submit(0, MakePod("c", "web", 1, 250));
  Do(0, Tick{});
  const auto usage = e_.namespace_usages();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage.at("ml").Get("nvidia.com/gpu"), 3000);
  EXPECT_EQ(usage.at("ml").Get("cpu"), 1000);
  EXPECT_EQ(usage.at("web").Get("nvidia.com/gpu"), 1000);
}

// A borrower's usage above its min is borrowed; the lender with idle min is credited with it; the
// fair share is the weighted dominant-resource share of what the cohort lends.
TEST_F(QuotaUsage, ElasticQuotaUsageBorrowedLentAndFairShare) {
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  Do(0, UpsertElasticQuota{Elastic("team-a", 4, 8)});
  Do(0, UpsertElasticQuota{Elastic("team-b", 4, 8)});
  Submit(0, MakePod("big", "team-b", 6, 100));
  Submit(0, MakePod("small", "team-a", 1, 100));
  Do(0, Tick{});
  const auto usages = e_.elastic_quota_usages();
  ASSERT_EQ(usages.size(), 2u);
  const ElasticQuotaUsage& a = usages[0];
  const ElasticQuotaUsage& b = usages[1];
  ASSERT_EQ(a.namespace_, "team-a");
  ASSERT_EQ(b.namespace_, "team-b");
  EXPECT_EQ(a.name, "eq");
  EXPECT_EQ(a.cohort, "pool");
  EXPECT_EQ(a.used.Get("nvidia.com/gpu"), 1000);
  EXPECT_FALSE(a.used.Has("cpu"));  // not tracked by the ElasticQuota
  EXPECT_EQ(b.used.Get("nvidia.com/gpu"), 6000);
  EXPECT_EQ(b.borrowed.Get("nvidia.com/gpu"), 2000);
  EXPECT_FALSE(a.borrowed.Has("nvidia.com/gpu"));
  EXPECT_EQ(a.lent.Get("nvidia.com/gpu"), 2000);
  EXPECT_FALSE(b.lent.Has("nvidia.com/gpu"));
  EXPECT_EQ(a.fair_share, 0);
  EXPECT_EQ(b.fair_share, kShareOne / 4);  // borrows 2 of the 8 the cohort lends
  EXPECT_EQ(a.min.Get("nvidia.com/gpu"), 4000);
  ASSERT_TRUE(b.max.has_value());
  EXPECT_EQ(b.max->Get("nvidia.com/gpu"), 8000);
}

// A namespace's own answers (what the daemon asks at each create, O(its quotas)) are its entries
// of the whole lists, `lent` aside; a namespace without quotas has none.
TEST_F(QuotaUsage, ANamespacesOwnUsageIsItsEntryOfTheWholeList) {
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  Do(0, UpsertElasticQuota{Elastic("team-a", 4, 8)});
  Do(0, UpsertElasticQuota{Elastic("team-b", 2, 8)});
  Do(0, UpsertResourceQuota{ScopedQuota("q1", "team-b", "NotBestEffort")});
  Do(0, UpsertResourceQuota{ScopedQuota("q0", "team-a", "NotTerminating")});
  Do(0, UpsertResourceQuota{ScopedQuota("q2", "team-b", "BestEffort")});
  Submit(0, MakePod("big", "team-b", 5, 100));
  Submit(0, MakePod("small", "team-a", 1, 100));
  Submit(0, MakePod("none", "team-c", 1, 100));
  Do(0, Tick{});
  int borrowing = 0;
  for (const std::string ns : {"team-a", "team-b"}) {
    std::vector<ResourceQuotaUsage> want;
    for (const auto& u : e_.resource_quota_usages())
      if (u.namespace_ == ns) want.push_back(u);
    EXPECT_EQ(e_.resource_quota_usages(ns), want) << ns;
    for (ElasticQuotaUsage u : e_.elastic_quota_usages()) {
      if (u.namespace_ != ns) continue;
      borrowing += !u.borrowed.empty();
      u.lent = {};
      EXPECT_EQ(e_.elastic_quota_usage_without_lent(ns), u) << ns;
    }
  }
  EXPECT_EQ(borrowing, 1);  // team-b borrows: its fair share is not 0
  EXPECT_EQ(e_.resource_quota_usages("team-b").size(), 2u);
  EXPECT_TRUE(e_.resource_quota_usages("team-c").empty());
  EXPECT_FALSE(e_.elastic_quota_usage_without_lent("team-c").has_value());
  // A quota changed in place keeps its place; one deleted leaves its namespace's list, and a new
  // one joins it last (the engine's invariants check the index after each).
  Do(0, UpsertResourceQuota{ScopedQuota("q1", "team-b", "NotTerminating")});
  Do(0, UpsertResourceQuota{ScopedQuota("q3", "team-a", "BestEffort")});
  Do(0, DeleteResourceQuota{{"team-b", "q1"}});
  Do(0, UpsertResourceQuota{ScopedQuota("q1", "team-b", "NotBestEffort")});
  auto names = [&](const std::string& ns) {
    std::vector<std::string> out;
    for (const auto& u : e_.resource_quota_usages(ns)) out.push_back(u.name);
    return out;
  };
  EXPECT_EQ(names("team-a"), (std::vector<std::string>{"q0", "q3"}));
  EXPECT_EQ(names("team-b"), (std::vector<std::string>{"q2", "q1"}));
}

// A blocked workload's backfill reservation is a field of its status, with the facts its message
// announces; a new message clears it; a snapshot keeps it.
TEST_F(QuotaUsage, BackfillReservationIsAStatusField) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  const WorkloadId running = Submit(0, MakePod("long", "ml", 4, 100, kHour));
  Do(0, Tick{});
  const WorkloadId big = Submit(kMin, MakePod("big", "ml", 4, 100));
  Do(kMin, Tick{});
  std::optional<WorkloadStatus> st = e_.Get(big);
  ASSERT_TRUE(st.has_value());
  ASSERT_EQ(st->phase, Phase::kPending);
  ASSERT_TRUE(st->reservation.has_value()) << st->message;
  EXPECT_EQ(st->reservation->nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(st->reservation->from, kHour);
  EXPECT_NE(st->message.find("; reserved on n1 from 1h"), std::string::npos) << st->message;
  EXPECT_FALSE(e_.Get(running)->reservation.has_value());

  auto restored = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  EXPECT_EQ((*restored)->Get(big)->reservation, st->reservation);
  EXPECT_EQ((*restored)->Snapshot(), e_.Snapshot());

  Do(2 * kMin, PodFinished{running, 0});  // the node frees early: `big` starts
  Do(2 * kMin, Tick{});
  st = e_.Get(big);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->phase, Phase::kRunning) << st->message;
  EXPECT_FALSE(st->reservation.has_value()) << st->message;
}

// A pod asking more than a ResourceQuota's hard limit: NeverAdmissible answers Kubernetes' words
// alone (a daemon's 403), while the workload Submit rejects keeps them with the note that waiting
// cannot help. Both come from the quota book's one answer, no text is cut off another.
TEST_F(QuotaUsage, NeverAdmissibleIsKubernetesWordsAndTheRejectionAddsWhy) {
  struct Finished : EventSink {
    void OnEvent(const Event&) override {}
    void OnFinished(const WorkloadStatus& st) override { statuses.push_back(st); }
    std::vector<WorkloadStatus> statuses;
  } finished;
  e_.SetSinks(&finished, nullptr);
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  ResourceQuota q;
  q.meta.name = "gpus";
  q.meta.namespace_ = "ml";
  q.hard.push_back({"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 2000});
  Do(0, UpsertResourceQuota{q});
  const std::string words =
      "exceeded quota: gpus, requested: requests.nvidia.com/gpu=4, used: "
      "requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=2";
  EXPECT_EQ(e_.NeverAdmissible(MakePod("huge", "ml", 4, 500)), words);
  EXPECT_EQ(e_.NeverAdmissible(MakePod("fits", "ml", 2, 500)), std::nullopt);
  const WorkloadId huge = Submit(0, MakePod("huge", "ml", 4, 500));
  e_.SetSinks(nullptr, nullptr);
  ASSERT_EQ(finished.statuses.size(), 1u);
  const WorkloadStatus& st = finished.statuses[0];
  EXPECT_EQ(st.id, huge);
  EXPECT_EQ(st.phase, Phase::kRejected);
  EXPECT_EQ(st.reason, "QuotaExceeded");
  EXPECT_EQ(st.message, words + std::string(QuotaBook::kNeverAdmitted));
}

// The quota book's cohort index (each ElasticQuota's members, kept by Reindex): a quota moved to
// another cohort in place no longer lends; a workload's own hold is not counted twice; `released`
// counts only inside the cohort.
Workload GpuWorkload(uint64_t id, const std::string& ns, int gpus) {
  Workload w;
  w.id = WorkloadId{id};
  w.namespace_ = ns;
  w.requests.Set("nvidia.com/gpu", gpus * 1000);
  return w;
}

TEST(QuotaBookCohort, AQuotaMovedToAnotherCohortNoLongerLends) {
  QuotaBook book;
  ASSERT_TRUE(book.SetElasticQuota(Elastic("a", 0, 8)).ok());
  ASSERT_TRUE(book.SetElasticQuota(Elastic("b", 4, 8)).ok());
  const Workload w = GpuWorkload(1, "a", 2);
  EXPECT_TRUE(book.CheckElastic(w).ok);
  EXPECT_TRUE(book.CheckElastic(w).borrowing);
  EXPECT_TRUE(book.ShortOf(w).empty());
  ElasticQuota moved = Elastic("b", 4, 8);
  moved.cohort = "other";
  ASSERT_TRUE(book.SetElasticQuota(moved).ok());
  const auto r = book.CheckElastic(w);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("cohort pool has no unused nvidia.com/gpu"), std::string::npos)
      << r.message;
  EXPECT_EQ(book.ShortOf(w), std::vector<std::string>{"nvidia.com/gpu"});
}

TEST(QuotaBookCohort, OwnHoldOnceAndReleasedOnlyInsideTheCohort) {
  QuotaBook book;
  ASSERT_TRUE(book.SetElasticQuota(Elastic("a", 2, 8)).ok());
  ASSERT_TRUE(book.SetElasticQuota(Elastic("b", 4, 8)).ok());
  ElasticQuota c = Elastic("c", 8, 8);
  c.cohort = "other";
  ASSERT_TRUE(book.SetElasticQuota(c).ok());
  const Workload mine = GpuWorkload(1, "a", 2);
  book.Reserve(mine);  // held for it while its victims exit: not counted twice
  EXPECT_TRUE(book.CheckElastic(mine).within_min);
  book.Unreserve(mine);
  const Workload in_b = GpuWorkload(2, "b", 4), in_c = GpuWorkload(3, "c", 8);
  book.Charge(in_b);
  book.Charge(in_c);
  const Workload big = GpuWorkload(4, "a", 4);  // borrows 2, and b lends nothing
  EXPECT_FALSE(book.CheckElastic(big).ok);
  EXPECT_FALSE(book.CheckElastic(big, {&in_c}).ok);  // c is in another cohort
  EXPECT_TRUE(book.CheckElastic(big, {&in_b}).ok);   // b's 4 GPUs gone: it lends 4
  EXPECT_TRUE(book.CheckElastic(big, {&in_b}).borrowing);
}

}  // namespace quota_usage_test
}  // namespace arbiter::engine

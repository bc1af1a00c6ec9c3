// Property test for backfill: a reservation is never delayed by a backfilled workload. On random
// pools where every workload has the same priority (nothing preempts, nothing overtakes) and
// runs no longer than its time limit (activeDeadlineSeconds), the workload at the head of the
// queue starts no later than the reservation it was given when it became the head, however many
// workloads behind it were backfilled meanwhile; and its reservation only moves earlier. With
// PoolPolicy scheduling.backfillDepth > 1 reservations stack on a node; the engine's invariant
// check (on here) then verifies at the end of every cycle that, at each reservation's start,
// what is expected to run on its nodes and the reservations active then fit — no backfilled
// workload delays any of them, not only the head's. With fractional GPUs some pods ask for part of
// one device (250-750 milli-GPU) under BestFit, FGD or Random placement: which device a
// backfilled pod takes then decides whether a whole-GPU reservation still fits at its start.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "core/engine/engine.h"
#include "core/engine/random_pool.h"

namespace arbiter {
namespace {

using testing_pools::Rng;

struct Starts : engine::EventSink {
  std::vector<engine::Event> scheduled;
  void OnEvent(const engine::Event& e) override {
    if (e.type == engine::EventType::kScheduled) scheduled.push_back(e);
  }
  bool WantsFinalStatus() const override { return false; }
};

std::optional<Millis> ReservedFrom(const std::string& message) {
  const std::string mark = " from ";
  const auto at = message.find("; reserved on ");
  if (at == std::string::npos) return std::nullopt;
  const auto from = message.find(mark, at);
  auto d = ParseDuration(message.substr(from + mark.size()));
  if (!d.ok()) return std::nullopt;
  return *d;
}

struct Counts {
  size_t promises = 0, backfilled = 0;
  size_t behind = 0;  // cycles where a workload behind the head held a reservation
};

// `fractional`: shared-GPU pods too, and the placement policy drawn per seed.
void RunBackfillProperty(int32_t depth, bool fractional, Counts* n) {
  size_t& promises = n->promises;
  size_t& backfilled = n->backfilled;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", backfillDepth " + std::to_string(depth) +
                 (fractional ? ", fractional GPUs" : ""));
    Rng r{seed};
    engine::EngineOptions eo;
    eo.check_invariants = true;
    if (fractional) {  // FGD's typical shapes: the ones drawn below
      for (int64_t milli : {250, 500, 750, 1000, 2000, 4000})
        eo.placement_profile.shapes.push_back(
            {placement::PodShape::FromRequests({{"cpu", 1000}, {"nvidia.com/gpu", milli}}), 1});
    }
    engine::Engine e(eo);
    Starts sink;
    e.SetSinks(&sink, nullptr);
    if (depth != 1 || fractional) {
      PoolPolicy policy;
      policy.meta.name = "default";
      policy.backfill_depth = depth;
      if (fractional)
        policy.placement = seed % 3 == 0   ? PlacementPolicyName::kBestFit
                           : seed % 3 == 1 ? PlacementPolicyName::kFGD
                                           : PlacementPolicyName::kRandom;
      ASSERT_TRUE(e.Apply(engine::At(0, engine::UpsertPoolPolicy{policy})).ok());
    }
    const int nodes = static_cast<int>(r.Uniform(1, 4));
    for (int i = 0; i < nodes; ++i) {
      Node n;
      n.meta.name = "gpu-" + std::to_string(i);
      n.capacity = {{"cpu", 64000},
                    {"memory", int64_t{256} << 30},
                    {"nvidia.com/gpu", r.Uniform(1, 2) * 4000}};
      n.allocatable = n.capacity;
      ASSERT_TRUE(e.Apply(engine::At(0, engine::UpsertNode{n, 0})).ok());
    }
    struct Arrival {
      Millis at;
      Pod pod;
      Millis duration;
    };
    std::vector<Arrival> arrivals;
    const int pods = static_cast<int>(r.Uniform(10, 50));
    for (int i = 0; i < pods; ++i) {
      Pod p;
      p.meta.name = "p" + std::to_string(100 + i);
      Container c;
      c.name = "c";
      c.requests = {{"cpu", 1000}, {"nvidia.com/gpu", r.Uniform(1, 4) * 1000}};
      if (fractional && r.Chance(50)) c.requests.Set("nvidia.com/gpu", r.Uniform(1, 3) * 250);
      p.containers.push_back(c);
      const Millis duration = r.Uniform(5, 180) * 60000;
      if (r.Chance(80))
        p.active_deadline = duration + r.Uniform(0, 60) * 60000;  // an over-estimate
      arrivals.push_back({r.Uniform(0, 240) * 60000, p, duration});
    }
    std::stable_sort(arrivals.begin(), arrivals.end(),
                     [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
    std::map<uint64_t, Millis> duration_of;  // workload id -> duration
    std::multimap<Millis, uint64_t> ends;    // completions to come
    std::map<uint64_t, Millis> promised;     // head -> reservation start when it became the head
    size_t next = 0, seen_starts = 0;
    for (int steps = 0; steps < 100000; ++steps) {
      Millis t = -1;
      if (next < arrivals.size()) t = arrivals[next].at;
      if (!ends.empty() && (t < 0 || ends.begin()->first < t)) t = ends.begin()->first;
      if (t < 0) break;
      while (!ends.empty() && ends.begin()->first == t) {
        ASSERT_TRUE(e.Apply(engine::At(t, engine::PodFinished{static_cast<engine::WorkloadId>(
                                                                  ends.begin()->second),
                                                              0}))
                        .ok());
        ends.erase(ends.begin());
      }
      for (; next < arrivals.size() && arrivals[next].at == t; ++next) {
        duration_of[engine::Value(e.next_workload_id())] = arrivals[next].duration;
        ASSERT_TRUE(e.Apply(engine::At(t, engine::SubmitPod{arrivals[next].pod, false, {}})).ok());
      }
      ASSERT_TRUE(e.Apply(engine::At(t, engine::Tick{})).ok());
      // The head of the queue (same priority: earliest submitted, then name).
      std::optional<engine::WorkloadStatus> head;
      for (const auto& w : e.Workloads())
        if (w.phase == engine::Phase::kPending &&
            (!head ||
             std::make_pair(w.submit_time, w.key) < std::make_pair(head->submit_time, head->key)))
          head = w;
      for (; seen_starts < sink.scheduled.size(); ++seen_starts) {
        const engine::Event& s = sink.scheduled[seen_starts];
        const uint64_t id = engine::Value(s.workload);
        ends.emplace(s.time + duration_of[id], id);
        if (auto p = promised.find(id); p != promised.end()) {
          EXPECT_LE(s.time, p->second) << "workload " << id << " was promised " << p->second;
          ++promises;
        } else if (head) {
          ++backfilled;  // started while an older workload waited
        }
      }
      if (head) {
        for (const auto& w : e.Workloads())
          if (w.phase == engine::Phase::kPending && w.id != head->id && ReservedFrom(w.message)) {
            ++n->behind;
            break;
          }
        if (auto from = ReservedFrom(head->message)) {
          const uint64_t id = engine::Value(head->id);
          auto [it, fresh] = promised.emplace(id, *from);
          if (!fresh) {
            EXPECT_LE(*from, it->second) << "the head's reservation moved later";
            it->second = std::min(it->second, *from);
          }
        }
      }
    }
  }
}

TEST(BackfillPropertyTest, AReservationIsNeverDelayedByABackfilledWorkload) {
  Counts n;
  RunBackfillProperty(1, false, &n);
  EXPECT_GT(n.promises, 100u);
  EXPECT_GT(n.backfilled, 100u);
}

// backfillDepth 3: several reservations per node, each kept by every workload backfilled.
TEST(BackfillPropertyTest, NoReservationIsDelayedByABackfilledWorkloadAtDepth3) {
  Counts n;
  RunBackfillProperty(3, false, &n);
  EXPECT_GT(n.promises, 100u);
  EXPECT_GT(n.backfilled, 50u);
  EXPECT_GT(n.behind, 100u);  // reservations behind the head's were in force
}

// Shared (fractional) GPUs: the device a backfilled pod takes is the one its placement policy
// chooses (Random: any it fits on); the reservation must still fit there at its start. The
// invariant check now covers nodes with shared GPUs too.
TEST(BackfillPropertyTest, AReservationIsNeverDelayedByABackfilledSharedGpuPod) {
  Counts n;
  RunBackfillProperty(1, true, &n);
  EXPECT_GT(n.promises, 100u);
  EXPECT_GT(n.backfilled, 100u);
}

TEST(BackfillPropertyTest, NoReservationIsDelayedByABackfilledSharedGpuPodAtDepth3) {
  Counts n;
  RunBackfillProperty(3, true, &n);
  EXPECT_GT(n.promises, 100u);
  EXPECT_GT(n.backfilled, 50u);
  EXPECT_GT(n.behind, 100u);
}

}  // namespace
}  // namespace arbiter

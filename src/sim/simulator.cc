#include "sim/simulator.h"

#include <algorithm>

namespace arbiter::sim {

NodeWindow NodeWindowOf(const Node& node, Millis end) {
  NodeWindow w;
  w.from = std::min(node.sim.add_time, end);
  w.to = node.sim.remove_time ? std::min(*node.sim.remove_time, end) : end;
  w.to = std::max(w.to, w.from);
  return w;
}

bool NodePresentAt(const Node& node, Millis t) {
  return node.sim.add_time <= t && (!node.sim.remove_time || t < *node.sim.remove_time);
}

Result<SimResult> RunSimulation(const ManifestSet& m, const SimOptions& options) {
  if (options.until && (*options.until < 0 || *options.until > kMaxHorizon))
    return Status::Error("--until must be between 0s and " + FormatDuration(kMaxHorizon));
  engine::EngineOptions eo;
  eo.seed = options.seed;
  eo.check_invariants = options.check_invariants;
  eo.placement = options.placement;
  auto created = engine::Engine::Create(m, eo);
  if (!created.ok()) return created.status();
  SimResult result;
  result.engine = std::move(created).value();
  engine::Engine& e = *result.engine;

  // Arrivals in time order; equal times keep manifest order.
  std::vector<const Pod*> arrivals;
  arrivals.reserve(m.pods.size());
  for (const auto& p : m.pods) arrivals.push_back(&p);
  e.Reserve(m.pods.size());
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const Pod* a, const Pod* b) { return a->sim.submit_time < b->sim.submit_time; });
  // Pool changes from the Nodes' arbiter.dev/add-time and remove-time: at one instant removals
  // come before additions (a workload that loses its node may start on one that joins), each
  // group by node name; all of them before the arrivals and the scheduling cycle at that instant.
  struct NodeChange {
    Millis time;
    bool add;
    const Node* node;
  };
  std::vector<NodeChange> changes;
  for (const auto& n : m.nodes) {
    if (n.sim.add_time > 0) changes.push_back({n.sim.add_time, true, &n});
    if (n.sim.remove_time) changes.push_back({*n.sim.remove_time, false, &n});
  }
  std::sort(changes.begin(), changes.end(), [](const NodeChange& a, const NodeChange& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.add != b.add) return !a.add;
    return a.node->meta.name < b.node->meta.name;
  });
  size_t next_change = 0;
  size_t next = 0;
  Millis now = 0;
  Millis last_progress = -1;
  Millis same_instant = -1;
  int64_t steps_at_instant = 0;
  while (true) {
    std::optional<Millis> t;
    if (next < arrivals.size()) t = arrivals[next]->sim.submit_time;
    if (auto timer = e.NextTimer()) t = t ? std::min(*t, *timer) : *timer;
    if (next_change < changes.size()) t = t ? std::min(*t, changes[next_change].time) : changes[next_change].time;
    if (!t) break;
    if (options.until && *t > *options.until) break;
    if (*t > kMaxHorizon)
      return Status::Error("virtual time would pass " + FormatDuration(kMaxHorizon) +
                           " (a submit-time or duration that large is almost certainly a mistake; "
                           "use --until to stop earlier)");
    now = std::max(now, *t);
    if (now == same_instant) {
      // Each step at one instant must change something (a victim exits, a workload binds); a
      // million of them means two decisions undo each other: a bug, reported instead of a hang.
      if (++steps_at_instant > 1000000)
        return Status::Error("the engine made no progress at virtual time " + FormatDuration(now) +
                             " after a million steps (livelock); please report this with the manifests");
    } else {
      same_instant = now;
      steps_at_instant = 0;
    }
    e.AdvanceTo(now);
    for (; next_change < changes.size() && changes[next_change].time <= now; ++next_change) {
      const NodeChange& c = changes[next_change];
      if (c.add) {
        e.AddNode(*c.node, now);
      } else if (Status s = e.RemoveNode(c.node->meta.name, now); !s.ok()) {
        return Status::Error("removing node " + c.node->meta.name + ": " + s.message());
      }
    }
    while (next < arrivals.size() && arrivals[next]->sim.submit_time <= now) e.Submit(*arrivals[next++], now);
    e.Schedule(now);
    if (options.progress && now / 3600000 != last_progress) {
      last_progress = now / 3600000;
      options.progress(now, next, arrivals.size());
    }
  }
  Millis end = options.until ? *options.until : now;
  end = std::max(end, now);
  e.Finish(end);
  result.end_time = end;
  return result;
}

}  // namespace arbiter::sim

#include "server/dashboard/views.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "core/duration.h"
#include "core/engine/fair_share.h"
#include "server/dashboard/quota_state.h"

namespace arbiter::server::dashboard {

namespace {

constexpr int32_t kMilliPerGpu = 1000;
constexpr const char* kGpu = "nvidia.com/gpu";

int64_t ResourceVersion(const Json& o) {
  const Json& m = o.value("metadata", Json::object());
  try {
    return std::stoll(m.value("resourceVersion", "0"));
  } catch (const std::exception&) {
    return 0;
  }
}

bool NameChar(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
}

Json ToJson(const ResourceList& l) {
  Json out = Json::object();
  for (const auto& [r, v] : l.entries()) out[r] = v;
  return out;
}

}  // namespace

namespace {

std::vector<std::string> NamespaceNames(const Cluster& c) {
  std::vector<std::string> out;
  for (const Json* n : c.store().List("Namespace", ""))
    out.push_back(n->at("metadata").value("name", ""));
  return out;
}

std::vector<std::string> Hidden(const std::vector<std::string>& namespaces, const Viewer& v) {
  std::vector<std::string> out;
  if (v.all) return out;
  for (const std::string& ns : namespaces)
    if (!v.Sees(ns)) out.push_back(ns);
  return out;
}

// The tenants view's quota objects: each namespace's ElasticQuota (the last listed) and its
// ResourceQuotas, as stored.
void CollectQuotas(const Cluster& c, ClusterFacts& f) {
  for (const Json* q : c.store().List("ElasticQuota", "")) {
    const Json& meta = q->at("metadata");
    const Json spec = q->value("spec", Json::object());
    f.elastic_quotas[meta.value("namespace", "")] = {{"name", meta.value("name", "")},
                                                     {"min", spec.value("min", Json::object())},
                                                     {"max", spec.value("max", Json::object())}};
  }
  for (const Json* q : c.store().List("ResourceQuota", "")) {
    const Json& meta = q->at("metadata");
    const Json st = q->value("status", Json::object());
    Json& list = f.resource_quotas[meta.value("namespace", "")];
    if (list.is_null()) list = Json::array();
    list.push_back({{"name", meta.value("name", "")},
                    {"hard", st.value("hard", Json::object())},
                    {"used", st.value("used", Json::object())}});
  }
}

}  // namespace

ClusterFacts CollectFacts(const Cluster& c, ClusterView view) {
  ClusterFacts f;
  f.live = c.live_facts().Share();
  f.now = c.now();
  if (view == ClusterView::kPool) {
    f.nodes = c.engine().NodeTotals();
    return f;
  }
  f.namespaces = NamespaceNames(c);
  if (view == ClusterView::kTenants) {
    CollectQuotas(c, f);
    f.quota_states = ElasticQuotaStates(c.engine());
    f.preemptions = c.preemptions();
  }
  return f;
}

std::vector<std::string> HiddenNamespaces(const Cluster& c, const Viewer& v) {
  return v.all ? std::vector<std::string>() : Hidden(NamespaceNames(c), v);
}

std::string Redact(std::string text, const std::vector<std::string>& hidden) {
  static const std::string kOther = "another tenant's workload";
  for (const std::string& ns : hidden) {
    const std::string prefix = ns + "/";
    for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
      if (at > 0 && NameChar(text[at - 1])) {
        at += prefix.size();
        continue;
      }
      size_t end = at + prefix.size();
      while (end < text.size() && NameChar(text[end])) ++end;
      text.replace(at, end - at, kOther);
      at += kOther.size();
    }
  }
  return text;
}

Json ReservationOf(const std::optional<engine::BackfillReservation>& r) {
  if (!r) return nullptr;
  return {{"nodes", r->nodes}, {"from", FormatRfc3339(r->from)}};
}

namespace {

// The running workloads each node's map shows (those holding GPU devices or MIG slices), by
// node, in id order.
using NodeOccupants = std::unordered_map<std::string_view, std::vector<const LiveFact*>>;
NodeOccupants OccupantsByNode(const LiveFacts::View& live) {
  NodeOccupants out;
  const ResourceList* last = nullptr;  // rows share their requests in runs: asked once a run
  bool last_mig = false;
  live.ForEach([&](const LiveFact& w) {
    if (w.pending || !w.running()) return;
    if (&w.requests() != last) {
      last = &w.requests();
      last_mig = std::any_of(last->entries().begin(), last->entries().end(),
                             [](const auto& e) { return IsMigResourceName(e.first); });
    }
    if (w.gpus || last_mig) out[*w.node].push_back(&w);
  });
  return out;
}

Json Occupant(const LiveFact& w, const Viewer& v) {
  if (!v.Sees(*w.namespace_)) return {{"hidden", true}};
  return {{"namespace", *w.namespace_}, {"name", w.name}};
}

Json GpuDevices(const engine::NodeStatus& n, const std::vector<const LiveFact*>& on,
                const Viewer& v) {
  Json gpus = Json::array();
  for (size_t d = 0; d < n.gpu_used_milli.size(); ++d)
    gpus.push_back(
        {{"index", d}, {"usedMilli", n.gpu_used_milli[d]}, {"occupants", Json::array()}});
  for (const LiveFact* w : on) {
    if (!w->gpus) continue;
    for (int16_t d : w->gpus->devices) {
      if (d < 0 || static_cast<size_t>(d) >= gpus.size()) continue;
      Json o = Occupant(*w, v);
      o["milli"] = w->gpus->milli_per_device;
      gpus[static_cast<size_t>(d)]["occupants"].push_back(std::move(o));
    }
  }
  return gpus;
}

// MIG slices: the engine counts each profile's slices per node; the map fills devices of that
// profile in order (instances per device: what fits in 7 compute and 8 memory slices).
Json MigDevices(const engine::NodeStatus& n, const std::vector<const LiveFact*>& on,
                const Viewer& v) {
  Json mig = Json::array();
  const auto family = GpuFamilyOfProduct(n.gpu_model);
  for (const auto& [r, count] : n.spec.allocatable.entries()) {
    if (!IsMigResourceName(r) || count <= 0) continue;
    const auto profile = family ? LookupMigProfile(r, *family) : LookupMigProfile(r);
    const int64_t per = profile ? std::max(1, std::min(7 / std::max(1, profile->compute_slices),
                                                       8 / std::max(1, profile->memory_slices)))
                                : count;
    std::vector<Json> slots;
    for (const LiveFact* w : on)
      for (int64_t k = 0; k < w->requests().Get(r) && (int64_t)slots.size() < count; ++k)
        slots.push_back(Occupant(*w, v));
    slots.resize(static_cast<size_t>(count), nullptr);
    for (int64_t d = 0; d * per < count; ++d) {
      Json dev_slots = Json::array();
      for (int64_t k = d * per; k < std::min(count, (d + 1) * per); ++k)
        dev_slots.push_back(slots[static_cast<size_t>(k)]);
      mig.push_back({{"resource", r},
                     {"profile", profile ? profile->profile : r},
                     {"slots", std::move(dev_slots)}});
    }
  }
  return mig;
}

}  // namespace

Json PoolView(const ClusterFacts& f, const Viewer& v) {
  const NodeOccupants occupants = OccupantsByNode(f.live);
  static const std::vector<const LiveFact*> kNone;
  Json nodes = Json::array();
  int64_t allocated = 0, capacity = 0;
  for (const engine::NodeStatus& n : f.nodes) {
    const auto it = occupants.find(n.name);
    const auto& on = it == occupants.end() ? kNone : it->second;
    for (int32_t u : n.gpu_used_milli) {
      allocated += u;
      capacity += kMilliPerGpu;
    }
    nodes.push_back(
        {{"name", n.name},
         {"migDevices", MigDevices(n, on, v)},
         {"gpuModel", n.gpu_model},
         {"schedulable", n.schedulable},
         {"cpuMilli", {{"used", n.cpu_used_milli}, {"capacity", n.cpu_capacity_milli}}},
         {"memoryBytes", {{"used", n.mem_used_bytes}, {"capacity", n.mem_capacity_bytes}}},
         {"gpus", GpuDevices(n, on, v)}});
  }
  return {{"nodes", std::move(nodes)},
          {"gpuMilli", {{"allocated", allocated}, {"capacity", capacity}}}};
}

Json PoolView(const Cluster& c, const Viewer& v) {
  return PoolView(CollectFacts(c, ClusterView::kPool), v);
}

namespace {

// One tenant's counts from its live workloads.
struct Tally {
  int64_t running = 0, pending = 0, preemptions = 0, borrowed_gpu = 0;
  ResourceList requests;  // of its running workloads
  Json pending_rows = Json::array();
};
using Tallies = std::map<std::string, Tally>;

// The workloads the viewer sees, by namespace: pending (with their reasons, other tenants'
// names redacted) and running (what they request and borrow).
Tallies TallyWorkloads(const ClusterFacts& f, const Viewer& v,
                       const std::vector<std::string>& hidden) {
  Tallies out;
  std::unordered_map<const std::string*, Tally*> of;  // by interned namespace
  f.live.ForEach([&](const LiveFact& w) {
    Tally*& t = of[w.namespace_];
    if (!t) {
      if (!v.Sees(*w.namespace_)) return;  // stays null: asked again, still not seen
      t = &out[*w.namespace_];
    }
    t->preemptions += w.preemptions;
    if (w.pending) {
      ++t->pending;
      t->pending_rows.push_back({{"name", w.name},
                                 {"reason", *w.reason},
                                 {"message", w.note ? Redact(w.note->message, hidden) : ""}});
      return;
    }
    if (!w.running()) return;
    ++t->running;
    t->requests += w.requests();
    if (w.borrowed) t->borrowed_gpu += w.requests().Get(kGpu);
  });
  return out;
}

Json TenantEntry(const std::string& ns) {
  return {{"namespace", ns},
          {"running", 0},
          {"pending", 0},
          {"used", {{"gpuMilli", 0}, {"cpuMilli", 0}, {"memoryBytes", 0}}},
          {"requests", Json::object()},
          {"borrowedGpuMilli", 0},
          {"preemptions", 0},
          {"preemptionsSuffered", 0},
          {"preemptionsCaused", 0},
          {"recentPreemptions", Json::array()},
          {"fairShare", nullptr},
          {"borrowed", Json::object()},
          {"lent", Json::object()},
          {"elasticQuota", nullptr},
          {"resourceQuotas", Json::array()},
          {"pendingWorkloads", Json::array()}};
}

void AddTally(Json& t, Tally&& n) {
  t["running"] = n.running;
  t["pending"] = n.pending;
  t["used"] = {{"gpuMilli", n.requests.Get(kGpu)},
               {"cpuMilli", n.requests.Get("cpu")},
               {"memoryBytes", n.requests.Get("memory")}};
  t["requests"] = ToJson(n.requests);
  t["borrowedGpuMilli"] = n.borrowed_gpu;
  t["preemptions"] = n.preemptions;
  t["pendingWorkloads"] = std::move(n.pending_rows);
}

// Each tenant's ElasticQuota and ResourceQuotas as stored, and its quota state in the engine
// (fair share, borrowed, lent).
void AddTenantQuotas(const ClusterFacts& f, const std::string& ns, Json& t) {
  if (auto q = f.elastic_quotas.find(ns); q != f.elastic_quotas.end())
    t["elasticQuota"] = q->second;
  if (auto q = f.resource_quotas.find(ns); q != f.resource_quotas.end())
    t["resourceQuotas"] = q->second;
  if (auto q = f.quota_states.find(ns); q != f.quota_states.end()) {
    if (!q->second.cohort.empty()) t["fairShare"] = engine::FormatShare(q->second.fair_share);
    t["borrowed"] = ToJson(q->second.borrowed);
    t["lent"] = ToJson(q->second.lent);
  }
}

// Preemptions from the Events the daemon keeps (the newest Cluster::kMaxEvents), oldest first:
// counted per victim's and preemptor's tenant, the newest ten listed (other tenants' names
// hidden).
void AddTenantPreemptions(const ClusterFacts& f, const Viewer& v,
                          std::map<std::string, Json>& by_ns) {
  constexpr size_t kRecent = 10;
  for (const Preemption& p : f.preemptions) {
    auto victim = by_ns.find(p.victim_namespace);
    auto by = by_ns.find(p.by_namespace);
    if (victim != by_ns.end())
      victim->second["preemptionsSuffered"] =
          victim->second["preemptionsSuffered"].get<int64_t>() + 1;
    if (by != by_ns.end())
      by->second["preemptionsCaused"] = by->second["preemptionsCaused"].get<int64_t>() + 1;
    Json row = {{"time", p.time}, {"type", p.type}};
    auto name = [&](const std::string& ns, const std::string& n) -> Json {
      return v.Sees(ns) ? Json(ns + "/" + n) : Json(nullptr);  // null: another tenant
    };
    row["victim"] = name(p.victim_namespace, p.victim);
    row["by"] = p.by_namespace.empty() ? Json(nullptr) : name(p.by_namespace, p.by);
    for (auto it : {victim, by}) {
      if (it == by_ns.end()) continue;
      Json& recent = it->second["recentPreemptions"];
      recent.push_back(row);
      if (recent.size() > kRecent) recent.erase(recent.begin());
      if (victim == by) break;
    }
  }
}

}  // namespace

Json TenantsView(const ClusterFacts& f, const Viewer& v) {
  Tallies tallies = TallyWorkloads(f, v, Hidden(f.namespaces, v));
  std::map<std::string, Json> by_ns;
  for (const std::string& ns : f.namespaces)
    if (v.Sees(ns)) by_ns.emplace(ns, TenantEntry(ns));
  for (auto& [ns, tally] : tallies) {
    auto [it, made] = by_ns.try_emplace(ns);
    if (made) it->second = TenantEntry(ns);
    AddTally(it->second, std::move(tally));
  }
  for (auto& [ns, t] : by_ns) AddTenantQuotas(f, ns, t);
  AddTenantPreemptions(f, v, by_ns);
  Json out = Json::array();
  for (auto& [ns, t] : by_ns) out.push_back(std::move(t));
  return {{"tenants", std::move(out)}};
}

Json TenantsView(const Cluster& c, const Viewer& v) {
  return TenantsView(CollectFacts(c, ClusterView::kTenants), v);
}

namespace {

// "NS/NAME" < "NS2/NAME2" as strings, without making them.
bool KeyLess(const LiveFact& a, const LiveFact& b) {
  const std::string_view an = *a.namespace_, bn = *b.namespace_;
  if (an == bn) return a.name < b.name;
  const size_t common = std::min(an.size(), bn.size());
  if (const int cmp = an.substr(0, common).compare(bn.substr(0, common)); cmp != 0) return cmp < 0;
  // One namespace is a prefix of the other: the shorter one's '/' against the longer one's next.
  return an.size() < bn.size() ? '/' < bn[common] : an[common] < '/';
}

bool QueueLess(const LiveFact* a, const LiveFact* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->submit_time != b->submit_time) return a->submit_time < b->submit_time;
  if (KeyLess(*a, *b)) return true;
  if (KeyLess(*b, *a)) return false;
  return a->id < b->id;
}

}  // namespace

Json QueueView(const ClusterFacts& f, const Viewer& v, Millis wall_now, size_t limit) {
  const std::vector<std::string> hidden = Hidden(f.namespaces, v);
  std::vector<const LiveFact*> pending;
  f.live.ForEach([&](const LiveFact& w) {
    if (w.pending) pending.push_back(&w);
  });
  std::sort(pending.begin(), pending.end(), QueueLess);
  const Millis now = std::max(wall_now, f.now);
  Json out = Json::array();
  int position = 0;
  int64_t visible = 0;
  for (const LiveFact* w : pending) {
    ++position;  // positions count every pending workload, visible or not
    if (!v.Sees(*w->namespace_)) continue;
    if (static_cast<size_t>(++visible) > limit) continue;  // (counted, not shown)
    out.push_back({{"position", position},
                   {"namespace", *w->namespace_},
                   {"name", w->name},
                   {"priority", w->priority},
                   {"reason", *w->reason},
                   {"message", w->note ? Redact(w->note->message, hidden) : ""},
                   {"nominatedNode", w->note ? w->note->nominated_node : ""},
                   {"reservation", ReservationOf(w->note ? w->note->reservation : std::nullopt)},
                   {"pendingSeconds", (now - w->submit_time) / 1000}});
  }
  return {{"pending", std::move(out)}, {"total", position}, {"visible", visible}};
}

Json QueueView(const Cluster& c, const Viewer& v, Millis now, size_t limit) {
  return QueueView(CollectFacts(c, ClusterView::kQueue), v, now, limit);
}

namespace {
// The Events the daemon made about the pod ns/name, oldest first: those named NAME.<counter>
// (Cluster::AddEvent), read from their text (kept as text alone: a range of the store, not a
// walk of every Event).
std::vector<std::shared_ptr<const Json>> EventsOfPod(const Cluster& c, const std::string& ns,
                                                     const std::string& name) {
  std::vector<std::shared_ptr<const Json>> events;
  const std::string prefix = name + ".";
  const ObjectStore::Objects& all = c.store().All("Event");
  for (auto it = all.lower_bound({ns, prefix}); it != all.end(); ++it) {
    if (it->first.first != ns || it->first.second.compare(0, prefix.size(), prefix) != 0) break;
    std::shared_ptr<const Json> e = it->second.json_ptr();  // parsed, not kept
    const Json io = e->value("involvedObject", Json::object());
    if (io.value("kind", "") == "Pod" && io.value("name", "") == name) events.push_back(e);
  }
  std::sort(events.begin(), events.end(),
            [](const auto& a, const auto& b) { return ResourceVersion(*a) < ResourceVersion(*b); });
  return events;
}
}  // namespace

Json WorkloadView(const Cluster& c, const Viewer& v, const std::string& ns,
                  const std::string& name) {
  if (!v.Sees(ns)) return nullptr;
  const std::vector<std::string> hidden = HiddenNamespaces(c, v);
  const Json* pod = c.store().Get("Pod", ns, name);
  if (!pod) return nullptr;
  const Json st = pod->value("status", Json::object());
  Json out = {{"namespace", ns},
              {"name", name},
              {"phase", st.value("phase", "")},
              {"node", pod->value("spec", Json::object()).value("nodeName", "")},
              {"nominatedNode", st.value("nominatedNodeName", "")},
              {"reason", ""},
              {"message", ""}};
  for (const Json& cond : st.value("conditions", Json::array()))
    if (cond.value("type", "") == "PodScheduled" && cond.value("status", "") == "False") {
      out["reason"] = cond.value("reason", "");
      out["message"] = Redact(cond.value("message", ""), hidden);
    }
  Json ev = Json::array();
  for (const auto& e : EventsOfPod(c, ns, name))
    ev.push_back({{"time", e->value("firstTimestamp", "")},
                  {"type", e->value("type", "")},
                  {"reason", e->value("reason", "")},
                  {"message", Redact(e->value("message", ""), hidden)}});
  out["events"] = std::move(ev);
  return out;
}

}  // namespace arbiter::server::dashboard

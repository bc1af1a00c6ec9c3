#include "server/dashboard/views.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/duration.h"
#include "core/engine/fair_share.h"
#include "server/dashboard/quota_state.h"

namespace arbiter::server::dashboard {

namespace {

constexpr int32_t kMilliPerGpu = 1000;
constexpr const char* kGpu = "nvidia.com/gpu";

std::map<engine::WorkloadId, engine::WorkloadStatus> LiveById(const engine::Engine& e) {
  std::map<engine::WorkloadId, engine::WorkloadStatus> out;
  for (auto& w : e.Workloads()) out.emplace(w.id, std::move(w));
  return out;
}

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

std::vector<std::string> HiddenNamespaces(const Cluster& c, const Viewer& v) {
  std::vector<std::string> out;
  if (v.all) return out;
  for (const Json* n : c.store().List("Namespace", "")) {
    const std::string ns = n->at("metadata").value("name", "");
    if (!v.Sees(ns)) out.push_back(ns);
  }
  return out;
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

Json ReservationOf(const engine::WorkloadStatus& w) {
  if (!w.reservation) return nullptr;
  return {{"nodes", w.reservation->nodes}, {"from", FormatRfc3339(w.reservation->from)}};
}

Json PoolView(const Cluster& c, const Viewer& v) {
  const auto live = LiveById(c.engine());
  Json nodes = Json::array();
  int64_t allocated = 0, capacity = 0;
  for (const engine::NodeStatus& n : c.engine().Nodes()) {
    Json gpus = Json::array();
    for (size_t d = 0; d < n.gpu_used_milli.size(); ++d)
      gpus.push_back(
          {{"index", d}, {"usedMilli", n.gpu_used_milli[d]}, {"occupants", Json::array()}});
    for (size_t i = 0; i < n.workloads.size() && i < n.workload_gpus.size(); ++i) {
      const auto& a = n.workload_gpus[i];
      const auto it = live.find(n.workloads[i]);
      for (int16_t d : a.devices) {
        if (d < 0 || static_cast<size_t>(d) >= gpus.size()) continue;
        Json o = {{"milli", a.milli_per_device}};
        if (it != live.end() && v.Sees(it->second.namespace_)) {
          o["namespace"] = it->second.namespace_;
          o["name"] = it->second.name;
        } else {
          o["hidden"] = true;
        }
        gpus[static_cast<size_t>(d)]["occupants"].push_back(std::move(o));
      }
    }
    for (int32_t u : n.gpu_used_milli) {
      allocated += u;
      capacity += kMilliPerGpu;
    }
    // MIG slices: the engine counts each profile's slices per node; the map fills devices of
    // that profile in order (instances per device: what fits in 7 compute and 8 memory slices).
    Json mig = Json::array();
    const auto family = GpuFamilyOfProduct(n.gpu_model);
    for (const auto& [r, count] : n.spec.allocatable.entries()) {
      if (!IsMigResourceName(r) || count <= 0) continue;
      const auto profile = family ? LookupMigProfile(r, *family) : LookupMigProfile(r);
      const int64_t per = profile ? std::max(1, std::min(7 / std::max(1, profile->compute_slices),
                                                         8 / std::max(1, profile->memory_slices)))
                                  : count;
      std::vector<Json> slots;
      for (size_t i = 0; i < n.workloads.size(); ++i) {
        const auto it = live.find(n.workloads[i]);
        if (it == live.end()) continue;
        for (int64_t k = 0; k < it->second.requests.Get(r) && (int64_t)slots.size() < count; ++k)
          slots.push_back(v.Sees(it->second.namespace_) ? Json{{"namespace", it->second.namespace_},
                                                               {"name", it->second.name}}
                                                        : Json{{"hidden", true}});
      }
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
    nodes.push_back(
        {{"name", n.name},
         {"migDevices", std::move(mig)},
         {"gpuModel", n.gpu_model},
         {"schedulable", n.schedulable},
         {"cpuMilli", {{"used", n.cpu_used_milli}, {"capacity", n.cpu_capacity_milli}}},
         {"memoryBytes", {{"used", n.mem_used_bytes}, {"capacity", n.mem_capacity_bytes}}},
         {"gpus", std::move(gpus)}});
  }
  return {{"nodes", std::move(nodes)},
          {"gpuMilli", {{"allocated", allocated}, {"capacity", capacity}}}};
}

namespace {

using TenantMap = std::map<std::string, Json>;

// The namespace's entry, made empty when first asked for.
Json& TenantEntry(TenantMap& by_ns, const std::string& ns) {
  auto it = by_ns.find(ns);
  if (it != by_ns.end()) return it->second;
  Json t = {{"namespace", ns},
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
  return by_ns.emplace(ns, std::move(t)).first->second;
}

// The workloads the viewer sees, by namespace: pending (with their reasons, other tenants'
// names redacted) and running (what they use and borrow).
void TallyWorkloads(const Cluster& c, const Viewer& v, TenantMap& by_ns) {
  const std::vector<std::string> hidden = HiddenNamespaces(c, v);
  for (const engine::WorkloadStatus& w : c.engine().Workloads()) {
    if (!v.Sees(w.namespace_)) continue;
    Json& t = TenantEntry(by_ns, w.namespace_);
    t["preemptions"] = t["preemptions"].get<int64_t>() + w.preemptions;
    if (w.phase == engine::Phase::kPending) {
      t["pending"] = t["pending"].get<int64_t>() + 1;
      t["pendingWorkloads"].push_back(
          {{"name", w.name}, {"reason", w.reason}, {"message", Redact(w.message, hidden)}});
      continue;
    }
    if (w.phase != engine::Phase::kRunning && w.phase != engine::Phase::kTerminating) continue;
    t["running"] = t["running"].get<int64_t>() + 1;
    Json& u = t["used"];
    u["gpuMilli"] = u["gpuMilli"].get<int64_t>() + w.requests.Get(kGpu);
    u["cpuMilli"] = u["cpuMilli"].get<int64_t>() + w.requests.Get("cpu");
    u["memoryBytes"] = u["memoryBytes"].get<int64_t>() + w.requests.Get("memory");
    for (const auto& [r, amount] : w.requests.entries())
      t["requests"][r] = t["requests"].value(r, int64_t{0}) + amount;
    if (w.borrowed)
      t["borrowedGpuMilli"] = t["borrowedGpuMilli"].get<int64_t>() + w.requests.Get(kGpu);
  }
}

// Each tenant's ElasticQuota and ResourceQuotas as stored, and its quota state in the engine
// (fair share, borrowed, lent).
void AddTenantQuotas(const Cluster& c, TenantMap& by_ns) {
  for (auto& [ns, t] : by_ns) {
    for (const Json* q : c.store().List("ElasticQuota", ns)) {
      const Json spec = q->value("spec", Json::object());
      t["elasticQuota"] = {{"name", q->at("metadata").value("name", "")},
                           {"min", spec.value("min", Json::object())},
                           {"max", spec.value("max", Json::object())}};
    }
    for (const Json* q : c.store().List("ResourceQuota", ns)) {
      const Json st = q->value("status", Json::object());
      t["resourceQuotas"].push_back({{"name", q->at("metadata").value("name", "")},
                                     {"hard", st.value("hard", Json::object())},
                                     {"used", st.value("used", Json::object())}});
    }
  }
  for (const auto& [ns, q] : QuotaStates(c.engine())) {
    auto it = by_ns.find(ns);
    if (it == by_ns.end()) continue;
    if (!q.cohort.empty()) it->second["fairShare"] = engine::FormatShare(q.fair_share);
    it->second["borrowed"] = ToJson(q.borrowed);
    it->second["lent"] = ToJson(q.lent);
  }
}

// Preemptions from the Events the daemon keeps (the newest Cluster::kMaxEvents), oldest first:
// counted per victim's and preemptor's tenant, the newest ten listed (other tenants' names
// hidden).
void AddTenantPreemptions(const Cluster& c, const Viewer& v, TenantMap& by_ns) {
  constexpr size_t kRecent = 10;
  for (const auto& [event, p] : c.preemptions()) {
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

Json TenantsView(const Cluster& c, const Viewer& v) {
  TenantMap by_ns;
  for (const Json* n : c.store().List("Namespace", "")) {
    const std::string ns = n->at("metadata").value("name", "");
    if (v.Sees(ns)) TenantEntry(by_ns, ns);
  }
  TallyWorkloads(c, v, by_ns);
  AddTenantQuotas(c, by_ns);
  AddTenantPreemptions(c, v, by_ns);
  Json out = Json::array();
  for (auto& [ns, t] : by_ns) out.push_back(std::move(t));
  return {{"tenants", std::move(out)}};
}

Json QueueView(const Cluster& c, const Viewer& v, Millis wall_now) {
  const std::vector<std::string> hidden = HiddenNamespaces(c, v);
  std::vector<engine::WorkloadStatus> pending;
  for (auto& w : c.engine().Workloads())
    if (w.phase == engine::Phase::kPending) pending.push_back(std::move(w));
  std::sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-static_cast<int64_t>(a.priority), a.submit_time, a.key,
                           engine::Value(a.id)) < std::make_tuple(-static_cast<int64_t>(b.priority),
                                                                  b.submit_time, b.key,
                                                                  engine::Value(b.id));
  });
  const Millis now = std::max(wall_now, c.now());
  Json out = Json::array();
  int position = 0;
  for (const auto& w : pending) {
    ++position;  // positions count every pending workload, visible or not
    if (!v.Sees(w.namespace_)) continue;
    out.push_back({{"position", position},
                   {"namespace", w.namespace_},
                   {"name", w.name},
                   {"priority", w.priority},
                   {"reason", w.reason},
                   {"message", Redact(w.message, hidden)},
                   {"nominatedNode", w.nominated_node},
                   {"reservation", ReservationOf(w)},
                   {"pendingSeconds", (now - w.submit_time) / 1000}});
  }
  return {{"pending", std::move(out)}, {"total", position}};
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

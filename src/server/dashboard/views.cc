#include "server/dashboard/views.h"

#include <algorithm>
#include <map>
#include <tuple>

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

}  // namespace

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
    nodes.push_back(
        {{"name", n.name},
         {"gpuModel", n.gpu_model},
         {"schedulable", n.schedulable},
         {"cpuMilli", {{"used", n.cpu_used_milli}, {"capacity", n.cpu_capacity_milli}}},
         {"memoryBytes", {{"used", n.mem_used_bytes}, {"capacity", n.mem_capacity_bytes}}},
         {"gpus", std::move(gpus)}});
  }
  return {{"nodes", std::move(nodes)},
          {"gpuMilli", {{"allocated", allocated}, {"capacity", capacity}}}};
}

Json TenantsView(const Cluster& c, const Viewer& v) {
  std::map<std::string, Json> by_ns;
  auto tenant = [&](const std::string& ns) -> Json& {
    auto it = by_ns.find(ns);
    if (it != by_ns.end()) return it->second;
    Json t = {{"namespace", ns},
              {"running", 0},
              {"pending", 0},
              {"used", {{"gpuMilli", 0}, {"cpuMilli", 0}, {"memoryBytes", 0}}},
              {"requests", Json::object()},
              {"borrowedGpuMilli", 0},
              {"preemptions", 0},
              {"elasticQuota", nullptr},
              {"resourceQuotas", Json::array()},
              {"pendingWorkloads", Json::array()}};
    return by_ns.emplace(ns, std::move(t)).first->second;
  };
  for (const Json* n : c.store().List("Namespace", "")) {
    const std::string ns = n->at("metadata").value("name", "");
    if (v.Sees(ns)) tenant(ns);
  }
  for (const engine::WorkloadStatus& w : c.engine().Workloads()) {
    if (!v.Sees(w.namespace_)) continue;
    Json& t = tenant(w.namespace_);
    t["preemptions"] = t["preemptions"].get<int64_t>() + w.preemptions;
    if (w.phase == engine::Phase::kPending) {
      t["pending"] = t["pending"].get<int64_t>() + 1;
      t["pendingWorkloads"].push_back(
          {{"name", w.name}, {"reason", w.reason}, {"message", w.message}});
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
  Json out = Json::array();
  for (auto& [ns, t] : by_ns) out.push_back(std::move(t));
  return {{"tenants", std::move(out)}};
}

Json QueueView(const Cluster& c, const Viewer& v) {
  std::vector<engine::WorkloadStatus> pending;
  for (auto& w : c.engine().Workloads())
    if (w.phase == engine::Phase::kPending) pending.push_back(std::move(w));
  std::sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-static_cast<int64_t>(a.priority), a.submit_time, a.key,
                           engine::Value(a.id)) < std::make_tuple(-static_cast<int64_t>(b.priority),
                                                                  b.submit_time, b.key,
                                                                  engine::Value(b.id));
  });
  const Millis now = c.now();
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
                   {"message", w.message},
                   {"nominatedNode", w.nominated_node},
                   {"pendingSeconds", (now - w.submit_time) / 1000}});
  }
  return {{"pending", std::move(out)}, {"total", position}};
}

Json WorkloadView(const Cluster& c, const Viewer& v, const std::string& ns,
                  const std::string& name) {
  if (!v.Sees(ns)) return nullptr;
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
      out["message"] = cond.value("message", "");
    }
  std::vector<const Json*> events;
  for (const Json* e : c.store().List("Event", ns)) {
    const Json io = e->value("involvedObject", Json::object());
    if (io.value("kind", "") == "Pod" && io.value("name", "") == name) events.push_back(e);
  }
  std::sort(events.begin(), events.end(),
            [](const Json* a, const Json* b) { return ResourceVersion(*a) < ResourceVersion(*b); });
  Json ev = Json::array();
  for (const Json* e : events)
    ev.push_back({{"time", e->value("firstTimestamp", "")},
                  {"type", e->value("type", "")},
                  {"reason", e->value("reason", "")},
                  {"message", e->value("message", "")}});
  out["events"] = std::move(ev);
  return out;
}

}  // namespace arbiter::server::dashboard

#include "server/state/pod_status.h"

#include <algorithm>
#include <map>

#include "core/resources.h"

namespace arbiter::server {

using engine::Phase;

std::string KubeTime(Millis unix_ms) { return FormatRfc3339(unix_ms / 1000 * 1000); }

namespace {

// Sets condition `type` to `status`; the transition time moves only when the status changes.
void SetCondition(Json& conditions, const std::string& type, const std::string& status,
                  const std::string& reason, const std::string& message, Millis now) {
  for (auto& c : conditions) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") != status) c["lastTransitionTime"] = KubeTime(now);
    c["status"] = status;
    if (reason.empty())
      c.erase("reason");
    else
      c["reason"] = reason;
    if (message.empty())
      c.erase("message");
    else
      c["message"] = message;
    return;
  }
  Json c = {{"type", type},
            {"status", status},
            {"lastProbeTime", nullptr},
            {"lastTransitionTime", KubeTime(now)}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  conditions.push_back(std::move(c));
}

// The terminated state of a requeued container's last run: kept from the last status written,
// else made from the run that status shows (preempted now: exit code 137, as after SIGKILL).
Json LastRun(const Json& old_statuses, const Json& name, Millis now) {
  for (const auto& o : old_statuses) {
    if (!o.is_object() || o.value("name", Json()) != name) continue;
    const Json& st = o.contains("state") ? o["state"] : Json();
    if (st.is_object() && st.contains("running")) {
      Json t = {{"exitCode", 137}, {"reason", "Preempted"}, {"finishedAt", KubeTime(now)}};
      if (st["running"].is_object() && st["running"].contains("startedAt"))
        t["startedAt"] = st["running"]["startedAt"];
      return t;
    }
    if (o.contains("lastState") && o["lastState"].is_object() &&
        o["lastState"].contains("terminated"))
      return o["lastState"]["terminated"];
  }
  return {{"exitCode", 137}, {"reason", "Preempted"}, {"finishedAt", KubeTime(now)}};
}

const char* PhaseText(Phase p) {
  switch (p) {
    case Phase::kPending:
      return "Pending";
    case Phase::kRunning:
    case Phase::kTerminating:
      return "Running";
    case Phase::kSucceeded:
      return "Succeeded";
    default:
      return "Failed";
  }
}

}  // namespace

std::string QosClass(const Json& spec) {
  static const char* const kResources[] = {"cpu", "memory"};
  auto amount = [](const Json& c, const char* list, const char* r) -> int64_t {
    if (!c.contains("resources") || !c["resources"].is_object()) return 0;
    const Json& l = c["resources"].contains(list) ? c["resources"][list] : Json();
    if (!l.is_object() || !l.contains(r)) return 0;
    const Json& v = l[r];
    auto q = ParseResourceQuantity(r, v.is_string() ? v.get<std::string>() : v.dump());
    return q.ok() ? *q : 0;
  };
  std::map<std::string, int64_t> requests, limits;
  bool guaranteed = true;
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.is_object() || !spec.contains(list) || !spec[list].is_array()) continue;
    for (const auto& c : spec[list]) {
      int found = 0;
      for (const char* r : kResources) {
        const int64_t limit = amount(c, "limits", r);
        int64_t request = amount(c, "requests", r);
        if (request == 0 && limit > 0) request = limit;  // API defaulting: requests from limits
        if (request > 0) requests[r] += request;
        if (limit > 0) {
          limits[r] += limit;
          ++found;
        }
      }
      if (found < 2) guaranteed = false;
    }
  }
  if (requests.empty() && limits.empty()) return "BestEffort";
  if (guaranteed)
    for (const auto& [r, v] : requests)
      if (!limits.count(r) || limits[r] != v) guaranteed = false;
  return guaranteed && requests.size() == limits.size() ? "Guaranteed" : "Burstable";
}

void SetPodStatus(Json& pod, const engine::WorkloadStatus& s,
                  const driver::PodCondition* disruption, Millis now) {
  Json old = pod.contains("status") && pod["status"].is_object() ? pod["status"] : Json::object();
  Json st = Json::object();
  st["phase"] = PhaseText(s.phase);
  Json conditions = old.contains("conditions") && old["conditions"].is_array() ? old["conditions"]
                                                                               : Json::array();
  // What the status is: driver/pod_scheduling.h (shared with `arbiter scheduler`); here, only how
  // it is written. A requeued pod keeps its object, unscheduled (docs/serve.md).
  const driver::PodScheduling p = driver::PodSchedulingOf(s);
  const bool on_node = p.on_node, bound = p.bound, requeued = p.requeued;
  SetCondition(conditions, "PodScheduled", p.scheduled.status ? "True" : "False",
               p.scheduled.reason, p.scheduled.message, now);
  const bool ready = s.phase == Phase::kRunning;
  SetCondition(conditions, "Ready", ready ? "True" : "False", ready ? "" : "PodNotReady", "", now);
  if (disruption)
    SetCondition(conditions, "DisruptionTarget", disruption->status ? "True" : "False",
                 disruption->reason, disruption->message, now);
  st["conditions"] = std::move(conditions);
  if (!p.nominated_node.empty()) st["nominatedNodeName"] = p.nominated_node;
  if (!p.reason.empty()) st["reason"] = p.reason;
  if (!p.message.empty()) st["message"] = p.message;
  if (s.first_start >= 0) st["startTime"] = KubeTime(s.first_start);
  if (bound && !p.node.empty())
    pod["spec"]["nodeName"] = p.node;
  else if (!bound && pod.contains("spec") && pod["spec"].is_object())
    pod["spec"].erase("nodeName");
  // One status per container, so `kubectl get pods` shows READY and RESTARTS.
  // Container statuses once the pod was bound (kubelet writes them; an unscheduled pod has none).
  // A requeued pod keeps them for RESTARTS (its preemptions): waiting, its last run terminated.
  Json statuses = Json::array();
  const Json old_statuses = old.contains("containerStatuses") && old["containerStatuses"].is_array()
                                ? old["containerStatuses"]
                                : Json::array();
  if ((bound || requeued) && pod.contains("spec") && pod["spec"].contains("containers") &&
      pod["spec"]["containers"].is_array()) {
    for (const auto& c : pod["spec"]["containers"]) {
      Json cs = {{"name", c.value("name", "")},
                 {"image", c.value("image", "")},
                 {"imageID", ""},
                 {"ready", ready},
                 {"started", on_node},
                 {"restartCount", s.preemptions}};
      if (requeued) {
        cs["state"] = {{"waiting", Json::object()}};
        cs["lastState"] = {{"terminated", LastRun(old_statuses, cs["name"], now)}};
      } else if (on_node) {
        cs["state"] = {{"running", {{"startedAt", KubeTime(s.run_start)}}}};
      } else if (engine::IsFinal(s.phase) && s.first_start >= 0) {
        const bool ok = s.phase == Phase::kSucceeded;
        cs["state"] = {{"terminated",
                        {{"exitCode", ok ? 0 : (s.exit_code != 0 ? s.exit_code : 137)},
                         {"reason", ok ? "Completed"
                                       : (s.phase == Phase::kFailed || s.phase == Phase::kDeleted
                                              ? "Error"
                                              : "Preempted")},
                         {"finishedAt", KubeTime(s.finish_time >= 0 ? s.finish_time : now)}}}};
      } else {
        cs["state"] = {
            {"waiting",
             {{"reason", s.phase == Phase::kPending ? "ContainerCreating" : "Rejected"}}}};
      }
      statuses.push_back(std::move(cs));
    }
  }
  if (!statuses.empty()) st["containerStatuses"] = std::move(statuses);
  st["qosClass"] = pod.contains("spec") ? QosClass(pod["spec"]) : "BestEffort";
  pod["status"] = std::move(st);
}

Json KubeEvent(const engine::Event& e, const Json& involved, const std::string& name, Millis now) {
  const Json& meta = involved.at("metadata");
  const std::string ns = meta.value("namespace", "default");
  const auto d = driver::PodEventOf(e, ns, meta.value("name", ""));
  if (!d) return nullptr;
  Json ev = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", name},
        {"namespace", ns.empty() ? "default" : ns},
        {"creationTimestamp", KubeTime(now)}}},
      {"involvedObject",
       {{"apiVersion", involved.value("apiVersion", "v1")},
        {"kind", involved.value("kind", "")},
        {"name", meta.value("name", "")},
        {"uid", meta.value("uid", "")}}},
      {"reason", d->reason},
      {"message", d->note},
      {"type", d->warning ? "Warning" : "Normal"},
      {"source", {{"component", "arbiter-scheduler"}}},
      {"reportingComponent", "arbiter-scheduler"},
      {"reportingInstance", "arbiter"},
      {"firstTimestamp", KubeTime(e.time)},
      {"lastTimestamp", KubeTime(e.time)},
      {"count", 1},
  };
  if (!ns.empty() && meta.contains("namespace")) ev["involvedObject"]["namespace"] = ns;
  // The engine's facts next to its text: its machine-readable reason (Unschedulable, PDB, ...)
  // and, on Preempted / Reclaimed, the preemptor as the Event's related object.
  if (!d->engine_reason.empty())
    ev["metadata"]["annotations"]["arbiter.dev/reason"] = d->engine_reason;
  if (const size_t slash = d->related.find('/'); slash != std::string::npos)
    ev["related"] = {{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"namespace", d->related.substr(0, slash)},
                     {"name", d->related.substr(slash + 1)}};
  return ev;
}

}  // namespace arbiter::server

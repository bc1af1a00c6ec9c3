#include "server/state/pod_status.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "adapters/json/member.h"
#include "core/resources.h"

namespace arbiter::server {

using engine::Phase;

std::string KubeTime(Millis unix_ms) {
  // A create writes several times of the same second: the last one is formatted once per thread.
  thread_local Millis last_second = std::numeric_limits<Millis>::min();
  thread_local std::string last_text;
  const Millis second = unix_ms / 1000 * 1000;
  if (second != last_second) {
    last_text = FormatRfc3339(second);
    last_second = second;
  }
  return last_text;
}

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

constexpr Millis kCrashBackOff = 10000;      // kubelet's backOffPeriod
constexpr Millis kMaxCrashBackOff = 300000;  // MaxContainerBackOff

// Go's time.Duration text of whole seconds ("10s", "2m40s", "5m0s").
std::string GoSeconds(Millis ms) {
  const Millis s = ms / 1000;
  if (s < 60) return std::to_string(s) + "s";
  return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
}

// A crash-looping container's status fields (restartCount aside) at `c`.
void SetCrashState(Json& cs, const CrashLoop& c, const CrashLoopSpec& spec, const Json& pod) {
  cs["ready"] = c.running;
  cs["started"] = c.running;
  const Json& meta = json_member::Member(pod, "metadata");
  auto text = [&](const char* key, const char* fallback) {
    const Json& v = json_member::Member(meta, key);
    return v.is_string() ? v.get<std::string>() : std::string(fallback);
  };
  if (c.running) {
    cs["state"] = {{"running", {{"startedAt", KubeTime(c.started)}}}};
  } else {
    cs["state"] = {
        {"waiting",
         {{"reason", "CrashLoopBackOff"},
          {"message", "back-off " + GoSeconds(c.backoff) + " restarting failed container=" +
                          cs.value("name", "") + " pod=" + text("name", "") + "_" +
                          text("namespace", "default") + "(" + text("uid", "") + ")"}}}};
  }
  if (c.last_finished >= 0)
    cs["lastState"] = {{"terminated",
                        {{"exitCode", spec.exit_code},
                         {"reason", "Error"},
                         {"startedAt", KubeTime(c.last_started)},
                         {"finishedAt", KubeTime(c.last_finished)}}}};
}

int64_t OldRestarts(const Json& old_statuses, const Json& name) {
  for (const auto& o : old_statuses)
    if (o.is_object() && o.value("name", Json()) == name) return o.value("restartCount", 0);
  return 0;
}

// A container's state (and a requeued one's lastState) from the engine's status, outside a crash
// loop: waiting after a requeue, running on its node, terminated once final, else waiting.
void SetContainerState(Json& cs, const engine::WorkloadStatus& s, const driver::PodScheduling& p,
                       const Json& old_statuses, Millis now, StatusRules rules) {
  if (p.requeued) {
    cs["state"] = {{"waiting", Json::object()}};
    cs["lastState"] = {{"terminated", LastRun(old_statuses, cs["name"], now)}};
  } else if (p.on_node) {
    cs["state"] = {{"running", {{"startedAt", KubeTime(s.run_start)}}}};
  } else if (engine::IsFinal(s.phase) && s.first_start >= 0) {
    const bool ok = s.phase == Phase::kSucceeded;
    const bool error = s.phase == Phase::kFailed || s.phase == Phase::kDeleted;
    cs["state"] = {{"terminated",
                    {{"exitCode", ok ? 0 : (s.exit_code != 0 ? s.exit_code : 137)},
                     {"reason", ok ? "Completed" : (error ? "Error" : "Preempted")},
                     {"finishedAt", KubeTime(s.finish_time >= 0 ? s.finish_time : now)}}}};
    if (rules == StatusRules::kCurrent)
      cs["state"]["terminated"]["startedAt"] = KubeTime(s.run_start);
  } else {
    cs["state"] = {
        {"waiting", {{"reason", s.phase == Phase::kPending ? "ContainerCreating" : "Rejected"}}}};
  }
}

std::string ContainerNames(const Json& pod) {
  std::string out;
  const Json& cs = json_member::Member(json_member::Member(pod, "spec"), "containers");
  if (!cs.is_array()) return out;
  for (const auto& c : cs) out += (out.empty() ? "" : " ") + c.value("name", "");
  return out;
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

bool OnFailureJobPod(const Json& pod) {
  using json_member::Member;
  const Json& labels = Member(Member(pod, "metadata"), "labels");
  return labels.is_object() && labels.contains("batch.kubernetes.io/controller-uid") &&
         Member(Member(pod, "spec"), "restartPolicy") == "OnFailure";
}

std::optional<CrashLoopSpec> CrashLoopRun(const Json& pod) {
  using json_member::Member;
  const Json& meta = Member(pod, "metadata");
  if (!OnFailureJobPod(pod)) return std::nullopt;
  const Json& code = Member(Member(meta, "annotations"), "arbiter.dev/exit-code");
  const Json& run = Member(Member(meta, "annotations"), "arbiter.dev/duration");
  if (!code.is_string() || !run.is_string()) return std::nullopt;
  const std::string& text = code.get_ref<const std::string&>();
  CrashLoopSpec out;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out.exit_code);
  if (ec != std::errc() || end != text.data() + text.size() || out.exit_code == 0)
    return std::nullopt;
  auto d = ParseDuration(run.get<std::string>());
  if (!d.ok()) return std::nullopt;
  out.run = *d;
  return out;
}

// kubelet's doBackOff with flowcontrol.Backoff (key per container, no jitter): a container that
// exits with no back-off entry, or whose run outlasted the entry's expiry (2 x max since its
// last update), starts again at once with a fresh 10 s entry; otherwise it waits the entry's
// back-off from its finish, and the entry doubles (at most 5 min) at the restart.
CrashLoop CrashLoopAt(Millis run_start, Millis run, Millis now) {
  CrashLoop c;
  c.started = run_start;
  Millis backoff = 0;  // 0: no entry yet
  Millis last_update = 0;
  while (true) {
    const Millis finish = c.started + run;
    if (now < finish) {
      c.running = true;
      c.next = finish;
      return c;
    }
    c.last_started = c.started;
    c.last_finished = finish;
    Millis restart = finish;
    if (backoff == 0 || finish - last_update > 2 * kMaxCrashBackOff) {
      backoff = kCrashBackOff;
      last_update = finish;
    } else {
      restart = finish + backoff;
      if (now < restart) {
        c.running = false;
        c.backoff = backoff;
        c.next = restart;
        return c;
      }
      backoff = std::min(2 * backoff, kMaxCrashBackOff);
      last_update = restart;
    }
    ++c.restarts;
    c.started = restart;
  }
}

std::optional<Millis> NextContainerChange(const Json& pod, const engine::WorkloadStatus& s,
                                          Millis now) {
  if (s.phase != Phase::kRunning || s.run_start < 0) return std::nullopt;
  const auto spec = CrashLoopRun(pod);
  if (!spec) return std::nullopt;
  return CrashLoopAt(s.run_start, spec->run, now).next;
}

std::string QosClass(const Json& spec) {
  using json_member::Member;
  static const char* const kResources[] = {"cpu", "memory"};
  auto amount = [](const Json& list, const char* r) -> int64_t {
    const Json& v = Member(list, r);
    if (v.is_null()) return 0;
    const std::string* text = v.get_ptr<const std::string*>();
    auto q = ParseResourceQuantity(r, text ? std::string_view(*text) : std::string_view(v.dump()));
    return q.ok() ? *q : 0;
  };
  int64_t requests[2] = {0, 0}, limits[2] = {0, 0};
  bool guaranteed = true;
  for (const char* list : {"initContainers", "containers"}) {
    const Json& cs = Member(spec, list);
    if (!cs.is_array()) continue;
    for (const auto& c : cs) {
      const Json& resources = Member(c, "resources");
      const Json& lim = Member(resources, "limits");
      const Json& req = Member(resources, "requests");
      int found = 0;
      for (size_t r = 0; r < 2; ++r) {
        const int64_t limit = amount(lim, kResources[r]);
        int64_t request = amount(req, kResources[r]);
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
  bool any = false;
  for (size_t r = 0; r < 2; ++r) {
    any = any || requests[r] > 0 || limits[r] > 0;
    // Guaranteed: every resource requested is limited at the same amount, and none only limited.
    if (requests[r] != limits[r]) guaranteed = false;
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

PodStatusUpdate PodStatusOf(const Json& pod, const engine::WorkloadStatus& s,
                            const driver::PodCondition* disruption, Millis now, StatusRules rules) {
  using json_member::Member;
  const Json& old = Member(pod, "status");
  const Json& spec = Member(pod, "spec");
  Json st = Json::object();
  st["phase"] = PhaseText(s.phase);
  const Json& old_conditions = Member(old, "conditions");
  Json conditions = old_conditions.is_array() ? old_conditions : Json::array();
  // What the status is: driver/pod_scheduling.h (shared with `arbiter scheduler`); here, only how
  // it is written. A requeued pod keeps its object, unscheduled (docs/serve.md).
  const driver::PodScheduling p = driver::PodSchedulingOf(s);
  const bool on_node = p.on_node, bound = p.bound, requeued = p.requeued;
  SetCondition(conditions, "PodScheduled", p.scheduled.status ? "True" : "False",
               p.scheduled.reason, p.scheduled.message, now);
  // restartPolicy OnFailure: the containers restart in place while the pod holds its node.
  const auto crash_spec = on_node && !requeued ? CrashLoopRun(pod) : std::nullopt;
  std::optional<CrashLoop> crash;
  if (crash_spec && s.run_start >= 0) crash = CrashLoopAt(s.run_start, crash_spec->run, now);
  const bool ready = s.phase == Phase::kRunning && (!crash || crash->running);
  if (crash && !crash->running)
    SetCondition(conditions, "Ready", "False", "ContainersNotReady",
                 "containers with unready status: [" + ContainerNames(pod) + "]", now);
  else
    SetCondition(conditions, "Ready", ready ? "True" : "False", ready ? "" : "PodNotReady", "",
                 now);
  if (disruption)
    SetCondition(conditions, "DisruptionTarget", disruption->status ? "True" : "False",
                 disruption->reason, disruption->message, now);
  st["conditions"] = std::move(conditions);
  if (!p.nominated_node.empty()) st["nominatedNodeName"] = p.nominated_node;
  if (!p.reason.empty()) st["reason"] = p.reason;
  if (!p.message.empty()) st["message"] = p.message;
  if (s.first_start >= 0) st["startTime"] = KubeTime(s.first_start);
  PodStatusUpdate out;
  if (bound && !p.node.empty()) {
    out.node = PodStatusUpdate::Node::kSet;
    out.node_name = p.node;
  } else if (!bound) {
    out.node = PodStatusUpdate::Node::kErase;
  }
  // One status per container, so `kubectl get pods` shows READY and RESTARTS.
  // Container statuses once the pod was bound (kubelet writes them; an unscheduled pod has none).
  // A requeued pod keeps them for RESTARTS (its preemptions): waiting, its last run terminated.
  // A Job's pod under OnFailure counts only its in-place restarts (the Job controller sums them
  // against backoffLimit); a requeued one looks like the new pod Kubernetes would make.
  const int64_t restarts_before = OnFailureJobPod(pod) ? 0 : s.preemptions;
  Json statuses = Json::array();
  const Json& old_statuses_member = Member(old, "containerStatuses");
  static const Json kNone = Json::array();
  const Json& old_statuses = old_statuses_member.is_array() ? old_statuses_member : kNone;
  const Json& containers = Member(spec, "containers");
  if ((bound || requeued) && containers.is_array()) {
    for (const auto& c : containers) {
      // (a member of another type, which the API refuses, was stored by older releases: "")
      auto text = [&c](const char* key) {
        const Json& v = Member(c, key);
        return v.is_string() ? v.get<std::string>() : std::string();
      };
      Json cs = {{"name", text("name")}, {"image", text("image")},
                 {"imageID", ""},        {"ready", ready},
                 {"started", on_node},   {"restartCount", restarts_before}};
      if (crash) {
        cs["restartCount"] = restarts_before + crash->restarts;
        SetCrashState(cs, *crash, *crash_spec, pod);
      } else {
        SetContainerState(cs, s, p, old_statuses, now, rules);
      }
      if (engine::IsFinal(s.phase))  // the restarts of a crash loop stay on the finished pod
        cs["restartCount"] =
            std::max(cs["restartCount"].get<int64_t>(), OldRestarts(old_statuses, cs["name"]));
      statuses.push_back(std::move(cs));
    }
  }
  if (!statuses.empty()) st["containerStatuses"] = std::move(statuses);
  st["qosClass"] = pod.contains("spec") ? QosClass(spec) : "BestEffort";
  out.status = std::move(st);
  return out;
}

bool Changes(const Json& pod, const PodStatusUpdate& u) {
  using json_member::Member;
  if (!pod.contains("status") || Member(pod, "status") != u.status) return true;
  const Json& spec = Member(pod, "spec");
  switch (u.node) {
    case PodStatusUpdate::Node::kSet:
      return !spec.is_object() || Member(spec, "nodeName") != u.node_name;
    case PodStatusUpdate::Node::kErase:
      return spec.is_object() && spec.contains("nodeName");
    case PodStatusUpdate::Node::kKeep:
      return false;
  }
  return false;
}

void ApplyPodStatus(Json& pod, PodStatusUpdate u) {
  if (u.node == PodStatusUpdate::Node::kSet)
    pod["spec"]["nodeName"] = std::move(u.node_name);
  else if (u.node == PodStatusUpdate::Node::kErase && pod.contains("spec") &&
           pod["spec"].is_object())
    pod["spec"].erase("nodeName");
  pod["status"] = std::move(u.status);
}

void SetPodStatus(Json& pod, const engine::WorkloadStatus& s,
                  const driver::PodCondition* disruption, Millis now, StatusRules rules) {
  ApplyPodStatus(pod, PodStatusOf(pod, s, disruption, now, rules));
}

// (Built member by member: an initializer list copies every value it holds, and this runs for
// every bind under the daemon's lock.)
Json KubeEvent(const engine::Event& e, const Json& involved, const std::string& name, Millis now) {
  const Json& meta = involved.at("metadata");
  const std::string ns = meta.value("namespace", "default");
  auto d = driver::PodEventOf(e, ns, meta.value("name", ""));
  if (!d) return nullptr;
  Json ev = Json::object();
  ev["apiVersion"] = "v1";
  ev["kind"] = "Event";
  Json& m = ev["metadata"];
  m["name"] = name;
  m["namespace"] = ns.empty() ? "default" : ns;
  m["creationTimestamp"] = KubeTime(now);
  Json& io = ev["involvedObject"];
  io["apiVersion"] = involved.value("apiVersion", "v1");
  io["kind"] = involved.value("kind", "");
  io["name"] = meta.value("name", "");
  io["uid"] = meta.value("uid", "");
  if (!ns.empty() && meta.contains("namespace")) io["namespace"] = ns;
  ev["reason"] = std::move(d->reason);
  ev["message"] = std::move(d->note);
  ev["type"] = d->warning ? "Warning" : "Normal";
  ev["source"]["component"] = "arbiter-scheduler";
  ev["reportingComponent"] = "arbiter-scheduler";
  ev["reportingInstance"] = "arbiter";
  std::string at = KubeTime(e.time);
  ev["firstTimestamp"] = at;
  ev["lastTimestamp"] = std::move(at);
  ev["count"] = 1;
  // The engine's facts next to its text: its machine-readable reason (Unschedulable, PDB, ...)
  // and, on Preempted / Reclaimed, the preemptor as the Event's related object.
  if (!d->engine_reason.empty()) m["annotations"]["arbiter.dev/reason"] = d->engine_reason;
  if (const size_t slash = d->related.find('/'); slash != std::string::npos) {
    Json& r = ev["related"];
    r["apiVersion"] = "v1";
    r["kind"] = "Pod";
    r["namespace"] = d->related.substr(0, slash);
    r["name"] = d->related.substr(slash + 1);
  }
  return ev;
}

}  // namespace arbiter::server

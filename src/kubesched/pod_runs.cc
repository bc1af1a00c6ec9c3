#include "kubesched/pod_runs.h"

#include <algorithm>
#include <set>

#include "adapters/json/member.h"
#include "kubesched/controller.h"

namespace arbiter::kubesched {

namespace pod_runs {

using json_member::Member;

std::string Text(const Json& j, const char* key) {
  const Json& v = Member(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::optional<Millis> Time(const Json& j, const char* key) {
  const std::string t = Text(j, key);
  if (t.empty()) return std::nullopt;
  auto ms = ParseRfc3339(t);
  return ms.ok() ? std::optional<Millis>(*ms) : std::nullopt;
}

// The latest finishedAt of the containers, when every container terminated.
std::optional<Millis> FinishedAt(const Json& status) {
  const Json& cs = Member(status, "containerStatuses");
  if (!cs.is_array() || cs.empty()) return std::nullopt;
  std::optional<Millis> last;
  for (const Json& c : cs) {
    auto at = Time(Member(Member(c, "state"), "terminated"), "finishedAt");
    if (!at) return std::nullopt;
    last = std::max(last.value_or(*at), *at);
  }
  return last;
}

}  // namespace pod_runs

void PodRuns::End(Run& r, Millis at) {
  r.ended = true;
  r.seg.end = std::max(at, r.seg.start);
}

void PodRuns::UpsertPod(const Json& pod, Millis now) {
  using pod_runs::Member;
  using pod_runs::Text;
  const Json& meta = Member(pod, "metadata");
  const Json& spec = Member(pod, "spec");
  const Json& status = Member(pod, "status");
  const std::string uid = Text(meta, "uid");
  if (uid.empty() || Text(spec, "schedulerName") != scheduler_name_) return;
  auto it = runs_.find(uid);
  if (it != runs_.end() && it->second.ended) return;  // a run ends once
  const auto start = pod_runs::Time(status, "startTime");
  const std::string node = Text(spec, "nodeName");
  if (!start || node.empty()) return;  // not running yet
  if (it == runs_.end()) {
    Run r;
    r.seg.namespace_ = Text(meta, "namespace");
    r.seg.workload = r.seg.namespace_ + "/" + Text(meta, "name");
    r.seg.node = node;
    r.seg.requests = PodRequests(pod);
    r.seg.start = *start;
    r.seg.usage_from_request = true;  // nothing measured here: the usage track is the request's
    if (auto n = nodes_.find(node); n != nodes_.end()) {
      r.seg.gpu_product = n->second.product;
      r.seg.gpu_replicas = n->second.replicas;
    }
    it = runs_.emplace(uid, std::move(r)).first;
  }
  const std::string phase = Text(status, "phase");
  if (phase == "Succeeded" || phase == "Failed") {
    const auto finished = pod_runs::FinishedAt(status);
    End(it->second, finished.value_or(now));
  }
}

void PodRuns::RemovePod(const Json& pod, Millis now) {
  UpsertPod(pod, now);  // its last state (a finish it carries)
  auto it = runs_.find(pod_runs::Text(pod_runs::Member(pod, "metadata"), "uid"));
  if (it != runs_.end() && !it->second.ended) End(it->second, now);
}

void PodRuns::SyncedPods(const std::vector<Json>& pods, Millis now) {
  std::set<std::string> present;
  for (const Json& p : pods) {
    present.insert(pod_runs::Text(pod_runs::Member(p, "metadata"), "uid"));
    UpsertPod(p, now);
  }
  for (auto& [uid, r] : runs_)  // gone while the watch was down
    if (!r.ended && !present.count(uid)) End(r, now);
}

void PodRuns::UpsertNode(const Json& node) {
  using pod_runs::Member;
  const Json& labels = Member(Member(node, "metadata"), "labels");
  NodeGpu g;
  g.product = pod_runs::Text(labels, "nvidia.com/gpu.product");
  const std::string replicas = pod_runs::Text(labels, "nvidia.com/gpu.replicas");
  if (!replicas.empty() && replicas.size() < 10 &&
      std::all_of(replicas.begin(), replicas.end(), [](char c) { return c >= '0' && c <= '9'; }))
    g.replicas = std::max<int64_t>(1, std::stoll(replicas));
  nodes_[pod_runs::Text(Member(node, "metadata"), "name")] = g;
}

void PodRuns::RemoveNode(const Json& node) {
  nodes_.erase(pod_runs::Text(pod_runs::Member(node, "metadata"), "name"));
}

void PodRuns::SyncedNodes(const std::vector<Json>& nodes) {
  nodes_.clear();
  for (const Json& n : nodes) UpsertNode(n);
}

std::vector<billing::RunSegment> PodRuns::Segments(Millis now) const {
  std::vector<billing::RunSegment> out;
  for (const auto& [uid, r] : runs_) {
    if (r.seg.start >= (r.ended ? r.seg.end : now)) continue;  // nothing held yet
    out.push_back(r.seg);
    if (!r.ended) out.back().end = now;
  }
  return out;
}

void PodRuns::Retire(Millis before) {
  std::erase_if(runs_,
                [&](const auto& kv) { return kv.second.ended && kv.second.seg.end <= before; });
}

}  // namespace arbiter::kubesched

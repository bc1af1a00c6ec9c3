#include "server/state/pdb_status.h"

#include <algorithm>
#include <map>
#include <string>

#include "server/state/pod_status.h"

namespace arbiter::server {

bool PodHealthy(const Json& pod) {
  if (!pod.is_object()) return false;
  if (pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp")) return false;
  if (!pod.contains("status") || !pod["status"].contains("conditions") ||
      !pod["status"]["conditions"].is_array())
    return false;
  for (const auto& c : pod["status"]["conditions"])
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "") == "True";
  return false;
}

bool PodFinished(const Json& pod) {
  if (!pod.contains("status") || !pod["status"].is_object()) return false;
  const std::string phase = pod["status"].value("phase", "");
  return phase == "Succeeded" || phase == "Failed";
}

bool PdbSelects(const PodDisruptionBudget& pdb, const Json& pod) {
  std::map<std::string, std::string> labels;
  if (pod.contains("metadata") && pod["metadata"].contains("labels") &&
      pod["metadata"]["labels"].is_object())
    for (const auto& [k, v] : pod["metadata"]["labels"].items())
      if (v.is_string()) labels[k] = v.get<std::string>();
  return pdb.selector.Matches(labels);
}

PdbCount PdbCountOf(const PodDisruptionBudget& pdb, const Json& pod) {
  if (!PdbSelects(pdb, pod) || PodFinished(pod)) return {};
  return {1, PodHealthy(pod) ? 1 : 0};
}

Json PdbStatus(const PodDisruptionBudget& pdb, const Json& pdb_object, PdbCount pods, Millis now) {
  const int64_t expected = pods.expected, healthy = pods.healthy;
  int64_t desired = 0;
  if (pdb.min_available)
    desired = pdb.min_available->Resolve(expected);
  else if (pdb.max_unavailable)
    desired = expected - pdb.max_unavailable->Resolve(expected);
  desired = std::max<int64_t>(0, desired);
  const int64_t allowed = expected <= 0 ? 0 : std::max<int64_t>(0, healthy - desired);
  const int64_t generation =
      pdb_object.contains("metadata") ? pdb_object["metadata"].value("generation", 1) : 1;

  // The DisruptionAllowed condition; its transition time moves only when its status changes.
  const std::string cond_status = allowed > 0 ? "True" : "False";
  std::string since = KubeTime(now);
  if (pdb_object.contains("status") && pdb_object["status"].is_object() &&
      pdb_object["status"].contains("conditions") && pdb_object["status"]["conditions"].is_array())
    for (const auto& c : pdb_object["status"]["conditions"])
      if (c.is_object() && c.value("type", "") == "DisruptionAllowed" &&
          c.value("status", "") == cond_status)
        since = c.value("lastTransitionTime", since);
  Json condition = {{"type", "DisruptionAllowed"},
                    {"status", cond_status},
                    {"reason", allowed > 0 ? "SufficientPods" : "InsufficientPods"},
                    {"message", ""},
                    {"observedGeneration", generation},
                    {"lastTransitionTime", since}};
  return {{"observedGeneration", generation}, {"disruptionsAllowed", allowed},
          {"currentHealthy", healthy},        {"desiredHealthy", desired},
          {"expectedPods", expected},         {"conditions", Json::array({std::move(condition)})}};
}

}  // namespace arbiter::server

// The request track of `arbiter scheduler --ledger` (docs/kubernetes.md, Metering): the runs of
// Arbiter's pods as the informers deliver them, bound -> running -> finished or deleted, as
// billing run segments. Pure: objects and `now` (wall-clock Unix ms) in, segments out.
//   start  status.startTime, set when the kubelet (KWOK) runs the pod; a pod bound but never
//          running holds nothing on the request track (as `arbiter meter`, which counts Running)
//   end    Succeeded or Failed: the latest containerStatuses[].state.terminated.finishedAt;
//          deleted while running: when the informer saw it leave (the delete, or a relist
//          without it); a run still going on is cut at `now`
//   node   spec.nodeName; the GPU product and replicas from the node's labels
//          (nvidia.com/gpu.product, nvidia.com/gpu.replicas) when the informers have the node
// A pod is Arbiter's when spec.schedulerName is the scheduler's name. Keyed by the pod's uid (a
// pod recreated under the same name is another run). The state is the cluster's: a scheduler
// that starts (or a standby that takes over) lists the pods and finds the same runs, with the
// same timestamps, so that writing their rows again changes nothing; a pod that finished and
// was deleted while no replica was leading is not seen.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/billing/run_segment.h"

namespace arbiter::kubesched {

class PodRuns {
 public:
  explicit PodRuns(std::string scheduler_name) : scheduler_name_(std::move(scheduler_name)) {}

  void SyncedPods(const std::vector<nlohmann::json>& pods, Millis now);
  void UpsertPod(const nlohmann::json& pod, Millis now);
  void RemovePod(const nlohmann::json& pod, Millis now);
  void SyncedNodes(const std::vector<nlohmann::json>& nodes);
  void UpsertNode(const nlohmann::json& node);
  void RemoveNode(const nlohmann::json& node);

  // The runs that ended, and those going on cut at `now` (none that starts at or after `now`),
  // in uid order.
  std::vector<billing::RunSegment> Segments(Millis now) const;
  // Forgets the runs that ended at or before `before` (their hours are written).
  void Retire(Millis before);
  size_t size() const { return runs_.size(); }

 private:
  struct Run {
    billing::RunSegment seg;  // end 0 while it goes on
    bool ended = false;
  };
  struct NodeGpu {
    std::string product;
    int64_t replicas = 1;
  };
  void End(Run& r, Millis at);

  std::string scheduler_name_;
  std::map<std::string, Run> runs_;  // by pod uid
  std::map<std::string, NodeGpu> nodes_;
};

}  // namespace arbiter::kubesched

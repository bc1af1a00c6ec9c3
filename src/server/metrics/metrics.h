// /metrics in the Prometheus text format (0.0.4), for `promtool check metrics` and a real
// Prometheus:
//   arbiter_pending_pods{namespace,reason}            pods waiting, by the engine's reason
//   arbiter_pods{phase}                               pods by phase
//   arbiter_quota_hard / arbiter_quota_used{namespace,resourcequota,resource}   (cores, bytes,
//   GPUs, counts)
//   arbiter_scheduling_decisions_total                engine events so far (since start-up)
//   arbiter_engine_events_total{event}                the same by type (Scheduled, Preempted,
//                                                     Reclaimed, FailedScheduling, ...)
//   arbiter_pod_scheduling_wait_seconds (histogram)   submission to first bind
//   arbiter_elasticquota_{min,max,used,borrowed,lent}{namespace,elasticquota,cohort,resource}
//   arbiter_fair_share{namespace,cohort}              weighted DRF share (core/engine/fair_share.h)
//   arbiter_journal_commits_total, arbiter_journal_records_total,
//   arbiter_journal_fsync_seconds (histogram)         the journal's group commits
// and the virtual nodes' pods in the shapes `arbiter meter` reads from a real cluster
// (docs/metering-live.md), so a Prometheus can meter virtual pods as it meters real ones:
//   kube_node_labels{node,label_nvidia_com_gpu_product,label_nvidia_com_gpu_replicas},
//   kube_pod_status_phase{namespace,pod,phase}, kube_pod_info{namespace,pod,node},
//   kube_pod_container_resource_requests{namespace,pod,container,node,resource,unit} (KSM),
//   container_cpu_usage_seconds_total, container_memory_working_set_bytes (cAdvisor; the
//   arbiter.dev/usage annotation, else the requests, over the current run),
//   DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace,pod,container,gpu,GPU_I_PROFILE} (dcgm-exporter: one
//   series per GPU, the GPU usage spread evenly).
//
// Taken in two steps so that a scrape holds the daemon's lock only to copy numbers:
// CollectMetrics (under the lock: values copied out of the cluster, nothing pointing into it), then
// RenderMetrics of those facts (after the lock is released: the text, most of the time).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/dashboard/quota_state.h"
#include "server/durability/journal.h"
#include "server/state/cluster.h"

namespace arbiter::server {

struct MetricsFacts {
  struct Workload {  // the engine's workload, with what the metrics add from the API's pod
    std::string namespace_, name, node, reason;
    bool pending = false;
    std::string container = "main";  // the pod's first container
    ResourceList requests, usage;    // usage: arbiter.dev/usage, else the requests
    Millis run_start = 0;
  };
  Millis now = 0;
  std::vector<Workload> workloads;
  std::map<std::string, int64_t> pod_phases;  // API pods by status.phase
  std::vector<engine::ResourceQuotaUsage> quota_usages;
  uint64_t decisions = 0;
  SchedulingStats stats;
  std::map<std::string, dashboard::QuotaState> quotas;
  std::vector<std::vector<std::pair<std::string, std::string>>> node_labels;
};

// A label value escaped as the Prometheus text format wants (\\, \" and \n).
std::string PrometheusLabelValue(const std::string& v);

// Under the daemon's lock.
MetricsFacts CollectMetrics(const Cluster& c, Millis now);
// Only the workloads holding `node` (none when it is not there), nothing else: for the node's own
// endpoints. O(the node's workloads).
MetricsFacts CollectNodeMetrics(const Cluster& c, const std::string& node, Millis now);

// A virtual node's metrics endpoints, as a real node serves them (a Prometheus shards its scrape by
// node): GET /api/v1/nodes/NODE/proxy/metrics/cadvisor (the kubelet's cAdvisor:
// container_cpu_usage_seconds_total, container_memory_working_set_bytes) and
// /api/v1/nodes/NODE/proxy/metrics/dcgm (dcgm-exporter's DCGM_FI_PROF_GR_ENGINE_ACTIVE; on a real
// cluster a pod of the exporter's DaemonSet on that node).
enum class NodeMetrics { kCadvisor, kDcgm };
std::string RenderNodeMetrics(const MetricsFacts& facts, NodeMetrics which);
// pod_usage: with the cAdvisor and dcgm-exporter series (else only the nodes' endpoints have them).
std::string RenderMetrics(const MetricsFacts& facts, const JournalStats& journal,
                          bool pod_usage = true);
// Both steps at once (tests, benchmarks).
std::string RenderMetrics(const Cluster& c, const JournalStats& journal, Millis now);

}  // namespace arbiter::server

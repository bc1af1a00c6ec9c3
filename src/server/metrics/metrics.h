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
//   kube_pod_status_phase{namespace,pod,phase} (finished pods too),
//   kube_pod_info{namespace,pod,node},
//   kube_pod_container_resource_requests{namespace,pod,container,node,resource,unit} (KSM),
//   container_cpu_usage_seconds_total, container_memory_working_set_bytes (cAdvisor; the
//   arbiter.dev/usage annotation, else the requests, over the current run),
//   DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace,pod,container,gpu,GPU_I_PROFILE} (dcgm-exporter: one
//   series per GPU, the GPU usage spread evenly).
//
// Taken in two steps so that a scrape holds the daemon's lock only to copy small aggregates:
// CollectMetrics (under the lock: the live workloads' table shared as it is (live_facts.h, no row
// copied), the counts the cluster keeps by phase, the quotas, the node labels cached until a Node
// changes; nothing pointing into the cluster), then RenderMetrics of those facts (after the lock
// is released: every per-pod series, the sums by namespace and reason, the text).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/dashboard/quota_state.h"
#include "server/durability/journal.h"
#include "server/metrics/live_facts.h"
#include "server/state/cluster.h"

namespace arbiter::server {

struct MetricsFacts {
  Millis now = 0;
  LiveFacts::View live;             // /metrics: every live workload, by id
  std::vector<LiveFact> node_rows;  // a node's endpoints: its workloads, in bind order
  std::shared_ptr<const LiveFacts::Strings> strings;  // what node_rows' strings point into
  std::map<std::string, int64_t> pod_phases;          // API pods by status.phase
  // Every stored Pod, shared (ObjectStore::Freeze), when some have finished: kube_pod_status_phase
  // shows the Succeeded and Failed ones too, as kube-state-metrics shows every pod it lists.
  ObjectStore::Objects::Frozen pods;
  std::vector<engine::ResourceQuotaUsage> quota_usages;
  uint64_t decisions = 0;
  SchedulingStats stats;
  // ElasticQuotas by namespace; `used` (the namespace's running requests) is summed from `live`
  // when the text is made.
  std::map<std::string, dashboard::QuotaState> quotas;
  std::shared_ptr<const NodeLabelRows> node_labels;

  template <typename F>
  void ForEachWorkload(F&& f) const {
    live.ForEach(f);
    for (const LiveFact& row : node_rows) f(row);
  }
};

// A label value escaped as the Prometheus text format wants (\\, \" and \n).
std::string PrometheusLabelValue(const std::string& v);
// A sample's value as every series here writes it: printf's "%.17g" (17 significant digits, so 0.1
// is 0.10000000000000001), +Inf, -Inf.
std::string PrometheusNumber(double v);
// The shortest text that reads back as `v`, as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it
// (what client_golang writes values and bucket bounds with): 0.005, 10, 1.2345678e+07, +Inf. A
// histogram's `le` is written so: a query matches it as text (`le="0.1"`, not the
// "0.10000000000000001" PrometheusNumber gives).
std::string GoNumber(double v);

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
// `tail` is written after the families, in the same buffer (the daemon's process and request
// families): the text is made in one buffer sized once, not copied.
std::string RenderMetrics(const MetricsFacts& facts, const JournalStats& journal,
                          bool pod_usage = true, std::string_view tail = {});
// Both steps at once (tests, benchmarks).
std::string RenderMetrics(const Cluster& c, const JournalStats& journal, Millis now);

}  // namespace arbiter::server

// `arbiter scheduler`'s I/O: informers (src/adapters/kubeclient/informer.h) for Nodes, Pods,
// Namespaces, ResourceQuotas, LimitRanges, PriorityClasses, PodDisruptionBudgets, batch/v1 Jobs
// and Arbiter's kinds (ElasticQuota, PoolPolicy, PriceBook, QoS), the Controller (controller.h)
// stepped on the wall clock, and its actions carried out on kube-apiserver:
//   Bind    POST /api/v1/namespaces/NS/pods/NAME/binding (a 409 reads the pod back: bound to the
//           same node by an earlier attempt, or by someone else)
//   Evict   POST .../pods/NAME/eviction, a policy/v1 Eviction (kube-apiserver checks the
//           PodDisruptionBudgets: 429 is retried later, never turned into a delete)
//   Status  PATCH .../pods/NAME/status (strategic merge): condition PodScheduled False, the
//           engine's reason code (Unschedulable, QuotaExceeded, ...) and message as
//           driver/pod_scheduling.h derives them; status.nominatedNodeName
//   Job     PATCH /apis/batch/v1/namespaces/NS/jobs/NAME (merge patch): spec.suspend and the
//           annotation arbiter.dev/admission (a Job admitted as a unit, controller_jobs.cc)
// The state is the cluster's: a restarted scheduler lists everything again and rebuilds.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/kubeclient/informer.h"
#include "adapters/kubeclient/kubeconfig_reader.h"
#include "core/status.h"
#include "kubesched/controller.h"
#include "kubesched/leader_election.h"
#include "kubesched/request_meter.h"

namespace arbiter::kubesched {

struct SchedulerOptions {
  kubeclient::KubeConfig kube;
  ControllerOptions controller;
  int watch_timeout_seconds = 300;
  // Connections that carry a cycle's API calls at once (action_pool.h).
  int api_connections = 16;
  // --leader-elect: act only while holding this Lease (lease_runner.h); the informers run either
  // way, so a standby takes over with its view of the cluster warm.
  std::optional<LeaseConfig> leader_election;
  std::function<void(const std::string&)> log;
  // Metering (docs/kubernetes.md), done only while this replica acts (leads, or runs alone).
  // --ledger: the request track of Arbiter's pods as the informers see them (pod_runs.h), handed
  // to a RequestMeter every `meter_every`.
  std::optional<RequestMeterOptions> request_meter;
  Millis meter_every = 60000;
  // --price-book: rate with these rather than the cluster's (--policy's and the PriceBook
  // objects).
  std::vector<PriceBook> price_books;
  // --meter-prometheus: starts the app's meter job (`arbiter serve`'s server::MeterJob) when this
  // replica starts acting, given a thread-safe source of the PriceBooks in force and the request
  // track of the informers (RequestTrackSource::Track, for MeterJobOptions::request_track); what
  // it returns is released (the job stopped) when the scheduler stops.
  using RequestTrackFn =
      std::function<std::optional<billing::RequestTrack>(Millis from, Millis to, bool closed)>;
  std::function<Result<std::shared_ptr<void>>(std::function<std::vector<PriceBook>()>,
                                              RequestTrackFn)>
      start_usage_meter;
};

// Checks that the API server answers (GET /version with the kubeconfig's credentials, then a
// list of nodes the credentials may read): a clear error otherwise.
Status CheckApiServer(const kubeclient::KubeConfig& kube);

// Runs until `stop` is set. An error when it cannot start, or when it led and lost the Lease (the
// process then exits, as kube-scheduler does: a replica that cannot renew must stop acting).
Status RunScheduler(const SchedulerOptions& options, const std::atomic<bool>& stop);

// The kinds the informers list and watch, one informer each: core/api_kinds.h's (batch/v1 Jobs
// among them) but Events, which are written, not read.
std::vector<kubeclient::ResourceSpec> InformerResources();

}  // namespace arbiter::kubesched

// batch/v1 Jobs on `arbiter serve`'s virtual nodes: what kube-controller-manager's Job controller
// (pkg/controller/job) decides, as pure functions of a Job and its pods. The Cluster runs them
// after every mutation (cluster_jobs.cc) and carries the decisions out through its own create,
// update and delete steps, so the pods a Job makes are validated, quota-checked, scheduled and
// billed as a user's, and a replay of the journal makes the same decisions at the same instants.
//
// Non-indexed Jobs only (completionMode Indexed is refused). Per Job, at instant `now`:
//   pods       the pods labelled batch.kubernetes.io/controller-uid = the Job's uid. Made from
//              spec.template: name JOB-xxxxx (5 of kube's name characters), labels
//              batch.kubernetes.io/job-name, batch.kubernetes.io/controller-uid, job-name,
//              controller-uid, an ownerReference to the Job (controller: true), and finalizer
//              batch.kubernetes.io/job-tracking, which is taken off once the pod is counted.
//   counting   a finished pod (Succeeded / Failed) still carrying the finalizer adds to
//              status.succeeded / status.failed; pods being deleted (suspend, deadline, backoff
//              limit, a user's delete) are not counted, as upstream.
//   active     pods not finished and not being deleted. Wanted: parallelism, at most the
//              completions left (completions - succeeded); with completions unset ("work queue"),
//              none once a pod has succeeded. Missing ones are made, extra ones deleted (pending
//              first, then the newest).
//   suspend    active pods deleted, condition Suspended (JobSuspended), startTime cleared (the
//              deadline's timer restarts on resume); resuming sets Suspended False (JobResumed).
//   finish     Complete when succeeded reaches completions (unset: one succeeded and none
//              active), with completionTime; Failed (BackoffLimitExceeded) when failed exceeds
//              spec.backoffLimit (default 6), Failed (DeadlineExceeded) at startTime +
//              activeDeadlineSeconds; a failed Job's active pods are deleted. A finished Job is
//              not changed again.
// Not modelled: the retry back-off delay between failed pods (a failed pod is replaced at once),
// podFailurePolicy, successPolicy, indexed completion, Orphan propagation. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/duration.h"

namespace arbiter::server {

using Json = nlohmann::json;

inline constexpr char kJobNameLabel[] = "batch.kubernetes.io/job-name";
inline constexpr char kControllerUidLabel[] = "batch.kubernetes.io/controller-uid";
inline constexpr char kJobTrackingFinalizer[] = "batch.kubernetes.io/job-tracking";

// The Job's spec checked as kube-apiserver's batch validation does (the pod template as a Pod:
// `template_errors`, from the caller's pod validation, are added under spec.template).
Diagnostics ValidateJob(const Json& job, const std::string& display_name);
// The Job with the server's defaults (parallelism 1, backoffLimit 6, completionMode NonIndexed,
// suspend false, the generated selector and template labels; the Job's labels are the template's
// when it has none), given its uid.
void DefaultJob(Json& job, const std::string& uid);
// The Pod object spec.template makes, without its name (the caller picks a free one).
Json PodFromTemplate(const Json& job);
// The `n`-th candidate name of a Job's pod: JOB-xxxxx, from a hash of the Job's uid and n.
std::string JobPodName(const Json& job, uint64_t n);

// Whether the Job has condition Complete or Failed True.
bool JobFinished(const Json& job);
// When the Job's activeDeadlineSeconds runs out, if it runs and has one.
std::optional<Millis> JobDeadline(const Json& job);

// One Job's decisions at `now`, given its pods (any order).
struct JobEvent {
  bool warning = false;
  std::string reason;  // Completed, BackoffLimitExceeded, DeadlineExceeded, Suspended, Resumed
  std::string message;
};
struct JobPlan {
  Json status;                       // the new status (equal to the old one: nothing to write)
  std::vector<JobEvent> events;      // the Job's condition changes, as the controller reports them
  int create = 0;                    // pods to make from the template
  std::vector<std::string> remove;   // pods to delete
  std::vector<std::string> counted;  // finished pods whose finalizer comes off
};
JobPlan PlanJob(const Json& job, const std::vector<const Json*>& pods, Millis now);

}  // namespace arbiter::server

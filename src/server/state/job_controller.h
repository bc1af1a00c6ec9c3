// batch/v1 Jobs on `arbiter serve`'s virtual nodes: what kube-controller-manager's Job controller
// (pkg/controller/job) decides, as pure functions of a Job and its pods. The Cluster runs them
// after every mutation (cluster_jobs.cc) and carries the decisions out through its own create,
// update and delete steps, so the pods a Job makes are validated, quota-checked, scheduled and
// billed as a user's, and a replay of the journal makes the same decisions at the same instants.
//
// Per Job, at instant `now`:
//   pods       the pods labelled batch.kubernetes.io/controller-uid = the Job's uid. Made from
//              spec.template: name JOB-xxxxx (5 of kube's name characters), labels
//              batch.kubernetes.io/job-name, batch.kubernetes.io/controller-uid, job-name,
//              controller-uid, an ownerReference to the Job (controller: true), and finalizer
//              batch.kubernetes.io/job-tracking, which is taken off once the pod is counted.
//   counting   a finished pod still carrying the finalizer adds to status.succeeded /
//              status.failed, and the finalizer comes off (status.uncountedTerminatedPods stays
//              empty: both happen in one step). Failed is kube's isPodFailed: phase Failed, or,
//              under podReplacementPolicy TerminatingOrFailed, being deleted and not Succeeded (a
//              user's delete counts as a failure at once). Pods the controller deletes itself
//              (suspend, surplus) lose the finalizer first and are not counted; once the Job
//              fails, its unfinished pods are counted as failed (kube: "every non-terminated pod
//              is considered failed").
//   replace    spec.podReplacementPolicy (default: Failed with a podFailurePolicy, else
//              TerminatingOrFailed): under Failed a terminating pod (being deleted, not finished)
//              keeps its place (and its index) until it has failed; status.terminating counts
//              them either way.
//   active     pods not finished and not being deleted. Wanted: parallelism, at most the
//              completions left (completions - succeeded); with completions unset ("work queue"),
//              none once a pod has succeeded. Missing ones are made, extra ones deleted (pending
//              first, then the newest).
//   per sync   at most `limit` (the Cluster's SyncBudget, 200, or what is left of an advance's
//              budget; never over kMaxPodCreateDeletePerSync, kube's MaxPodCreateDeletePerSync)
//              pods made and at most as many deleted by one plan (surplus, suspend, a finished
//              Job's active pods alike); the rest at the next sync, at once (JobPlan::more). The
//              finalizers of the finished pods counted all come off in one plan; an ending Job's
//              unfinished ones at most as many a plan, the ones it deletes first (JobRules).
//   back-off   after failures, missing pods are made only once 10 s x 2^(n-1) (at most 10 min,
//              kube's DefaultJobPodFailureBackOff / MaxJobPodFailureBackOff) have passed since
//              the last failure, n = the failed pods that finished after the last succeeded one
//              (finish times: the containers' finishedAt, else Ready turning False, else the
//              deletion). Derived from the pods present and the finishes of counted pods since
//              gone (a deleted pod's failure backs off its replacement, as kube's in-memory
//              record does); JobPlan::due says when to look again.
//   indexed    completionMode Indexed: each pod gets a completion index (the lowest neither
//              completed nor running): annotation and label batch.kubernetes.io/
//              job-completion-index, hostname JOB-INDEX, name JOB-INDEX-xxxxx, env
//              JOB_COMPLETION_INDEX; an index completes once (status.completedIndexes, as
//              "0-3,5"; succeeded = completed indexes); pods of a completed or repeated index are
//              deleted.
//   suspend    active pods deleted, condition Suspended (JobSuspended), startTime cleared (the
//              deadline's timer restarts on resume); resuming sets Suspended False (JobResumed).
//   finish     in kube's order: a SuccessCriteriaMet or FailureTarget already there; failure
//              with reason PodFailurePolicy (below), BackoffLimitExceeded (failed exceeds
//              spec.backoffLimit, default 6), DeadlineExceeded (startTime +
//              activeDeadlineSeconds), MaxFailedIndexesExceeded or FailedIndexes (below):
//              condition FailureTarget, the active pods deleted, then Failed (same reason and
//              message, the Warning event) once none is left terminating; success
//              (spec.successPolicy, below, or succeeded reaching completions; unset: one
//              succeeded and none active): condition SuccessCriteriaMet, the active pods deleted,
//              then Complete (same reason and message) with completionTime once no pod is left
//              running or terminating. A finished Job is not changed again. A Job being deleted
//              (Foreground propagation) only counts its pods.
//   policy     spec.podFailurePolicy: the first rule a failed pod matches (a container's non-zero
//              exit code In / NotIn the rule's values, or a pod condition): FailJob fails the Job
//              (PodFailurePolicy), FailIndex fails the pod's index (below), Ignore neither counts
//              the pod nor backs off, Count as without.
//   success    spec.successPolicy (Indexed): the first rule whose succeededIndexes all completed
//              (or succeededCount of them), or with succeededCount alone that many indexes:
//              SuccessCriteriaMet, reason SuccessPolicy, "Matched rules at index N".
//   per index  spec.backoffLimitPerIndex (Indexed; backoffLimit then defaults to MaxInt32): an
//              index's failures are counted in its pods' annotation batch.kubernetes.io/
//              job-index-failure-count (and -ignored-failure-count): the replacement of a failed
//              pod carries its count + 1, and the failed pod keeps its finalizer (is not counted)
//              until then. A failed pod whose count reached the limit, or that matched FailIndex,
//              fails its index (status.failedIndexes, written as completedIndexes; no new pod for
//              it). An index's replacement waits the back-off of its own failures (no Job-wide
//              back-off). More failed indexes than spec.maxFailedIndexes: Failed
//              (MaxFailedIndexesExceeded); every index done and some failed: Failed
//              (FailedIndexes).
//   OnFailure  spec.template.spec.restartPolicy OnFailure: a failed container is restarted in
//              place (pod_status.h, CrashLoopAt); the restartCounts of the Running and Pending
//              pods reaching spec.backoffLimit (above 0 with a limit of 0) fails the Job
//              (BackoffLimitExceeded, kube's pastBackoffLimitOnFailure), besides the failed pods.
//   managedBy  spec.managedBy other than kubernetes.io/job-controller: another controller's Job
//              (Kueue's MultiKueue); the built-in one makes no pod and writes no status for it.
// Pure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/duration.h"

namespace arbiter::server {

using Json = nlohmann::json;

inline constexpr char kJobNameLabel[] = "batch.kubernetes.io/job-name";
inline constexpr char kControllerUidLabel[] = "batch.kubernetes.io/controller-uid";
inline constexpr char kJobTrackingFinalizer[] = "batch.kubernetes.io/job-tracking";
inline constexpr char kJobCompletionIndex[] = "batch.kubernetes.io/job-completion-index";
inline constexpr char kJobControllerName[] = "kubernetes.io/job-controller";
// The most pods one sync of a Job makes, and the most it deletes (kube's
// MaxPodCreateDeletePerSync): the rest at the next sync (JobPlan::more).
inline constexpr int kMaxPodCreateDeletePerSync = 500;

// The Job's spec checked as kube-apiserver's batch validation does (the pod template as a Pod:
// `template_errors`, from the caller's pod validation, are added under spec.template).
Diagnostics ValidateJob(const Json& job, const std::string& display_name);
// The Job with the server's defaults (parallelism 1, backoffLimit 6 (MaxInt32 with
// backoffLimitPerIndex), completionMode NonIndexed,
// suspend false, the generated selector and template labels; the Job's labels are the template's
// when it has none), given its uid.
void DefaultJob(Json& job, const std::string& uid);
// The Pod object spec.template makes, without its name (the caller picks a free one); with a
// completion `index` (>= 0, Indexed Jobs) its annotation, label, hostname and env variable.
Json PodFromTemplate(const Json& job, int64_t index = -1);
// A candidate name of a Job's pod: JOB-xxxxx (JOB-INDEX-xxxxx with an index), five letters of
// kube's random-name alphabet from a hash of the Job's uid and `salt` (the caller's: another salt
// when a pod holds the name; Cluster::CreateJobPods).
std::string JobPodName(const Json& job, std::string_view salt, int64_t index = -1);
// Completion indexes as status.completedIndexes writes them ("0-3,5"; two in a row: "1,2"), and
// read back (bad text: the indexes it could read).
std::string FormatIndexes(const std::vector<int64_t>& sorted);
std::vector<int64_t> ParseIndexes(const std::string& text);

// Whether the built-in Job controller manages the Job: spec.managedBy unset or
// kubernetes.io/job-controller (kube's managedByExternalController is nil).
bool JobManagedHere(const Json& job);
// Whether the Job has condition Complete or Failed True.
bool JobFinished(const Json& job);
// Whether the Job, its own controller's (JobManagedHere), has condition FailureTarget True and
// not yet Failed: it fails once its pods are gone, and (JobRules::kCurrent) its syncs count its
// unfinished pods as failed, being deleted or not.
bool JobFailing(const Json& job);
// When the Job's activeDeadlineSeconds runs out, if it runs and has one.
std::optional<Millis> JobDeadline(const Json& job);
// When a finished Job with spec.ttlSecondsAfterFinished expires (kube's TTL-after-finished
// controller: the Complete or Failed condition's lastTransitionTime plus the TTL), if it does.
std::optional<Millis> JobExpiry(const Json& job);

// What the Job controller reads of one of its pods, taken from the pod as it is written (the
// Cluster keeps a Job's, cluster_jobs.cc), so that a sync of a big Job parses none of its pods:
// only a rule that needs more (a failed pod's podFailurePolicy match) reads the pod whole
// (JobPodView::tree).
struct JobPodFacts {
  enum class Phase : uint8_t { kOther, kPending, kRunning, kSucceeded, kFailed };
  std::string name;
  Millis created = 0;  // metadata.creationTimestamp, unix ms (0 if unset or unreadable)
  Millis finished =
      0;  // kube's getFinishedTime, unix ms, of a finished or terminating pod (else 0)
  int32_t restarts = 0;  // the containers' and init containers' restartCounts, summed (capped)
  int32_t index = -1;    // the completion index (Indexed Jobs), -1 if none or not a number
  int32_t failures = 0;  // batch.kubernetes.io/job-index-failure-count (0 if bad)
  int32_t ignored_failures = 0;  // ...-ignored-failure-count (0 if bad)
  Phase phase = Phase::kOther;
  bool deleting = false;    // metadata.deletionTimestamp set
  bool tracked = false;     // carries the batch.kubernetes.io/job-tracking finalizer
  bool ready = false;       // condition Ready True (kube's podutil.IsPodReady)
  bool bound = false;       // spec.nodeName set
  bool crash_loop = false;  // restartPolicy OnFailure and a failing run (pod_status.h)

  static JobPodFacts Of(const Json& pod);
  bool terminal() const { return phase == Phase::kSucceeded || phase == Phase::kFailed; }
  bool operator==(const JobPodFacts&) const = default;
};
// A Job's pods' facts, one a name, in name order, with counts and lists kept as pods come, change
// and go, so that a sync of a Job reads none of its active pods but those it deletes or counts
// (PlanJob walks `others`, reads the counts and takes the first of the lists it needs; only an
// Indexed Job's plan walks every active pod, for their indexes).
// The Cluster keeps one a Job (cluster_jobs.cc: JobPodTableOf; CheckJobPodFacts checks it against
// one made afresh).
struct JobPodTable {
  struct ByName {
    using is_transparent = void;
    bool operator()(const JobPodFacts& a, const JobPodFacts& b) const { return a.name < b.name; }
    bool operator()(const JobPodFacts& a, std::string_view b) const { return a.name < b; }
    bool operator()(std::string_view a, const JobPodFacts& b) const { return a < b.name; }
    bool operator()(const JobPodFacts* a, const JobPodFacts* b) const { return a->name < b->name; }
  };
  // The order in which a Job deletes active pods (kube's controller.ActivePods ranking,
  // shortened): pending (unbound) before bound, then the newest, then by name, descending.
  struct BySurplus {
    bool operator()(const JobPodFacts* a, const JobPodFacts* b) const;
  };
  using Pods = std::set<JobPodFacts, ByName>;
  using Others = std::set<const JobPodFacts*, ByName>;
  using Active = std::set<const JobPodFacts*, BySurplus>;

  JobPodTable() = default;
  JobPodTable(JobPodTable&&) = default;  // (the lists point into `pods`: no copy)
  JobPodTable& operator=(JobPodTable&&) = default;

  // `f` added, unless a pod of its name is there (Erase it first to replace it).
  void Add(JobPodFacts f);
  void Erase(std::string_view name);

  const Pods& pods() const { return pods_; }
  // The pods not active: finished (Succeeded, Failed) or being deleted, in name order.
  const Others& others() const { return others_; }
  // The active pods (neither finished nor being deleted), in BySurplus order, so that a sync
  // deleting some (surplus, or all of them: an ending or suspended Job) ranks none: it takes the
  // first ones, as many as its limit leaves room for.
  const Active& active_pods() const { return active_pods_; }
  // The tracked pods (carrying the finalizer) not finished: active, and being deleted, each in
  // name order (an ending Job counts them, JobRules; podReplacementPolicy decides whether the
  // ones being deleted are among them).
  const Others& tracked_active() const { return tracked_active_; }
  const Others& tracked_terminating() const { return tracked_terminating_; }
  // Active: how many, and how many of them are Ready (status.ready).
  int64_t active() const { return static_cast<int64_t>(active_pods_.size()); }
  int64_t ready() const { return ready_; }
  // The restartCounts of the Running and Pending pods (being deleted or not), summed.
  int64_t restarts() const { return restarts_; }
  // Restarted in place (JobPodFacts::crash_loop).
  int64_t crash_loops() const { return crash_loops_; }
  // The same facts and counts (CheckJobPodFacts: a kept table against one made afresh).
  bool operator==(const JobPodTable& o) const;

 private:
  void Count(const JobPodFacts& f, int64_t d);
  // `f(list)` for each list `p` belongs in (Add puts it in, Erase takes it out).
  template <class F>
  void ForListsOf(const JobPodFacts& p, F f);
  Pods pods_;
  Others others_, tracked_active_, tracked_terminating_;
  Active active_pods_;
  int64_t ready_ = 0, restarts_ = 0, crash_loops_ = 0;
};

// A Job's pods as PlanJob reads them: their facts, and a pod's whole object (valid while the pods
// are not written).
struct JobPodView {
  const JobPodTable& table;
  std::function<const Json&(const JobPodFacts&)> tree;
};

// One Job's decisions at `now`, given its pods.
struct JobEvent {
  bool warning = false;
  std::string reason;  // Completed, Suspended, Resumed, or the Failed condition's reason
  std::string message;
};
struct JobPlan {
  Json status;                    // the new status (equal to the old one: nothing to write)
  std::vector<JobEvent> events;   // the Job's condition changes, as the controller reports them
  int create = 0;                 // pods to make from the template
  std::vector<int64_t> indexes;   // Indexed: the completion index of each pod to make
  std::vector<Json> annotations;  // backoffLimitPerIndex: each pod's failure-count annotations
  std::optional<Millis> due;      // when time alone changes the plan (deadline, back-off)
  // More pods to make or delete than one sync may (kMaxPodCreateDeletePerSync): `create` and
  // `remove` hold the first of them and the status counts the others as still active; or (an
  // ending Job, JobRules::kCurrent) more unfinished pods to count, `counted` the first of them.
  // The caller syncs the Job again at once (`due` does not say so: a refused create backs off
  // instead).
  bool more = false;
  std::vector<std::string> remove;   // pods to delete
  std::vector<std::string> counted;  // pods whose finalizer comes off (counted or not)
  // The pods counted now as succeeded (true) or failed, with their finish times: kube's back-off
  // record keeps them after the pods are gone (the caller remembers them, below).
  std::map<std::string, std::pair<Millis, bool>> finishes;
};
// `remembered`: finishes of earlier plans (JobPlan::finishes) whose pods may be gone since.
using JobFinishes = std::map<std::string, std::pair<Millis, bool>>;
// The rules of which release. Which pods make the back-off record: kCurrent and kFormat7 (kube's:
// the pods it counted), and kFormat10 and kFormat9 as well: the finished pods the Job counts now
// or counted (remembered, or terminal and no longer tracked); a terminating pod it never counted
// (deleted by a suspend, or as surplus) is no failure, and no podFailurePolicy rule is matched
// against it. kFormat4: that one too, as the releases of journal formats 1-4 did
// (Cluster::SetFormat4Jobs). How many pods a plan makes or deletes: kCurrent, kFormat10 and
// kFormat9 at most kMaxPodCreateDeletePerSync of each; kFormat7 and kFormat4 every one, as the
// releases of journal formats 1-7 did (Cluster::SetFormat7Jobs). `limit` (kCurrent, kFormat10,
// kFormat9; at least 1): fewer than kMaxPodCreateDeletePerSync, a request's own sync's budget
// (Cluster::SyncBudget) or what is left of the clock's for one advance (Cluster::RunJobs). A Job
// being deleted (Foreground): kCurrent and kFormat10 take the tracking finalizer off its finished
// pods only (the garbage collector takes it off the others as it deletes them,
// Cluster::CollectJobPods); kFormat9 and older off every pod in one sync. A Job that ends
// (FailureTarget, SuccessCriteriaMet): kCurrent counts at most `limit` of its unfinished pods in
// one sync (takes their finalizers off; failing, adds them to status.failed), the ones it deletes
// then first, the rest at the next syncs (JobPlan::more); kFormat10 and older every one at once, as
// the releases of journal formats 1-10 did. So does a Job being deleted that was ending
// (FailureTarget, SuccessCriteriaMet) under kCurrent: a failing one's pods the garbage collector
// deletes and leaves their finalizers to it (JobFailing; kube's controller counts a deleted Job's
// pods as failed once its FailureTarget is set); kFormat10, a Job being deleted counted none.
enum class JobRules { kCurrent, kFormat10, kFormat9, kFormat7, kFormat4 };
JobPlan PlanJob(const Json& job, const JobPodView& pods, Millis now,
                const JobFinishes& remembered = {}, JobRules rules = JobRules::kCurrent,
                int64_t limit = kMaxPodCreateDeletePerSync);
// The same from the pods' objects (their facts taken here; of two pods of one name, the first).
JobPlan PlanJob(const Json& job, const std::vector<const Json*>& pods, Millis now,
                const JobFinishes& remembered = {}, JobRules rules = JobRules::kCurrent,
                int64_t limit = kMaxPodCreateDeletePerSync);

}  // namespace arbiter::server

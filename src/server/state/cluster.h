// The daemon's state machine: the API objects (ObjectStore), the engine, and the virtual nodes'
// work model, changed only by Mutations. Deterministic: the same mutations (with their times)
// give the same objects, resourceVersions, uids, events and scheduling decisions, which is what
// makes the journal (journal.h) a complete record: start-up replays it, each mutation with the
// engine commands it gave the engine (Replay: nothing is judged again; docs/serve.md). Pure: no
// I/O, no threads, no clock (every mutation carries its time); not thread-safe (the daemon locks
// it).
//
// What a mutation does:
//   create / update  The object is validated exactly as `arbiter validate` does (the YAML loader
//                    reads the JSON, then the cross-object rules against the stored policy
//                    objects); errors refuse it (nothing changes). It becomes the engine's Upsert
//                    command (a Pod: SubmitPod; a Pod update may change metadata only), then a
//                    Tick at the same instant.
//   delete           The engine's Delete command (a running Pod gets SIGTERM and stays, with
//                    metadata.deletionTimestamp, until its work model exits), then a Tick.
//   evict            (a delete with `eviction`: pods/eviction, disruption.cc) A running pod is
//                    deleted only if its PodDisruptionBudget allows a disruption (else 429), with
//                    condition DisruptionTarget (EvictionByEvictionAPI); pending, finished or
//                    terminating pods are deleted at once, as kube-apiserver does.
//   dry run          (`dry_run`: ?dryRun=All) Validated and checked as above, answered with the
//                    object as it would be, and nothing changes (never journaled).
//   advance          The work model's timers due by then (runs completing, signalled pods
//                    exiting), then a Tick (also due at Engine::NextWakeup).
// After each, the pods the engine's events touched get their status rebuilt (pod_status.h) and
// the events become core/v1 Events (the newest kMaxEvents are kept).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/yaml/manifest_loader.h"
#include "core/diagnostics.h"
#include "core/engine/engine.h"
#include "core/objects.h"
#include "driver/pod_scheduling.h"
#include "driver/work_model.h"
#include "server/durability/command_tape.h"
#include "server/metrics/live_facts.h"
#include "server/metrics/scheduling_stats.h"
#include "server/state/chunk_map.h"
#include "server/state/event_book.h"
#include "server/state/event_correlator.h"
#include "server/state/event_text.h"
#include "server/state/kind_table.h"
#include "server/state/object_store.h"
#include "server/state/pdb_status.h"

namespace arbiter::driver {
class Recorder;
}

namespace arbiter::server {

struct JobPlan;          // job_controller.h
struct JobPodView;       // job_controller.h
enum class JobRules;     // job_controller.h
enum class StatusRules;  // pod_status.h
struct JobPodTable;      // job_controller.h
class SnapshotCapture;   // cluster_snapshot.h

struct Mutation {
  enum class Op { kCreate, kUpdate, kDelete, kAdvance };
  Op op = Op::kAdvance;
  Millis time = 0;   // Unix ms (the wall clock when it was accepted)
  std::string kind;  // "Pod", "Node", ... (create, update, delete)
  std::string namespace_;
  std::string name;
  Json object;                         // create / update: the whole object
  std::optional<Millis> grace_period;  // delete: DeleteOptions.gracePeriodSeconds
  std::string propagation;    // delete: DeleteOptions.propagationPolicy (Orphan, Background,
                              // Foreground; "" for the kind's default)
  bool force_status = false;  // update of the status subresource (Nodes only)
  bool eviction = false;      // delete: through pods/eviction (PDBs are checked)
  bool dry_run = false;       // ?dryRun=All: nothing changes (not journaled)
  // delete: DeleteOptions.preconditions (none when not given; "" is one, as kube-apiserver's
  // non-nil empty pointer), checked against the stored object: 409 Conflict when either differs.
  // Not journaled (a record holds a delete that passed them).
  std::optional<std::string> precondition_uid, precondition_rv;

  // One line of JSON (the journal's record) and back.
  std::string Encode() const;
  // Encode() in two steps, so that the object is serialized before the daemon's lock is taken:
  // EncodeBody() has every field but the time, WithTime() puts the time in.
  std::string EncodeBody() const;
  static std::string WithTime(const std::string& body, Millis time);
  static Result<Mutation> Decode(const std::string& text);
};

// Why a mutation was refused, in Kubernetes' terms (the HTTP layer renders a Status body).
struct ApiError {
  enum class Reason {
    kNotFound,           // the object
    kNamespaceNotFound,  // the namespace of the object (404 naming the namespace)
    kAlreadyExists,
    kConflict,
    kInvalid,
    kBadRequest,
    kMethodNotAllowed,
    kUnavailable,
    kTooManyRequests,  // an eviction a PodDisruptionBudget refuses (429, DisruptionBudget cause)
    kForbidden,  // an admission plugin's refusal (LimitRanger): 403 `pods "x" is forbidden: ...`
    kInternal,   // 500 with the message as is
    kTooLarge    // 413: the object is larger than kube::kMaxObjectBytes as stored
  };
  Reason reason = Reason::kBadRequest;
  std::string kind;  // of the object concerned ("Namespace" when the namespace is missing)
  std::string name;
  std::string message;      // the engine's or a Kubernetes-style text
  Diagnostics diagnostics;  // kInvalid from the validator: its field-level errors
  std::string cause;        // kTooManyRequests: the DisruptionBudget cause's message; kForbidden:
                            // NamespaceTerminating's
};

struct MutationResult {
  std::optional<ApiError> error;
  Json object;                         // the object after the change (delete: its last state)
  std::shared_ptr<const Json> stored;  // the same, as stored (Cluster::ApplyShared sets only this)
  // A create's or update's stored object (its wire text: the response's bytes, made once for the
  // response, the watchers and the compact store); Daemon::Mutate(m, false) answers only this.
  std::shared_ptr<const StoredObject> stored_object;
  // Its wire text, as Daemon::Mutate made it outside the lock (the response's bytes; the store
  // keeps it packed): "" when not made.
  std::string text;
  std::vector<std::string> warnings;  // the validator's warnings (kubectl prints them)
  bool ok() const { return !error; }
};

class Cluster {
 public:
  // `uid_prefix`: 8 hex digits that make this data directory's uids unique.
  explicit Cluster(std::string uid_prefix);
  ~Cluster();
  Cluster(const Cluster&) = delete;  // (its store's observer holds `this`)
  Cluster& operator=(const Cluster&) = delete;

  // The loader's work on a create or update, which depends on the request alone: done by
  // Prepare() before taking the daemon's lock, so requests are parsed in parallel. Apply(m, &p)
  // gives the same result as Apply(m).
  struct Prepared {
    std::optional<yaml::ManifestLoad> load;
  };
  static Prepared Prepare(const Mutation& m);
  MutationResult Apply(const Mutation& m, const Prepared* prepared = nullptr);
  // Apply() without copying the object into the result (only `stored` is set): the daemon
  // copies it after letting go of its lock, replay does not need it.
  MutationResult ApplyShared(const Mutation& m, const Prepared* prepared = nullptr);

  // Journal format 2 (command_tape.h). TakeTape(): the engine commands the last ApplyShared gave
  // the engine, encoded (the daemon journals them beside the mutation). Replay(m, tape): applies
  // a journaled mutation without judging it again: the object is stored as it was accepted, the
  // engine gets the tape's commands instead of the ones the loader, the validator and admission
  // would derive, and the steps the tape does not record (server fields, statuses, Events, the
  // Job controller's plans) are derived as when it was applied. An error means the journal
  // contradicts itself. FinishReplay(): after the last Replay, the views read from the stored
  // objects (usage annotations) are read again.
  std::string TakeTape() { return tape_.Take(); }
  Status Replay(const Mutation& m, CommandTape& tape);
  void FinishReplay() { RestoreUsage(); }
  // Format 1 records (no tape) are replayed as requests; `on` while they are: the admission
  // rules added since format 1's releases (a create no quota can ever admit, 403; an update
  // setting a pending pod's node, 422) do not refuse what those releases accepted and stored.
  void SetReplayingRequests(bool on) { replaying_requests_ = on; }
  // How a pending pod's status follows the engine's text, which moves without an Event (one Event
  // per kind of reason per pending spell). Off (the default, journal format 4): the pods the
  // engine restated (EventSink::OnRestated) are rewritten after each cycle, O(restated). On: as
  // the releases of journal formats 1-3 did, every pending pod is read after each cycle that
  // decided more than arrivals, and after a deadline was set, O(pending) (RefreshPending); their
  // records are replayed so, to the resourceVersions those releases served.
  void SetPendingWalk(bool on);
  // The Job controller's rules. Off (the default, journal format 5): a Job's pods are named from
  // its uid and the store's resourceVersion at the create, so a replacement never takes the name
  // of an earlier pod; the back-off counts the failures the Job counted (JobRules::kCurrent). On:
  // as the releases of journal formats 1-4 did, names from the uid and a count from 0 at each sync
  // (the first name no pod held then: a pod deleted and replaced came back under its own name),
  // and pods a suspend deleted backed the resume off (JobRules::kFormat4); their records are
  // replayed so, to the names and instants those releases served.
  // Turned off, every Job is planned again at the next mutation, by the new rules (as a restore
  // does: a snapshot taken after the switch restores to the same plans).
  void SetFormat4Jobs(bool on);
  // The rules journal format 6 brought. Off (the default): a pod is stored with what
  // kube-apiserver writes into it (pod_defaults.h: a limit without a request requests it, a create
  // gets its namespace's LimitRange defaults and the kubernetes.io/limit-ranger annotation), and a
  // finished container's state has its startedAt (StatusRules::kCurrent). On: as the releases of
  // journal formats 1-5 did, the pod is stored as sent (the engine charged the defaults all the
  // same) and startedAt is left out; their records are replayed so, to the objects they served.
  void SetFormat5Rules(bool on) { format5_rules_ = on; }
  // The rules journal format 7 brought. Off (the default): a deleted pod's
  // metadata.deletionTimestamp is when its grace period ends (the delete's instant plus
  // deletionGracePeriodSeconds, as kube-apiserver writes it), and a second delete with a shorter
  // grace period shortens it (the engine's DeletePod::shorten: the workload is killed sooner).
  // On: as the releases of journal formats 1-6 did, the instant of the delete, and a second
  // delete changed neither.
  void SetFormat6Rules(bool on) { format6_rules_ = on; }
  // The rules journal format 8 brought. Off (the default): a Job's sync makes at most
  // kMaxPodCreateDeletePerSync (500; format 11: SyncBudget, 200) pods and deletes at most as many,
  // the rest at the next sync, at once (JobRules::kCurrent). On: as the releases of journal formats
  // 1-7 did, every pod in one sync (JobRules::kFormat7).
  void SetFormat7Rules(bool on) { format7_rules_ = on; }
  // The rules journal format 9 brought. Off (the default): a Job whose last sync left more pods
  // to make or delete than one sync may (a fill, jobs_more_) or whose create was refused (a retry,
  // jobs_retry_) is synced by the clock's advances alone (a retry once its back-off is over), at
  // most kMaxPodCreateDeletePerAdvance pods made or deleted (or creates refused) by one advance
  // across all of them, oldest due first; and by a write of the Job itself that changed its spec
  // (metadata.generation) or deletes it, which takes effect at once; not by whatever other
  // mutation (another tenant's pod create, a label patch) comes first. On: as the releases of
  // journal format 8 did, by any mutation (every Job due or refused is synced after each).
  void SetFormat8Rules(bool on) { format8_rules_ = on; }
  // The rules journal format 10 brought. Off (the default): a Job deleted with more pods than one
  // sync deletes (Background, Foreground) or releases (Orphan) is the garbage collector's
  // (job_collections_): the delete itself acts on SyncBudget() of its pods (500; 200 since
  // format 11), the
  // clock's advances on the rest, within kMaxPodCreateDeletePerAdvance shared with the fills and
  // retries, which is 200 (format 9's was 500); a Job being deleted (Foreground) takes the
  // tracking finalizer off its unfinished pods only as the collection deletes them (its finished
  // ones, and those a user deleted, in its syncs as before); a Job the TTL-after-finished
  // controller deletes leaves all of its pods to the clock. On: as the releases of journal formats
  // 1-9 did, every pod in the delete's record (Foreground: every finalizer in its Job's next sync),
  // 500 an advance.
  void SetFormat9Rules(bool on) { format9_rules_ = on; }
  // The rules journal format 11 brought. Off (the default): a Job that fails or succeeds counts
  // its unfinished pods a sync's worth at a time (takes their tracking finalizers off; failing,
  // adds them to status.failed), the ones it deletes in that sync first, the rest by the clock's
  // advances (JobRules::kCurrent), a finalizer taken off without a delete costing 1 of an
  // advance's budget; a Foreground-deleted Job that was ending counts its pods so too (the
  // collector leaves their finalizers to it); a Foreground-deleted Job deleted again, Background
  // or Orphan, has its collection walk its pods again by that policy. A Job's sync in a mutation of
  // its own acts on as many pods as an advance (SyncBudget). At 10,000 running pods, the advance
  // that failed a Job for its activeDeadlineSeconds took 469-654 ms
  // (BM_ClusterJobFailsAtItsDeadline; now 38 ms). On: as the releases of journal formats 1-10 did,
  // every one in the sync that ends the Job (JobRules::kFormat10), and 500 pods a sync
  // (kMaxPodCreateDeletePerSync).
  void SetFormat10Rules(bool on) { format10_rules_ = on; }
  // The clock's budget for the fills, retries and collections of one advance (RunJobs): pods made
  // or deleted, creates refused, pods a collection took, across all Jobs; a sync within it makes
  // at most what is left. An advance holds the daemon ~0.085 ms a pod (measured): at 200, another
  // tenant's request waits ~17 ms behind one, and a fill is no slower (the advances follow each
  // other at once). Journal format 9 allowed 500 (~42 ms: a create's p99 ~100-145 ms beside a
  // fill of 20 Jobs).
  static constexpr int64_t kMaxPodCreateDeletePerAdvance = 200;
  static constexpr int64_t kFormat9PodsPerAdvance = 500;
  int64_t AdvanceBudget() const {
    return format9_rules_ ? kFormat9PodsPerAdvance : kMaxPodCreateDeletePerAdvance;
  }
  // What one Job's sync acts on outside the clock's turns, in a mutation of its own (the Job's
  // create or spec change, the share of its pods its DELETE takes, a sync after its pods
  // changed): journal format 11 as much as an advance (kMaxPodCreateDeletePerAdvance), so a
  // request holds the daemon no longer than an advance does; formats 8-10
  // kMaxPodCreateDeletePerSync (500, ~45 ms of a Job's create measured).
  int64_t SyncBudget() const;
  // All of the above for a record written by journal format `format` (Journal::RecordFormat):
  // the rules of that format; kFormatVersion's (all off) for what is appended now.
  void SetRecordFormat(int format);

  // When the next `advance` is due (a timer or an engine wake-up), if any.
  std::optional<Millis> NextDue();
  Millis now() const { return engine_->now(); }

  const ObjectStore& store() const { return store_; }
  std::vector<WatchEvent> TakeWatchEvents() { return store_.TakeEvents(); }
  const engine::Engine& engine() const { return *engine_; }
  // A live workload's arbiter.dev/usage (nullptr: none declared; its requests are its use).
  const ResourceList* UsageOf(uint64_t workload) const {
    auto it = usage_of_.find(workload);
    return it == usage_of_.end() ? nullptr : it->second.get();
  }
  // What /metrics reads of each live workload, kept up to date by every mutation (live_facts.h):
  // a scrape shares it under the lock instead of asking the engine for every workload.
  const LiveFacts& live_facts() const { return facts_; }
  // The nodes' labels /metrics serves, cached until a Node changes (metrics.cc; lock held).
  NodeLabelCache& node_label_cache() const { return node_labels_; }
  // A digest of every scheduling decision so far (each engine event: time, type, workload,
  // node, preemptor), and their count: two clusters given the same mutations have equal digests.
  uint64_t decision_digest() const { return decision_digest_; }
  uint64_t decision_count() const { return decision_count_; }
  // Engine events by type and the submission-to-first-bind wait since this process started.
  const SchedulingStats& scheduling_stats() const { return stats_; }
  // Whether each Job's pod facts that the Cluster keeps (cluster_jobs.cc) equal the facts of its
  // pods as stored: an error naming the first difference if not (tests, --check-invariants).
  Status CheckJobPodFacts() const;
  // Whether every stored PodDisruptionBudget's status is what PdbStatus makes of its object and
  // a count of its namespace's pods now, but for those whose namespace was not refreshed since
  // they moved (as the walk of every budget of a refreshed namespace left them): an error naming
  // every other one if not (tests). SetPdbWalk (tests): each refresh walks every budget of the
  // namespace, as before the budgets that moved were kept (the reference the refresh is checked
  // against).
  Status CheckPdbStatuses() const;
  void SetPdbWalk(bool on) { pdb_walk_ = on; }

  // The whole state as bytes (cluster_snapshot.cc; docs/serve.md) and back: a restored cluster
  // given the same mutations behaves as the one that was saved. In two steps for the daemon:
  // CaptureSnapshot() under its lock (cheap per live object), then SnapshotCapture::Bytes() on
  // any thread while the cluster goes on (cluster_snapshot.h); Snapshot() is both at once.
  // `after` (benchmarks) is told as each step of the capture ends: the stored objects, the
  // events and counters, the live and finished pods' keys, the work model's state, the engine's.
  enum class CaptureStep { kStore, kCounters, kPods, kWorks, kEngine };
  std::shared_ptr<const SnapshotCapture> CaptureSnapshot(
      const std::function<void(CaptureStep)>& after = {}) const;
  std::string Snapshot() const;
  Status Restore(const std::string& bytes);

  static constexpr size_t kMaxEvents = 20000;
  // Stored Pods (the many objects) are kept as wire text but for this many recently used ones
  // (ObjectStore::SetCompact): a cold Pod's tree is parsed again when read. Events (at most
  // kMaxEvents) are kept as their wire text alone (ObjectStore::SetTextKinds; an engine event's
  // is written without a tree, event_text.h); what the dashboard reads of them is kept apart:
  static constexpr size_t kHotTrees = 4096;

  // The preemptions the kept Events record (Preempted / Reclaimed Events of Pods), oldest first:
  // each leaves with its Event when kMaxEvents are kept (EventBook; not when an Event is deleted
  // through the API).
  std::vector<Preemption> preemptions() const { return events_.Preemptions(); }

 private:
  class Sink;
  MutationResult ApplySteps(const Mutation& m, const Prepared* prepared);
  void AttachSinks();  // the engine's outputs to sink_
  // create / update, in steps (cluster.cc): Settle (name, namespace, the object replaced),
  // KeepServerFields, Validate, CheckUpdate, then DryRunObject or ApplyUpsert and Commit.
  struct Target;
  MutationResult Put(const Mutation& m, const Prepared* prepared);
  MutationResult PutSteps(const Mutation& m, const Prepared* prepared);
  // Replay's Put after Settle (no loader, no validation): the tape's commands, then Commit.
  MutationResult PutReplayed(const Mutation& m, Target& t);
  Status PlayUpsert(Millis time, Target& t);
  // Every command the Cluster gives the engine: live, applied and recorded on tape_; replaying,
  // the tape's next command instead, which must be of the same kind.
  Status Exec(const engine::Command& c);
  Status PlayMismatch(const std::string& what);
  // A created pod's workload: its bookkeeping, then `c` (its SubmitPod).
  Status SubmitWorkload(Target& t, const engine::Command& c);
  std::optional<ApiError> Settle(const Mutation& m, Target& t) const;
  void KeepServerFields(const Mutation& m, Target& t) const;
  void KeepNamespaceFields(Target& t) const;
  int64_t DeletionGraceSeconds(const Json& pod, std::optional<Millis> grace) const;
  std::optional<ApiError> AdmitLimitRanges(const Target& t, const Pod& pod,
                                           const ManifestSet& ctx) const;
  void DefaultPodResources(Target& t) const;
  StatusRules StatusRulesNow() const;  // SetFormat5Rules
  std::optional<ApiError> AdmitQuota(const Target& t, const Pod& pod) const;
  std::optional<ApiError> Validate(const Mutation& m, const Target& t,
                                   const yaml::ManifestLoad& load,
                                   std::vector<std::string>& warnings) const;
  std::optional<ApiError> CheckUpdate(const Target& t) const;
  Json DryRunObject(Millis time, Target&& t) const;
  Status ApplyUpsert(Millis time, const ManifestSet& set, Target& t);
  Status ApplyPod(Millis time, const ManifestSet& set, Target& t);
  Status ReapplyFlavor(Millis time, const ManifestSet& set, const std::string& name);
  void Commit(Millis time, const ManifestSet& set, Target& t);
  void AdmitPod(Target& t) const;
  // A created pod after its cycle: stored (Pending), or held in new_pod_ for SyncPodStatus.
  void StoreNewPod(Millis time, Target& t);
  // A created pod that its cycle moved, between the cycle and the SyncPodStatus that stores it
  // once, with the status the cycle gave it (StoreNewPod).
  struct NewPod {
    uint64_t workload;
    Json pod;
  };
  std::optional<NewPod> new_pod_;
  // Rewrites every pending pod's status from the engine's (after a backfill plan moved).
  void RefreshAllPending(Millis time);
  static yaml::ManifestLoad Load(const KindInfo& kind, Json obj);     // a copy the loader reads
  static bool LoadsAsGiven(const KindInfo& kind, const Mutation& m);  // Prepare needs no copy
  MutationResult Delete(const Mutation& m);
  std::optional<ApiError> FlavorInUse(const std::string& name) const;
  Status DeletePodObject(const Mutation& m, const std::string& ns, const Json& existing);
  void MarkDeleting(Json& pod, Millis time, int64_t grace_seconds) const;
  Status DeleteAgain(const Mutation& m, const std::string& ns, const Json& existing,
                     engine::WorkloadId id);
  Status DeleteNamespaceObjects(const Mutation& m);
  void PurgeNamespaces();
  Status ForgetFinished(Millis time, const ObjectStore::Key& key);
  Status DeletePolicyObject(const Mutation& m, const KindInfo& k, const std::string& ns);
  // batch/v1 Jobs (cluster_jobs.cc, job_controller.h): a create or update validated by the Job
  // rules and stored; a delete orphans its pods, deletes them (Background) or waits for them to
  // go (Foreground), a sync's worth at once and the rest by the clock (CollectJobPods); RunJobs,
  // after every mutation, carries out each Job controller decision through Put and Delete.
  MutationResult PutJob(const Mutation& m, Target& t);
  // Errors refuse the Job; warnings (its template's, and a template without
  // arbiter.dev/duration at a create) go to `warnings` (kubectl prints them).
  std::optional<ApiError> ValidateJobObject(const Target& t,
                                            std::vector<std::string>& warnings) const;
  Status DeleteJobObject(const Mutation& m, const std::string& ns);
  // Only the Jobs that may have moved are synced (jobs_dirty_: their object or pods changed since
  // their last sync; jobs_retry_: a create was refused; job_due_: their deadline or back-off is
  // due), in name order: as a controller syncing every Job at every mutation would, since a sync
  // of an unchanged Job changes nothing. A Job being filled or retried (jobs_more_, jobs_retry_)
  // is synced only by the clock's advance (`advance`, within its budget) and by a mutation of its
  // own object that changed its spec or deletes it (`own`), SetFormat8Rules.
  void RunJobs(Millis t, bool advance, const std::optional<ObjectStore::Key>& own);
  void NoteTouchedJobs();
  // True if its pods went or are going. `limit`: at most so many pods made or deleted
  // (PlanJob's); `ops` grows by the pods made, deleted, and a refused create.
  bool SyncJob(Millis t, const ObjectStore::Key& key, int64_t limit, int64_t* ops);
  bool JobHeld(const ObjectStore::Key& key) const;  // a fill or retry (RunJobs)
  // The garbage collector's turn on the pods of a deleted Job (job_collections_, keyed by the
  // Job's namespace and uid): the next of them in name order (none read twice), each deleted
  // (the tracking finalizer off first) or released (Orphan) unless it is already, within `limit`
  // (a pod taken costs 1, one deleted while it runs 2: its exit follows). Returns what they cost;
  // the collection ends (its Job, if being deleted, to sync) once none is left.
  int64_t CollectJobPods(Millis t, const ObjectStore::Key& job_uid, int64_t limit);
  // Its crash-looping pods' container statuses brought to `t` (restartPolicy OnFailure:
  // pod_status.h); returns when the next of them changes.
  std::optional<Millis> RefreshRestarts(Millis t, const std::string& ns, const std::string& uid);
  // Takes the Job's tracking finalizer off a pod; a pod being deleted that has exited goes then
  // (true).
  bool RemoveJobFinalizer(Millis t, const std::string& ns, const std::string& name);
  // Whether an exited pod being deleted stays (as Failed) for its Job to count: it carries the
  // tracking finalizer and its Job is there.
  bool KeptForJob(const Json& pod) const;
  void SetJobDue(const ObjectStore::Key& key, std::optional<Millis> due);
  void ForgetJob(const ObjectStore::Key& key);
  // After a Restore: the back-off memory from the snapshot's header, every Job to sync, their due
  // instants recomputed.
  void RestoreJobs(const Json& header);
  JobRules JobRulesNow() const;  // SetFormat4Jobs, SetFormat7Rules
  // Pod `name` without the ownerReference to the Job `uid` and (`finalizer`) the tracking
  // finalizer; ReleaseJobPods: the pods relabelled out of their Job in this mutation.
  void ReleaseJobPod(Millis t, const std::string& ns, const std::string& name,
                     const std::string& uid, bool finalizer);
  void ReleaseJobPods(Millis t);
  bool ExpireJob(Millis t, const ObjectStore::Key& key, const Json& job);  // true: deleted
  static Millis RetryAt(int64_t refused, Millis at);
  void IndexJobs();  // the store's indexes of Pods and Jobs by the Job's uid
  std::vector<const Json*> JobPods(const std::string& ns, const std::string& uid) const;
  // A Job's pods as its sync reads them: their facts, kept as each pod is written (NoteJobPod,
  // the store's observer of Pods) once a sync first reads them (then made from the pods once),
  // so a sync of a big Job parses no pod. Dropped when the Job ends or goes, and at a Restore.
  JobPodView JobPodsOf(const std::string& ns, const std::string& uid);
  JobPodTable& JobPodTableOf(const std::string& ns, const std::string& uid);
  void NoteJobPod(const ObjectStore::Key& key, const Json* was, const Json* now);
  void DropJobPods(const std::string& ns, const std::string& uid);
  int CreateJobPods(Millis t, const Json& job, const JobPlan& plan);
  std::optional<ApiError> AdmitJobPodPriority(const Mutation& c) const;
  std::optional<Millis> NextJobDeadline() const;
  // pods/eviction (disruption.cc).
  MutationResult Evict(const Mutation& m);
  // PodDisruptionBudget status of the namespaces in quota_dirty_ (disruption.cc, pdb_status.h):
  // of their budgets in pdbs_dirty_, O(those) a refresh, not O(the namespace's budgets).
  void RefreshPdbs(Millis t);
  // The budgets whose status may have moved since it was last made, until their namespace's next
  // refresh: marked when the budget's object is written or removed (the store's observer of
  // PodDisruptionBudgets: its spec, generation or status), when a pod written changes its counts
  // (CountForBudgets), and every budget at a Restore (RestorePdbs). Nothing else is read by its
  // status (PdbStatus: the engine's state is not; `now` only dates a condition that changes).
  std::set<ObjectStore::Key> pdbs_dirty_;
  bool pdb_walk_ = false;  // SetPdbWalk
  void RestorePdbs();      // after a Restore: no count kept, every budget to refresh
  const ManifestSet* PdbSet(const ObjectStore::Key& key) const;  // its policy_ entry
  // Each budget's pods counted (PdbCountOf) as pods are written (the store's observer of Pods),
  // so a status refresh is O(budgets of the namespace), not O(its pods): counted whole the first
  // time a refresh needs them, and again when the budget object is another (uid) or its spec
  // changed (generation). Dropped with the budget, and at a Restore.
  struct BudgetCount {
    std::string uid;
    int64_t generation = 0;
    PdbCount pods;
  };
  std::map<ObjectStore::Key, BudgetCount> budget_counts_;
  void CountForBudgets(const std::string& ns, const Json* was, const Json* now);
  PdbCount BudgetPods(const ObjectStore::Key& key, const PodDisruptionBudget& pdb,
                      const Json& stored);
  // The uid NewUid() gives next (a dry run's answer), without taking it.
  std::string PeekUid() const;
  void Advance(Millis t);
  // Engine events -> pod statuses, core/v1 Events, decisions.
  void Sync(Millis t);
  void RecordEvent(const engine::Event& e,
                   const std::map<uint64_t, engine::WorkloadStatus>& finished, Millis t,
                   std::vector<uint64_t>* touched,
                   std::map<uint64_t, driver::PodCondition>* disruption);
  void SyncPodStatus(uint64_t id, const std::map<uint64_t, engine::WorkloadStatus>& finished,
                     const std::map<uint64_t, driver::PodCondition>& disruption, Millis t);
  // Whether the events were only arrivals and their binds (no pending pod's reason moved).
  bool OnlyArrivalsMoved(const std::vector<engine::Event>& events,
                         const std::vector<uint64_t>& touched) const;
  void AddEvent(const engine::Event& e, const Json& involved, Millis t);
  // Stores a core/v1 Event (its uid given here), keeping the newest kMaxEvents.
  void StoreEvent(Json ev);
  // Notes a stored Event (and its preemption), removing those beyond kMaxEvents (EventBook).
  void KeepEvent(ObjectStore::Key key, std::optional<Preemption> preemption);
  void RestorePreemptions();  // preemptions_ from the stored Events (after a Restore)
  // An Event of the Job controller about `job` (SuccessfulCreate, Completed, ...).
  void AddJobEvent(const Json& job, bool warning, const std::string& reason,
                   const std::string& message, Millis t);
  // The restated workloads' facts read again, and a pending one's pod status rewritten when its
  // message or nominated node moved (the walk: only the facts, RefreshPending writes).
  void SyncRestated(std::vector<uint64_t> restated, const std::vector<uint64_t>& touched,
                    const std::map<uint64_t, engine::WorkloadStatus>& finished, bool refreshed,
                    Millis t);
  void RewritePendingStatus(const ObjectStore::Key& key, const engine::WorkloadStatus& st,
                            Millis t);
  // Rewrites the status of pending pods (not in `touched`, sorted) whose reason text moved.
  void RefreshPending(const std::vector<uint64_t>& touched, Millis t);
  // Keeps pending_ and reserved_ in step with a pod status just written (the walk's; a no-op
  // without it).
  void NotePending(uint64_t id, const engine::WorkloadStatus& s);
  // ResourceQuota status (hard, used) of the namespaces in quota_dirty_.
  void RefreshQuotas();
  void WriteStatus(const std::string& kind, const std::string& ns, const std::string& name,
                   Json status);
  std::string NewUid();
  // The validation context for an object of `kind`: the stored policy objects (except `skip`).
  ManifestSet PolicyContext(const std::string& skip_kind, const std::string& skip_ns,
                            const std::string& skip_name) const;
  // The part of that context a pod's own checks read (the validator's Pods and PodGroups: its
  // namespace, PriorityClass, QoS, its namespace's LimitRanges and PodGroups, the PoolPolicy),
  // so that a pod's create costs O(its namespace's policy), not O(every policy object): with
  // 1,000 tenant namespaces each with a ResourceQuota and an ElasticQuota, the whole context
  // and its checks took about 15 ms of a create. A name the pod gives that is not stored brings
  // every object of its kind, for the "did you mean" the full context gave. (The validator's
  // totals of the ElasticQuotas can no longer stop a pod's checks: those totals never overflow
  // in a stored set, since each ElasticQuota is checked against all the others when written.)
  ManifestSet PodPolicyContext(const Pod& pod, const std::string& ns) const;
  // The context for one object of `kind` (id) ns/name: for the kinds whose own checks read little
  // of the rest (the validator's Duplicates, ResourceQuotas and LimitRanges) only that: a
  // Namespace nothing; a ResourceQuota its Namespace and the PriorityClasses (its scopeSelector's
  // values); a LimitRange its Namespace; an ElasticQuota its Namespace, that namespace's
  // ResourceQuotas, the PoolPolicy, the ResourceFlavors and every ElasticQuota (so its create
  // beside 1,000 tenants still copies and checks theirs). The other kinds get the whole
  // PolicyContext.
  ManifestSet ObjectPolicyContext(KindId id, const std::string& kind, const std::string& ns,
                                  const std::string& name) const;

  CommandTape tape_;                 // live: the commands of the mutation being applied
  CommandTape* play_ = nullptr;      // replaying: the commands to give the engine
  Status play_error_;                // replaying: the first mismatch with the tape
  bool replaying_requests_ = false;  // SetReplayingRequests
  bool pending_walk_ = false;        // SetPendingWalk
  bool format4_jobs_ = false;        // SetFormat4Jobs
  bool format5_rules_ = false;       // SetFormat5Rules
  bool format6_rules_ = false;       // SetFormat6Rules
  bool format7_rules_ = false;       // SetFormat7Rules
  bool format8_rules_ = false;       // SetFormat8Rules
  bool format9_rules_ = false;       // SetFormat9Rules
  bool format10_rules_ = false;      // SetFormat10Rules
  // Namespaces deleted while some of their pods were still terminating: stored, Terminating, until
  // the last of them is gone (PurgeNamespaces); no new object may be created in them.
  std::set<std::string> terminating_namespaces_;
  std::string uid_prefix_;
  uint64_t uid_counter_ = 0;
  ObjectStore store_;
  std::unique_ptr<engine::Engine> engine_;
  driver::WorkTimers timers_;
  std::unique_ptr<driver::Recorder> recorder_;
  std::unique_ptr<Sink> sink_;
  // Loaded policy objects by kind / namespace / name (each a one-object set): validation context.
  std::map<std::string, std::map<ObjectStore::Key, ManifestSet>> policy_;
  // Live workloads' pods. Chunked (as finished_of_): a snapshot's capture freezes it in O(chunks).
  ChunkMap<uint64_t, ObjectStore::Key> pod_of_;
  // Live workloads' arbiter.dev/usage, from their pods as applied (what /metrics serves as their
  // use; requests when absent). Rebuilt from the stored pods at Restore.
  std::map<uint64_t, std::shared_ptr<const ResourceList>> usage_of_;
  void NoteUsage(uint64_t workload, const Pod& pod);
  // The live workload's row of facts_ from its status just read from the engine (its stored pod
  // at `key` gives the first container), at every place a pod status is written from the engine.
  void NoteFacts(const ObjectStore::Key& key, const engine::WorkloadStatus& s);
  void RestoreFacts();  // facts_ from the live workloads (after a Restore)
  LiveFacts facts_;
  mutable NodeLabelCache node_labels_;
  void RestoreUsage();
  // Restore's steps (cluster_snapshot.cc), each from the snapshot's JSON header.
  Json ParseLoadingStore(std::string_view header);
  void RestoreCounters(const Json& h);
  void RestorePods(const Json& h);
  void RestoreWorks(const Json& h);
  void RestoreTimers(const Json& h);
  void RestorePolicy();
  std::map<ObjectStore::Key, uint64_t> workload_of_;
  // Finished pods still stored, by their workload's id: deleting one sends the engine DeletePod,
  // which forgets its `count/pods` charge (Kubernetes counts a terminal pod until it is deleted).
  ChunkMap<ObjectStore::Key, uint64_t> finished_of_;
  // The walk's (SetPendingWalk) books: live workloads whose pod status says Pending, and of
  // those, the ones holding a backfill reservation.
  std::set<uint64_t> pending_;
  std::set<uint64_t> reserved_;
  std::set<std::string> quota_dirty_;  // namespaces whose pods or quotas/PDBs changed
  // Namespaces whose ElasticQuota's fair share may have moved (another of its kind was written):
  // their ElasticQuota's status only.
  std::set<std::string> shares_dirty_;
  // An ElasticQuota of `kind` was written or removed: every other one's share may move.
  void SharesMoved(const std::string& kind);
  EventBook events_;  // stored Events, oldest first, and their preemptions
  uint64_t event_counter_ = 0;
  EventCorrelator job_events_;                                 // AddJobEvent (not format 4's)
  std::map<ObjectStore::Key, std::string> released_job_pods_;  // NoteJobPod: pod -> Job uid
  uint64_t decision_digest_ = 14695981039346656037ull;         // FNV-1a
  uint64_t decision_count_ = 0;
  SchedulingStats stats_;
  // The Job controller's work list (derived from the store; rebuilt by RestoreJobs).
  std::set<ObjectStore::Key> jobs_dirty_;
  // Per running Job, the finish times (and success) of the pods it counted: its back-off record
  // outlives pods that are gone (kube's backoffStore, in memory: a snapshot restore forgets the
  // pods gone before it, a replay of the journal does not).
  std::map<ObjectStore::Key, std::map<std::string, std::pair<Millis, bool>>> job_finishes_;
  std::set<ObjectStore::Key> jobs_retry_;
  // Of those, how many syncs in a row were refused and when the last was (RetryAt).
  std::map<ObjectStore::Key, std::pair<int64_t, Millis>> job_refusals_;
  std::map<ObjectStore::Key, Millis> job_due_;
  // The Jobs whose last sync left more pods to make or delete than one sync may (JobPlan::more,
  // not refused), with that sync's instant: due then, and the clock's to sync (RunJobs), the
  // longest waiting first. Snapshots keep it ("jobsMore": [[namespace, job], instant] rows,
  // journal format 9), so a restore resumes the clock's round where it was.
  std::map<ObjectStore::Key, Millis> jobs_more_;
  // The deleted Jobs whose pods the garbage collector has still to delete or release (journal
  // format 10, SetFormat9Rules), by namespace and the Job's uid: the Job's name, whether its pods
  // are released (Orphan) rather than deleted, and the instant of its last turn (due then: the
  // clock's, the longest waiting first with the fills), and where its walk of them is. Snapshots
  // keep it ("jobCollections": [namespace, uid, job, orphan, instant, after] rows).
  struct JobCollection {
    std::string job;
    bool orphan = false;
    Millis since = 0;
    std::string after;  // the last pod taken (in name order: the next turn goes on after it)
  };
  std::map<ObjectStore::Key, JobCollection> job_collections_;
  // A Job's delete by the TTL-after-finished controller (ExpireJob): it acts on none of its pods
  // itself (a user's delete on a sync's worth), the clock's turns on all of them.
  bool expiring_ = false;
  std::set<std::pair<Millis, ObjectStore::Key>> job_due_queue_;
  struct JobPodTables;  // by the Job's namespace and uid (cluster_jobs.cc)
  std::unique_ptr<JobPodTables> job_pods_;
};

}  // namespace arbiter::server

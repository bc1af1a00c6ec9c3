// The Job controller's internals shared by job_controller.cc (the plan), job_validation.cc (the
// spec checks) and job_indexes.cc (Indexed Jobs: successPolicy, backoffLimitPerIndex). Not a
// public header: only those files include it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "adapters/json/member.h"
#include "server/state/job_controller.h"

namespace arbiter::server::job_detail {

using json_member::Member;

inline std::optional<int64_t> IntField(const Json& spec, const char* key) {
  const Json& v = Member(spec, key);
  if (!v.is_number_integer()) return std::nullopt;
  return v.get<int64_t>();
}

inline bool IsIndexed(const Json& spec) { return Member(spec, "completionMode") == "Indexed"; }
inline bool HasBackoffLimitPerIndex(const Json& spec) {
  return IsIndexed(spec) && IntField(spec, "backoffLimitPerIndex").has_value();
}

constexpr int64_t kMaxIndexedParallelism = 100000;  // kube's maxParallelismForIndexedJob
constexpr Millis kPodFailureBackOff = 10000;        // DefaultJobPodFailureBackOff
constexpr Millis kMaxPodFailureBackOff = 600000;    // MaxJobPodFailureBackOff

// Whether the pod carries batch.kubernetes.io/job-tracking (not counted yet).
bool Tracked(const Json& pod);
// The completion index of an Indexed Job's pod (its annotation), -1 if none or not a number.
int64_t PodIndex(const Json& pod);
// kube's getFinishedTime: the containers' latest finishedAt, else when Ready turned False, else
// the deletion, else the creation time.
Millis FinishedTime(const Json& pod);
// kube's getRemainingTimeForFailuresCount: the end of the back-off after `failures` failures,
// the last at `last`.
Millis BackoffEnd(int64_t failures, Millis last);
// The first rule of spec.podFailurePolicy a failed pod matches (kube's matchPodFailurePolicy):
// its action ("" for none) and, for FailJob, the Job's failure message.
std::pair<std::string, std::string> MatchPolicy(const Json& policy, const Json& pod);

// MatchPolicy of a pod given by its facts: its object is read only when the policy has rules.
std::pair<std::string, std::string> MatchPolicy(const Json& policy, const JobPodView& pods,
                                                const JobPodFacts& pod);

inline constexpr char kIndexFailureCount[] = "batch.kubernetes.io/job-index-failure-count";
inline constexpr char kIndexIgnoredFailureCount[] =
    "batch.kubernetes.io/job-index-ignored-failure-count";
// A pod's count annotation (kube's parseInt32: bad or out of int32's range reads as 0).
int64_t CountAnnotation(const Json& pod, const char* key);

// kube's matchSuccessPolicy: the message of the first spec.successPolicy rule the succeeded
// indexes meet ("Matched rules at index N").
std::optional<std::string> MatchSuccessPolicy(const Json& spec, const std::set<int64_t>& succeeded);

// backoffLimitPerIndex: the indexes failed so far (status.failedIndexes and the tracked pods that
// used their index's last retry or matched FailIndex), and per index still to run, its last failed
// pod (kube's podsWithDelayedDeletionPerIndex: its finalizer stays until the replacement, which
// inherits its failure count, is made).
struct IndexFailures {
  std::set<int64_t> failed;
  std::map<int64_t, const JobPodFacts*> last_failed;
};
IndexFailures TrackFailedIndexes(const Json& spec, const Json& status, const JobPodView& pods,
                                 const std::set<int64_t>& completed,
                                 const std::set<int64_t>& running);
// The annotations of index `index`'s new pod: batch.kubernetes.io/job-index-failure-count (and the
// ignored count), from the index's last failed pod.
Json IndexFailureAnnotations(const Json& spec, const JobPodView& pods, const IndexFailures& f,
                             int64_t index);
// When index `index` may have a new pod (its last failure plus the back-off; kube's
// getRemainingTimePerIndex); nullopt: at once.
std::optional<Millis> IndexBackoffEnd(const IndexFailures& f, int64_t index);

// An index list as status.completedIndexes writes it, read as kube's validateIndexesFormat does:
// the number of indexes, or the error text.
std::pair<int64_t, std::string> CheckIndexesFormat(const std::string& text, int64_t completions);

}  // namespace arbiter::server::job_detail

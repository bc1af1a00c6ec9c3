// Side-by-side conformance: the same workload run by a real Slurm (sacct -D records, optionally
// slurmctld's log) and by `arbiter sim` (its SimulationReport JSON), compared job by job.
//
// A job is matched by "<namespace>/<name>": the Pod's namespace and name in the report, the
// sacct Account (mapped to a namespace, NameMap) and JobName. Times are seconds from the first
// submission: the report's clock, and for Slurm the earliest Submit of the jobs' first records
// (or an explicit t0).
//
// Points, per job:
//   preempted-by  who preempted it (sorted names; "-" for nobody). Slurm: slurmctld's log
//                 ("setting N sec preemption grace time for JobId=V to reclaim resources for
//                 JobId=P", "preempted JobId=V has been requeued|killed ... for JobId=P"); without
//                 a log, only whether a run ended PREEMPTED ("?" for the preemptor).
//   final-state   Succeeded | Preempted (cancelled after preemption) | Running | Pending | other
//                 Slurm states as they are (FAILED, TIMEOUT, NODE_FAIL, ...).
//   runs          runs that started (sacct -D records with a Start; Scheduled events).
//   start#K       start of run K (both have it), within `start` seconds; a start that waited
//                 in Arbiter (not at its submission) may use the latency allowances too.
//   gpu-seconds   Σ runs GPUs × (released - start) (sacct_import.h RunReleased), within
//                 GPUs × (gpuSecondsPerRun × runs + allowance × runs Slurm ended PREEMPTED).
//   nodes         (gangs and multi-node Slurm jobs only) nodes of the first run: Slurm's
//                 AllocTRES node=, Arbiter's distinct nodes of the members' first runs.
//
// Gangs: a Slurm multi-node job (sbatch -N N --ntasks-per-node=1) is a pod group (PodGroup with
// minMember N, pods labelled scheduling.x-k8s.io/pod-group). The Slurm job named after the group
// ("<namespace>/<group>") is compared with the group's pods taken as one job: run K starts at
// the earliest member's start K and ends at the latest member's end K; GPU-seconds are the sum
// over the members (Slurm's AllocTRES gres/gpu is the total over the job's nodes); preempted-by
// is the union of the members' preemptors; final-state the members' phases (one when they
// agree). A preemptor or victim that is a member is named by its group on both sides.
//
// Expectations (YAML, `--expect FILE`):
//   tolerances: {start: 3s, gpuSecondsPerRun: 3s}
//   allowances:                      # named after issue 10's "Slurm fidelity" items
//     - {issue10: latencies, startAfterWait: 20s, gpuSecondsPerPreemptedRun: 15s}
//   differences:
//     - {job: team-b/scav-2, point: final-state, issue10: victim-exits-within-grace, note: ...}
// A point that differs without a `differences` entry fails; so does an entry whose point agrees
// (the disagreement is gone: delete the entry, the point is strict from then on). issue10 names:
// victim-exits-within-grace, victim-order-equal-qos, pending-reason, latencies.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/slurm/name_map.h"
#include "adapters/slurm/sacct_parser.h"
#include "core/duration.h"
#include "core/status.h"

namespace arbiter {
struct ManifestSet;
}

namespace arbiter::slurm {

struct ExpectedDifference {
  std::string job, point, issue10, note;
  int line = 0;
};

struct Allowance {
  std::string issue10;
  Millis start_after_wait = 0;
  Millis gpu_seconds_per_preempted_run = 0;  // per GPU
};

struct Expectations {
  Millis start_tolerance = 3000;
  Millis gpu_seconds_per_run = 3000;  // per GPU and run
  std::vector<Allowance> allowances;
  std::vector<ExpectedDifference> differences;
  static Result<Expectations> Parse(const std::string& text, const std::string& file);
  static Result<Expectations> Load(const std::string& path);
};

// The issue-10 items an expectation may name.
const std::vector<std::string>& Issue10Items();

enum class Verdict {
  kAgree,             // equal, or within the base tolerance
  kAgreeByAllowance,  // within tolerance only with an allowance (named in `note`)
  kExpected,          // differs, as an expected difference says
  kDiffers,           // differs, not expected: a failure
  kNoLongerDiffers,   // an expected difference that agrees now: a failure (make it strict)
};
const char* ToString(Verdict v);

struct ComparedPoint {
  std::string job, point, slurm, arbiter;
  std::string delta;  // numeric points: difference (Slurm - Arbiter) and the tolerance used
  Verdict verdict = Verdict::kAgree;
  std::string note;  // the expected difference's issue10 item / the allowance used
};

struct ConformanceReport {
  std::vector<ComparedPoint> points;
  int jobs = 0;
  // Measured (seconds, Slurm - Arbiter): starts at submission, starts after a wait, GPU-seconds.
  Millis max_abs_start_immediate_ms = 0, max_abs_start_waited_ms = 0;
  std::vector<std::pair<std::string, Millis>> start_deltas_ms;  // per "job start#K"
  std::vector<std::pair<std::string, int64_t>>
      gpu_ms_deltas;  // per job: GPU-milliseconds, Slurm - Arbiter
  bool ok() const;
  int Count(Verdict v) const;
};

// Pod groups of a manifest set: "<namespace>/<group>" -> its pods "<namespace>/<pod>" (pods
// labelled scheduling.x-k8s.io/pod-group), in manifest order.
using GangMembers = std::map<std::string, std::vector<std::string>>;
GangMembers GangMembersOf(const ManifestSet& set);

struct ConformanceInputs {
  const std::vector<SacctRun>* runs = nullptr;
  const nlohmann::json* report = nullptr;
  const NameMap* names = nullptr;
  std::optional<std::string> slurmctld_log;  // its text
  std::optional<Millis> t0;  // Unix ms of the first submission (default: earliest Submit)
  const Expectations* expect = nullptr;  // null: defaults, no allowances, no expected differences
  const GangMembers* gangs = nullptr;    // null: no pod groups (every pod is a job)
};

Result<ConformanceReport> CompareWithSlurm(const ConformanceInputs& in);

// Text table and JSON of a report.
std::string ConformanceTable(const ConformanceReport& r);
nlohmann::json ConformanceJson(const ConformanceReport& r);

}  // namespace arbiter::slurm

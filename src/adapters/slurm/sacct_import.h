// sacct runs -> billing run segments: the same hourly ledger and invoices as Kubernetes
// workloads (`arbiter slurm import`). Semantics (docs/slurm.md):
//
//  - One segment per run (allocation record) that started; a requeued job has one per run
//    (sacct -D). Runs that never started (Start Unknown/None) have nothing to bill.
//  - A run holds its allocation from Start to where it really released it: the latest End of
//    the record and of its steps. A preempted run's record ends when slurmctld killed or requeued
//    it (its grace time included); its steps end when their processes were gone (KillWait and
//    cleanup later, measured up to 7 s on the test cluster): the node is free only then.
//    A run still going (End Unknown, state RUNNING...) is billed to Start + Elapsed, as of the
//    sacct call; a later import replaces it.
//  - Request track: AllocTRES: cpu (CPUs -> cores), mem, gres/gpu; a gres type names the GPU model
//    (NameMap: gres type -> nvidia.com/gpu.product) or a MIG profile (-> nvidia.com/mig-...).
//    A run of MIG instances only is priced from its node's card (ImportOptions).
//  - Usage track: the steps' TRESUsageInTot (TRESUsageInAve where Tot is absent): mean CPU =
//    total CPU time / run time; memory = the largest step's total peak RSS (sacct keeps
//    high-water marks, not means). A resource no step reports (sacct -X, or jobs shorter than
//    JobAcctGatherFrequency) is billed at its request on the usage track too.
//  - Tenant: Account -> namespace (NameMap; an account it does not know is its own namespace).
//  - Workload: "<namespace>/slurm-<cluster>-<JobID>", stable across imports, so importing the
//    same jobs again changes nothing in the ledger.
//  - A multi-node job (sbatch -N N, AllocTRES node=N: Arbiter's gang, a pod group) is one
//    workload like any job: its allocation record carries the totals over its nodes (cpu,
//    gres/gpu, mem), its segment's node is the NodeList ("n[1-2]"), and its runs start and end
//    together (noted).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "adapters/slurm/name_map.h"
#include "adapters/slurm/sacct_parser.h"
#include "core/billing/run_segment.h"

namespace arbiter::slurm {

struct ImportOptions {
  std::string cluster = "slurm";                // when the Cluster field is absent
  std::map<std::string, int32_t> qos_priority;  // Slurm QoS name -> priority, for the segments
  // The card a MIG instance is priced from (PriceBook gpuModels), as `slurm export` weighs it:
  // the nvidia.com/gpu.product of the node a run ran on (the policy's Nodes, by name), else the
  // one model of every policy Node that carries the MIG resource.
  std::map<std::string, std::string> node_gpu_product;  // node name -> gpu.product
  std::map<std::string, std::string> mig_gpu_product;   // MIG resource -> gpu.product
};

struct ImportResult {
  std::vector<billing::RunSegment> segments;
  int jobs = 0, runs = 0;
  int not_started = 0;             // runs without a Start: nothing billed
  int running = 0;                 // billed up to the sacct call
  std::vector<std::string> notes;  // accounts used as namespaces, unknown gres types, ...
};

// Workload name of a job.
std::string SlurmWorkloadName(const std::string& ns, const std::string& cluster,
                              const std::string& job_id);

// Where a run released its resources: max(End, steps' End); for a run without End,
// Start + Elapsed. nullopt when it never started.
std::optional<Millis> RunReleased(const SacctRun& run);

Result<ImportResult> SegmentsFromSacct(const std::vector<SacctRun>& runs, const NameMap& names,
                                       const ImportOptions& opts, const std::string& file);

}  // namespace arbiter::slurm

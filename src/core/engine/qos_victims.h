// Slurm's victim choice under preempt/qos (PoolPolicy preemption.type: QoS), engine-internal.
//
// Slurm (22.05: slurmctld/preempt.c, plugins/preempt/qos, select/cons_tres _run_now) does not plan
// per node. It sorts every preemptable running job of the partition once, in its removal order:
// by the preempt/qos priority (the QoS priority in the high 16 bits, the job's node count in the
// low 16: among equal QoS, a 1-node job goes before a 2-node job) and, among equals, in the job
// list's order (submission order: the oldest first); with SchedulerParameters=
// preempt_youngest_first by start time, the youngest first, whatever the QoS. It removes jobs in
// that order until the preemptor fits somewhere: the node where it first fits is the one chosen,
// and the job whose removal made it fit (the key) goes first in a reordered list. It removes
// again, key first, then the other jobs of that node in their order, until the preemptor fits
// (preempt_reorder_count=1: at most two such reorders); the jobs removed on the chosen node are
// the victims.
//
// Arbiter does the same per node (a job's removal frees only its node here), and ranks nodes by
// their key's place in the removal order: the node whose key Slurm reaches first wins.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/engine/workload.h"
#include "core/placement/fit_view.h"

namespace arbiter::engine {

class State;

// A job's place in Slurm's removal order: lower goes first.
using QoSRank = std::array<int64_t, 3>;

QoSRank SlurmRemovalRank(const State& s, const Workload& v);

// The victims on one node of preempting for `w` under QoS, Slurm's way. `sim` holds the node with
// every candidate in `cands` removed (and the room of nominated workloads held) and `w` fits in
// it. Fills `victims` (slots, in removal order) and `key` (the rank of the job whose removal made
// `w` fit first); leaves `sim` as it was given.
void SlurmVictimsOnNode(const State& s, const Workload& w, const std::vector<Slot>& cands,
                        placement::FitView& sim, std::vector<size_t>& order,
                        std::vector<Slot>* victims, QoSRank* key);

}  // namespace arbiter::engine

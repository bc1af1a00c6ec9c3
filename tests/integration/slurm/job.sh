#!/bin/bash
# Batch script of the Slurm integration tests' jobs: sbatch ... job.sh DURATION_S SHUTDOWN
# The work runs as a job step (srun): Slurm sends the preemption grace SIGTERM to job steps only
# (job_signal(..., SIGTERM, 0, ...) -> KILL_STEPS_ONLY), never to the batch shell.
# A multi-node job (sbatch -N N --ntasks-per-node=1, a gang) runs its step on every node: one task
# per node, as Arbiter runs one pod of the group per node.
# EVLOG (optional) names a shared event log; JOBBIN the directory of step.sh (sbatch runs a copy
# of this script from slurmd's spool directory).
log() {
  [ -n "${EVLOG:-}" ] || return 0
  printf '%s %s %s restart=%s %s\n' "$(date +%s.%N)" "$SLURM_JOB_ID" "$SLURM_JOB_NAME" \
    "${SLURM_RESTART_COUNT:-0}" "$*" >> "$EVLOG"
}
trap 'log BATCH-TERM' TERM
log BATCH-START gpus=${CUDA_VISIBLE_DEVICES:-}
nodes=${SLURM_JOB_NUM_NODES:-1}
srun -N "$nodes" -n "$nodes" --cpus-per-task="${SLURM_CPUS_PER_TASK:-1}" "${JOBBIN:?JOBBIN must name the directory of step.sh}/step.sh" "$@" &
step=$!
wait $step; rc=$?
while kill -0 $step 2>/dev/null; do wait $step; rc=$?; done   # a trapped signal interrupts wait
log BATCH-END step_rc=$rc
exit $rc

#!/bin/bash
# The work of a test job (one task of an srun step): run DURATION_S seconds.
# SHUTDOWN=ignore: log SIGTERM and keep working (a shutdown longer than any grace time);
# SHUTDOWN=N: log SIGTERM, then exit 0 N seconds later (an orderly shutdown of N s).
DUR=$1 SHUT=$2
log() {
  [ -n "${EVLOG:-}" ] || return 0
  printf '%s %s %s restart=%s %s\n' "$(date +%s.%N)" "$SLURM_JOB_ID" "$SLURM_JOB_NAME" \
    "${SLURM_RESTART_COUNT:-0}" "$*" >> "$EVLOG"
}
stop_at=
on_term() {
  log STEP-TERM
  if [ "$SHUT" != ignore ] && [ -z "$stop_at" ]; then stop_at=$(($(date +%s) + SHUT)); fi
}
trap on_term TERM
log STEP-START gpus=${CUDA_VISIBLE_DEVICES:-}
end=$(($(date +%s) + DUR))
while :; do
  now=$(date +%s)
  [ "$now" -ge "$end" ] && { log STEP-DONE; exit 0; }
  [ -n "$stop_at" ] && [ "$now" -ge "$stop_at" ] && { log STEP-EXIT-AFTER-TERM; exit 0; }
  sleep 0.2 & wait $!
done

#!/usr/bin/env bash
# A single-host Slurm 22.05 stack for tests, on loopback, no systemd (docs/architecture.md, Real
# services in tests):
# munged -> mariadbd -> slurmdbd -> (cluster in the accounting DB) -> slurmctld -> one slurmd per
# node: "localhost" (partition pool) with 32 cores, 64000 MB and 8 fake GPUs (symlinks to
# /dev/null), n1, n2 (partition gang, for multi-node jobs) with 8 cores, 16000 MB and 4 GPUs
# each, and m1 (partition mig) with 8 cores, 16000 MB and seven MIG instances, typed GRES
# gpu:1g.10gb; every slurmd on its own port and loopback address.
#
#   scripts/services/slurm.sh install               Debian packages (only the missing ones)
#   scripts/services/slurm.sh start                 fresh state dir, every daemon, nodes idle
#   scripts/services/slurm.sh stop                  every daemon by PID (SIGTERM, then SIGKILL)
#   scripts/services/slurm.sh status                exit 0 when slurmctld answers and the nodes are up
#   scripts/services/slurm.sh reconfigure FRAGMENT  restart slurmctld + slurmds with FRAGMENT as the
#                                                   scheduling policy (e.g. `arbiter slurm export`'s
#                                                   slurm.conf fragment)
#
# The configuration comes from scripts/services/slurm/: slurm.conf.in (the cluster: hosts, ports,
# paths, node, partition) includes etc/policy.conf, the scheduling and accounting policy, which is
# policy-default.conf unless ARBITER_SLURM_FRAGMENT names another file. Clients find it through
# SLURM_CONF=$STATE/etc/slurm.conf (print it with `slurm.sh env`).
#
# Environment (defaults): ARBITER_CI_DIR (/tmp/arbiter-ci; state in $ARBITER_CI_DIR/slurm),
# ARBITER_SLURMCTLD_PORT (16817), ARBITER_SLURMD_PORT (16818), ARBITER_SLURMD_GANG_PORT1 (16820),
# ARBITER_SLURMD_GANG_PORT2 (16821), ARBITER_SLURMD_MIG_PORT (16822), ARBITER_SLURMDBD_PORT (16819),
# ARBITER_MARIADB_PORT (13306), ARBITER_SLURM_CLUSTER (arbiter), ARBITER_SLURM_FRAGMENT (none),
# ARBITER_SLURM_DEADLINE (60: seconds each daemon may take to answer).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CONF_SRC=$HERE/slurm
S=${ARBITER_CI_DIR:-/tmp/arbiter-ci}/slurm
CTLD_PORT=${ARBITER_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${ARBITER_SLURMD_PORT:-16818}
GANG_PORT1=${ARBITER_SLURMD_GANG_PORT1:-16820}
GANG_PORT2=${ARBITER_SLURMD_GANG_PORT2:-16821}
MIG_PORT=${ARBITER_SLURMD_MIG_PORT:-16822}
DBD_PORT=${ARBITER_SLURMDBD_PORT:-16819}
DB_PORT=${ARBITER_MARIADB_PORT:-13306}
CLUSTER=${ARBITER_SLURM_CLUSTER:-arbiter}
DEADLINE=${ARBITER_SLURM_DEADLINE:-60}
# One slurmd per node: localhost (partition pool), the gang nodes n1, n2 (partition gang) and the
# MIG node m1 (partition mig).
SLURMDS=(slurmd slurmd-n1 slurmd-n2 slurmd-m1)
NODES=(localhost n1 n2 m1)
DAEMONS=(munged mariadbd slurmdbd slurmctld "${SLURMDS[@]}")   # start order; stop is the reverse
export SLURM_CONF=$S/etc/slurm.conf

log() { echo "slurm.sh: $*" >&2; }
now() { date +%s.%N; }
T0=$(now)
lap() { log "$(printf '[%5.1fs] %s' "$(echo "$(now) - $T0" | bc)" "$*")"; }

# wait_for SECONDS WHAT CMD...: runs CMD until it succeeds, at most SECONDS of wall time.
wait_for() {
  local secs=$1 deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "timeout after $secs s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

SVC=slurm.sh
# shellcheck source=lib.sh
. "$HERE/lib.sh"   # alive, svc_apt_install, svc_stop_pid

pid_of() { [ -f "$S/run/$1.bgpid" ] && cat "$S/run/$1.bgpid"; }

# start_bg NAME CMD...: a daemon in its foreground mode, detached from our stdio (so that a
# caller reading our output, e.g. CTest, is not held open by it), its PID recorded.
start_bg() {
  local name=$1
  shift
  setsid "$@" > "$S/log/$name.stdout" 2>&1 < /dev/null &
  echo $! > "$S/run/$name.bgpid"
}

# stop_one NAME: SIGTERM by PID, wait up to 20 s (a zombie has exited), then SIGKILL.
stop_one() {
  local name=$1 pid
  pid=$(pid_of "$name") || return 0
  if alive "$pid"; then
    SVC="slurm.sh: $name ($pid)" svc_stop_pid "$pid" >&2
    log "$name ($pid) stopped"
  fi
  rm -f "$S/run/$name.bgpid"
}

render() { # render TEMPLATE > FILE: fills in the state dir, ports and cluster name
  sed -e "s#@STATE@#$S#g" -e "s#@CTLD_PORT@#$CTLD_PORT#g" -e "s#@SLURMD_PORT@#$SLURMD_PORT#g" \
    -e "s#@GANG_PORT1@#$GANG_PORT1#g" -e "s#@GANG_PORT2@#$GANG_PORT2#g" -e "s#@MIG_PORT@#$MIG_PORT#g" \
    -e "s#@DBD_PORT@#$DBD_PORT#g" -e "s#@DB_PORT@#$DB_PORT#g" -e "s#@CLUSTER@#$CLUSTER#g" "$1"
}

ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
nodes_idle() { [ "$(sinfo -h -N -o %T 2>/dev/null | sort -u)" = idle ]; }

cmd_install() {
  svc_apt_install slurm-wlm slurmdbd mariadb-server munge bc >&2
}

cmd_status() {
  local d pid ok=0
  for d in "${DAEMONS[@]}"; do
    pid=$(pid_of "$d") || { echo "$d: not started"; ok=1; continue; }
    if alive "$pid"; then echo "$d: running (pid $pid)"; else echo "$d: exited (pid $pid)"; ok=1; fi
  done
  if [ $ok -eq 0 ] && ctld_up; then
    echo "slurmctld: answers on 127.0.0.1:$CTLD_PORT; nodes $(sinfo -h -N -o '%N=%T' 2>/dev/null | tr '\n' ' ')"
  else
    ok=1
  fi
  return $ok
}

install_policy() { # install_policy FRAGMENT: becomes $S/etc/policy.conf
  [ -f "$1" ] || { log "no such fragment: $1"; return 2; }
  cp "$1" "$S/etc/policy.conf"
}

start_ctld_and_slurmd() {
  start_bg slurmctld slurmctld -D -i
  wait_for "$DEADLINE" "slurmctld to answer" ctld_up || { tail -20 "$S/log/slurmctld.log" >&2; return 1; }
  lap "slurmctld up"
  local i
  for i in "${!NODES[@]}"; do start_bg "${SLURMDS[$i]}" slurmd -D -N "${NODES[$i]}"; done
  wait_for "$DEADLINE" "the nodes to be idle" nodes_idle || { tail -n 20 "$S"/log/slurmd-*.log >&2; sinfo -N >&2 || true; return 1; }
  lap "slurmds up, nodes ${NODES[*]} idle"
}

cmd_start() {
  if [ -n "$(pid_of slurmctld 2>/dev/null)" ] && alive "$(pid_of slurmctld)" && ctld_up; then
    log "already running (state in $S)"
    return 0
  fi
  for b in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sacctmgr; do
    command -v "$b" > /dev/null || { log "$b not found: run '$0 install' first"; return 1; }
  done
  # Leftovers of an earlier start (a crashed test): stop them by their recorded PIDs first.
  if [ -d "$S/run" ]; then cmd_stop; fi
  rm -rf "$S"
  mkdir -p "$S"/{etc,state,spool,log,run,dev} "${NODES[@]/#/$S/spool/}"
  install -d -m 0755 -o munge -g munge "$S/munge"
  install -d -o mysql -g mysql "$S/mysql"
  for i in 0 1 2 3 4 5 6 7; do ln -sf /dev/null "$S/dev/gpu$i"; done
  for i in 0 1 2 3 4 5 6; do ln -sf /dev/null "$S/dev/mig$i"; done
  render "$CONF_SRC/slurm.conf.in" > "$S/etc/slurm.conf"
  render "$CONF_SRC/gres.conf.in" > "$S/etc/gres.conf"
  render "$CONF_SRC/slurmdbd.conf.in" > "$S/etc/slurmdbd.conf"
  chmod 0600 "$S/etc/slurmdbd.conf"
  install_policy "${ARBITER_SLURM_FRAGMENT:-$CONF_SRC/policy-default.conf}"

  # munge: own key and socket (setpriv execs, so $! is munged itself).
  setpriv --reuid=munge --regid=munge --init-groups mungekey --create --keyfile="$S/munge/munge.key"
  start_bg munged setpriv --reuid=munge --regid=munge --init-groups munged --foreground \
    --socket="$S/munge/munge.socket.2" --key-file="$S/munge/munge.key" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" --seed-file="$S/munge/munged.seed"
  wait_for 10 "munged" test -S "$S/munge/munge.socket.2"
  lap "munged up"

  mariadb-install-db --no-defaults --user=mysql --datadir="$S/mysql/data" \
    --auth-root-authentication-method=normal --skip-test-db > "$S/log/mariadb-install.log" 2>&1
  start_bg mariadbd mariadbd --no-defaults --user=mysql --datadir="$S/mysql/data" \
    --socket="$S/mysql/mysqld.sock" --pid-file="$S/mysql/mysqld.pid" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --skip-log-bin --innodb-buffer-pool-size=256M \
    --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 --innodb-flush-log-at-trx-commit=2 \
    --log-error="$S/log/mariadb.err"
  wait_for "$DEADLINE" "mariadbd" mariadb-admin --no-defaults -S "$S/mysql/mysqld.sock" -uroot ping
  lap "mariadbd up"
  mariadb --no-defaults -S "$S/mysql/mysqld.sock" -uroot -e "
    CREATE USER 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
    CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

  start_bg slurmdbd slurmdbd -D
  wait_for "$DEADLINE" "slurmdbd" sacctmgr -n show cluster
  lap "slurmdbd up"
  sacctmgr -i add cluster "$CLUSTER" > /dev/null
  start_ctld_and_slurmd
  lap "Slurm ready: SLURM_CONF=$SLURM_CONF"
}

cmd_reconfigure() {
  [ $# -eq 1 ] || { log "usage: $0 reconfigure FRAGMENT"; return 2; }
  ctld_up || { log "not running: start it first"; return 1; }
  install_policy "$1"
  # PreemptType, PriorityType and AccountingStorageTRES only change on a restart.
  local d
  for d in "${SLURMDS[@]}"; do stop_one "$d"; done
  stop_one slurmctld
  start_ctld_and_slurmd
}

cmd_stop() {
  [ -d "$S/run" ] || return 0
  local pid i
  pid=$(pid_of slurmctld 2>/dev/null) || pid=""
  if [ -n "$pid" ] && alive "$pid"; then
    # Cancel every job first so their slurmstepd processes end with them.
    local ids
    ids=$(squeue -h -o %i 2>/dev/null || true)
    [ -z "$ids" ] || scancel --full $ids 2>/dev/null || true
    for i in $(seq 1 25); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do stop_one "${DAEMONS[$i]}"; done
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  reconfigure) shift; cmd_reconfigure "$@" ;;
  env) echo "SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 install|start|stop|status|reconfigure FRAGMENT|env" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Throughput of `arbiter scheduler` against kube-scheduler, end to end through a real
# kube-apiserver, in one run on one cluster (issue 26; docs/kubernetes.md "Throughput"). A
# benchmark, not a test.
#
#   bench/kubesched.sh [NODES [PODS]]        default 1000 nodes, 5000 pods per scheduler
#   PREEMPT=1 bench/kubesched.sh [NODES]     the same with preemption (below)
#
# Starts its own test cluster (scripts/services/kube.sh start DIR --no-scheduler: etcd,
# kube-apiserver, kube-controller-manager, KWOK) in $BENCH_DIR (default /tmp/arbiter-bench-kube),
# applies NODES KWOK nodes (32 CPUs, 256 GiB, 110 pods each) and Arbiter's CRDs, then for each
# scheduler in turn (kube-scheduler first, then Arbiter; each on its own namespace):
#   1. creates PODS pending pods (100m CPU, 128 MiB) with its schedulerName, no scheduler running;
#   2. starts the scheduler and waits until kube-apiserver's audit log (DIR/audit.log, every
#      pods/binding request with its answer) holds PODS successful bindings in the namespace,
#      then PODS events.k8s.io Events created there (the Scheduled ones: both schedulers write one
#      per pod; at most 120 s more without a new one);
#   3. stops it.
# Reported per scheduler: pods bound per second between the first and the last binding as the
# API server recorded them (`bind rate`), and from the process's start to the last binding
# (`end to end`, which includes listing the cluster); when the last Event was created, and the
# pods per second from the start to the later of the last binding and the last Event (`with
# events`: what kube-apiserver was asked for the pods, Events included); the CPU seconds (utime +
# stime from /proc/PID/stat) of the scheduler, kube-apiserver, etcd, KWOK and the controller
# manager until both are in. Both clients may call the API as fast as they can: Arbiter has no client-side
# rate limit; kube-scheduler's clientConnection.qps/burst are raised to 10000/10000 (its default
# of 50/100 would be the limit). The Arbiter pass runs second, with the first pass's pods still
# running on the nodes (more objects for it to list: the order favours kube-scheduler).
#
# PREEMPT=1: preemption. PriorityClasses bench-low (100) and bench-high (1000); per scheduler,
# on empty nodes (the first pass's pods and namespace deleted after it): 2 x NODES low-priority pods of 16 CPUs
# created already bound (spec.nodeName: two per node fill its 32 CPUs; no scheduler involved),
# with the scheduler's schedulerName, running; then one high-priority pod of 16 CPUs per node
# (98% of NODES: the nodes sure to be untainted), pending,
# created with no scheduler running; the scheduler started: each high pod can run only once a
# low pod on its node is gone. Waited for: every high pod bound, and as many evictions (Arbiter:
# `pods/eviction` 201; kube-scheduler deletes its victims: `delete pods` by its user agent, 200).
# Reported as above plus evictions, and evictions per second from the start to the last one.
# Events waited for: 2 per high pod (its Scheduled, its victim's Preempted), then until none is
# new for 5 s (FailedScheduling ones come beside; outside the CPU figures).
# The audit log also records event creates and pod deletes for this (a copy of kube.sh's policy
# in DIR.svc, kube.sh itself unchanged; both passes pay the same).
#
#   ARBITER=build/arbiter   the binary to measure (built beforehand: RelWithDebInfo as the README)
#   PERF=1                  record `perf record -g` of Arbiter's pass into DIR/arbiter.perf.data
#   AUDIT=1                 kube-apiserver also logs (Metadata level) every request of the two
#                           schedulers' users (and kubectl's, the admin's), and the report counts
#                           each scheduler's requests by verb and resource over its pass. Costs
#                           kube-apiserver some CPU (an audit line per request): not for timing.
#                           (Added to the copy of the policy above.)
#
# Takes the kube service lock (/tmp/arbiter-svc-kube.lock) for its whole run, so that no test
# cluster runs beside it. About 3 minutes at 1000 nodes and 5000 pods.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODES=${1:-1000}
PODS=${2:-5000}
D=${BENCH_DIR:-/tmp/arbiter-bench-kube}
ARBITER=${ARBITER:-$ROOT/build/arbiter}
[ -x "$ARBITER" ] || { echo "bench/kubesched.sh: $ARBITER is not built" >&2; exit 1; }

if [ "${ARBITER_BENCH_LOCKED:-0}" != 1 ]; then
  exec env ARBITER_BENCH_LOCKED=1 flock /tmp/arbiter-svc-kube.lock "$0" "$@"
fi

HZ=$(getconf CLK_TCK)
cpu_ticks() { # utime + stime of a PID, in clock ticks
  awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
pid_of() { cat "$D/$1.pid"; }
now_ms() { date +%s%3N; }
load() { cut -d' ' -f1 /proc/loadavg; }

cleanup() {
  [ -n "${SCHED_PID:-}" ] && kill "$SCHED_PID" 2>/dev/null || true
  scripts/services/kube.sh stop "$D" >/dev/null 2>&1 || true
}
trap cleanup EXIT

load_before=$(load)
echo "bench/kubesched.sh: starting the cluster in $D" >&2
rm -rf "$D.svc" && mkdir -p "$D.svc/scripts"
cp -r scripts/services "$D.svc/scripts/services"
ln -s "$ROOT/tests" "$D.svc/tests"
# Before the policy's last rule (level None): Event creates and pod deletes; with AUDIT=1 every
# request of the admin (Arbiter, kubectl) and of kube-scheduler, at Metadata level (verb,
# resource, subresource, user agent, code).
extra='- level: Metadata\n  verbs: [create]\n  resources:\n  - group: events.k8s.io\n    resources: [events]\n- level: Metadata\n  verbs: [delete]\n  resources:\n  - group: ""\n    resources: [pods]'
[ "${AUDIT:-0}" = 1 ] && extra="$extra\n- level: Metadata\n  users: [kubernetes-admin, system:kube-scheduler]"
awk -v extra="$extra" '/^- level: None/ { print extra } { print }' \
  scripts/services/kube/audit-policy.yaml > "$D.svc/scripts/services/kube/audit-policy.yaml"
KUBE_SH=$D.svc/scripts/services/kube.sh
"$KUBE_SH" start "$D" --no-scheduler >&2
KC="$D/bin/kubectl --kubeconfig $D/kubeconfig"
$KC apply -f deploy/crds.yaml >/dev/null

echo "bench/kubesched.sh: $NODES nodes" >&2
mkdir -p "$D/bench"
for ((i = 0; i < NODES; i++)); do
  printf -- '---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n-%05d\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {kubernetes.io/hostname: n-%05d}\nstatus:\n  capacity: {cpu: "32", memory: 256Gi, pods: "110"}\n  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}\n' "$i" "$i"
done > "$D/bench/nodes.yaml"
$KC create -f "$D/bench/nodes.yaml" >/dev/null
# Ready and untainted. The node lifecycle controller lifts node.kubernetes.io/not-ready once KWOK
# has made a node Ready, at the controller manager's 20 API calls a second (5000 nodes: over 4
# minutes): lifted here in one kubectl instead (a node not Ready yet gets it back).
sleep 5
$KC taint nodes --all node.kubernetes.io/not-ready:NoSchedule- > /dev/null 2>&1 || true
# On a loaded 2-core machine KWOK may renew a few of 5000 node leases late: the node lifecycle
# controller then taints them unreachable for a while. 98% is enough (both passes see the same).
need=$((NODES * 98 / 100))
for ((t = 0; t < 600; t++)); do
  ready=$($KC get nodes -o jsonpath='{range .items[*]}{.spec.taints}{"|"}{end}' | tr '|' '\n' | grep -c '^$' || true)
  [ "$ready" -ge "$need" ] && break
  sleep 1
done
[ "$ready" -ge "$need" ] || { echo "bench/kubesched.sh: only $ready of $NODES nodes untainted" >&2; exit 1; }
echo "bench/kubesched.sh: $ready of $NODES nodes ready and untainted" >&2

pods_yaml() { # namespace schedulerName
  printf -- 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$1"
  for ((i = 0; i < PODS; i++)); do
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-%05d\n  namespace: %s\nspec:\n  schedulerName: %s\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: 100m, memory: 128Mi}\n' "$i" "$1" "$2"
  done
}

# The requests in namespace $1 whose audit lines hold every fixed string after it, and the first
# and last one's requestReceivedTimestamp in milliseconds of the day (the run does not cross
# midnight): "COUNT FIRST LAST".
audited() {
  grep -h -F "\"namespace\":\"$1\"" "$D"/audit*.log 2>/dev/null | { shift; only "$@"; } | awk '
    { match($0, /"requestReceivedTimestamp":"[^"]*"/); ts = substr($0, RSTART + 28, RLENGTH - 29)
      split(substr(ts, 12), hms, ":"); ms = (hms[1] * 3600 + hms[2] * 60 + hms[3]) * 1000
      if (n == 0 || ms < first) first = ms; if (ms > last) last = ms; n++ }
    END { printf "%d %d %d\n", n, first, last }'
}
only() { # the lines of stdin holding every fixed string given
  if [ $# -eq 0 ]; then cat; else
    local f=$1
    shift
    { grep -F -- "$f" || true; } | only "$@"
  fi
}
bindings() { audited "$1" '"subresource":"binding"' '"code":201'; }
events() { audited "$1" '"resource":"events"' '"verb":"create"' '"code":201'; }
# Victims gone: Arbiter's evictions, kube-scheduler's deletes (its user agent).
evictions() {
  if [ "$2" = arbiter ]; then
    audited "$1" '"subresource":"eviction"' '"code":201'
  else
    audited "$1" '"verb":"delete"' '"userAgent":"kube-scheduler' '"code":200'
  fi
}

# AUDIT=1: the requests of user agent $1 (a prefix) in the audit log, by verb and resource
# (resource/subresource), most first. (A watch still open when the log is read is counted.)
requests() {
  grep -h "\"userAgent\":\"$1" "$D"/audit*.log 2>/dev/null | awk '
    { v = ""; r = ""; s = ""
      if (match($0, /"verb":"[^"]*"/)) v = substr($0, RSTART + 8, RLENGTH - 9)
      if (match($0, /"objectRef":\{[^}]*\}/)) { o = substr($0, RSTART, RLENGTH)
        if (match(o, /"resource":"[^"]*"/)) r = substr(o, RSTART + 12, RLENGTH - 13)
        if (match(o, /"subresource":"[^"]*"/)) s = "/" substr(o, RSTART + 15, RLENGTH - 16) }
      if (r == "" && match($0, /"requestURI":"[^"?]*/)) r = substr($0, RSTART + 14, RLENGTH - 14)
      # A watch is logged when its response starts and when it ends: counted once, at its start.
      if (v == "watch" && index($0, "\"stage\":\"ResponseStarted\"") == 0) next
      n[v " " r s]++ }
    END { for (k in n) printf "%7d %s\n", n[k], k }' | sort -rn
}

COMPONENTS=(kube-apiserver etcd kwok kube-controller-manager)
declare -A RESULT
PREEMPT=${PREEMPT:-0}
HIGH=$need # PREEMPT=1: high-priority pods, one per node (of the nodes sure to be untainted)

# PREEMPT=1: namespace $1's low-priority pods (schedulerName $2), two bound to each node, running;
# then its HIGH high-priority pods, pending.
preempt_pods() {
  { printf -- 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$1"
    for ((i = 0; i < NODES; i++)); do
      for j in 0 1; do
        printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: l-%05d-%d\n  namespace: %s\nspec:\n  schedulerName: %s\n  nodeName: n-%05d\n  priorityClassName: bench-low\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: "16", memory: 128Mi}\n' "$i" "$j" "$1" "$2" "$i"
      done
    done; } > "$D/bench/$1-low.yaml"
  $KC create -f "$D/bench/$1-low.yaml" >/dev/null
  for ((t = 0; t < 600; t++)); do
    [ "$($KC get pods -n "$1" --field-selector=status.phase!=Running -o name | wc -l)" = 0 ] && break
    sleep 1
  done
  for ((i = 0; i < HIGH; i++)); do
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: h-%05d\n  namespace: %s\nspec:\n  schedulerName: %s\n  priorityClassName: bench-high\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: "16", memory: 128Mi}\n' "$i" "$1" "$2"
  done > "$D/bench/$1-high.yaml"
  $KC create -f "$D/bench/$1-high.yaml" >/dev/null
}

run_pass() { # label namespace schedulerName command...
  local label=$1 ns=$2 name=$3
  shift 3
  local want=$PODS want_events=$PODS c0=$SECONDS
  if [ "$PREEMPT" = 1 ]; then
    preempt_pods "$ns" "$name"
    want=$HIGH want_events=$((2 * HIGH)) # each high pod's Scheduled, its victim's Preempted
    echo "bench/kubesched.sh: $label: $((2 * NODES)) low pods running, $HIGH high pods created in $((SECONDS - c0)) s; scheduling" >&2
  else
    pods_yaml "$ns" "$name" > "$D/bench/$ns.yaml"
    $KC create -f "$D/bench/$ns.yaml" >/dev/null
    echo "bench/kubesched.sh: $label: $PODS pods created in $((SECONDS - c0)) s; scheduling" >&2
  fi
  declare -A before
  for c in "${COMPONENTS[@]}"; do before[$c]=$(cpu_ticks "$(pid_of "$c")"); done
  local t0 n first last ne=0 efirst=0 elast=0 nv=0 vfirst=0 vlast=0
  t0=$(now_ms)
  "$@" > "$D/$label.log" 2>&1 &
  SCHED_PID=$!
  if [ "$label" = arbiter ] && [ "${PERF:-0}" = 1 ]; then
    perf record -g -o "$D/arbiter.perf.data" -p "$SCHED_PID" > /dev/null 2>&1 &
    PERF_PID=$!
  fi
  for ((t = 0; t < 6000; t++)); do
    read -r n first last <<< "$(bindings "$ns")"
    [ "$PREEMPT" = 1 ] && read -r nv vfirst vlast <<< "$(evictions "$ns" "$label")"
    [ "$n" -ge "$want" ] && { [ "$PREEMPT" != 1 ] || [ "$nv" -ge "$want" ]; } && break
    kill -0 "$SCHED_PID" 2>/dev/null || { echo "bench/kubesched.sh: $label exited" >&2; tail "$D/$label.log" >&2; exit 1; }
    sleep 0.2
  done
  [ "$n" -ge "$want" ] || { echo "bench/kubesched.sh: $label bound $n of $want" >&2; exit 1; }
  # The Events: as many as wanted (or none new for 120 s).
  local seen=-1 quiet=$SECONDS
  for ((t = 0; t < 6000; t++)); do
    read -r ne efirst elast <<< "$(events "$ns")"
    [ "$ne" -ge "$want_events" ] && break
    [ "$ne" != "$seen" ] && { seen=$ne; quiet=$SECONDS; }
    [ $((SECONDS - quiet)) -ge 120 ] && break
    sleep 0.2
  done
  local sched_ticks after_ms
  sched_ticks=$(cpu_ticks "$SCHED_PID")
  after_ms=$(now_ms)
  declare -A used
  for c in "${COMPONENTS[@]}"; do used[$c]=$(($(cpu_ticks "$(pid_of "$c")") - ${before[$c]})); done
  # PREEMPT=1: kube-scheduler's FailedScheduling Events come beside those: the last one counted
  # once none is new for 5 s (outside the CPU figures).
  if [ "$PREEMPT" = 1 ]; then
    seen=$ne quiet=$SECONDS
    while [ $((SECONDS - quiet)) -lt 5 ]; do
      sleep 0.5
      read -r ne efirst elast <<< "$(events "$ns")"
      [ "$ne" != "$seen" ] && { seen=$ne; quiet=$SECONDS; }
    done
  fi
  [ -n "${PERF_PID:-}" ] && { kill -INT "$PERF_PID" 2>/dev/null || true; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=; }
  kill "$SCHED_PID" 2>/dev/null || true
  wait "$SCHED_PID" 2>/dev/null || true
  SCHED_PID=
  if [ "$PREEMPT" = 1 ]; then
    read -r nv vfirst vlast <<< "$(evictions "$ns" "$label")"
    # Empty nodes for the next pass: every pod of the namespace deleted at once, then it. At
    # 5000 nodes (15,000 pods) kube-apiserver's 60 s request timeout may end the collection's
    # delete while it goes on: then wait for the namespace to go (the pass's figures are taken).
    $KC delete --raw "/api/v1/namespaces/$ns/pods?gracePeriodSeconds=0" >/dev/null ||
      echo "bench/kubesched.sh: deleting $ns's pods did not answer in time; waiting for it" >&2
    $KC delete namespace "$ns" --timeout=900s >/dev/null
  else
    # KWOK has run every pod (their status written) before the next pass is measured.
    for ((t = 0; t < 600; t++)); do
      [ "$($KC get pods -n "$ns" --field-selector=status.phase!=Running -o name | wc -l)" = 0 ] && break
      sleep 1
    done
  fi
  # The day's milliseconds of the process start, for the end-to-end figures.
  local t0_day=$((t0 % 86400000))
  local span=$((last - first)) e2e=$((last - t0_day)) ev_e2e=$((elast - t0_day)) v_e2e=$((vlast - t0_day))
  RESULT[$label]=$(awk -v n="$n" -v span="$span" -v e2e="$e2e" -v ne="$ne" -v ev="$ev_e2e" \
    -v nv="$nv" -v ve="$v_e2e" -v hz="$HZ" -v s="$sched_ticks" -v pre="$PREEMPT" \
    -v api="${used[kube-apiserver]}" -v etcd="${used[etcd]}" -v kwok="${used[kwok]}" \
    -v kcm="${used[kube-controller-manager]}" -v wall="$((after_ms - t0))" 'BEGIN {
      all = (ev > e2e ? ev : e2e) / 1000
      printf "%d | %.1f | %.0f | %.1f | %.0f | %d | %.1f | %.0f", n, span / 1000,
        n / (span / 1000), e2e / 1000, n / (e2e / 1000), ne, ev / 1000, n / all
      if (pre == 1) printf " | %d | %.1f | %.0f", nv, ve / 1000, nv / (ve / 1000)
      printf " | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f", wall / 1000, s / hz, api / hz,
        etcd / hz, kwok / hz, kcm / hz }')
}

cat > "$D/bench/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $D/kube-scheduler.kubeconfig
  qps: 10000
  burst: 10000
leaderElection:
  leaderElect: false
EOF
if [ "$PREEMPT" = 1 ]; then
  printf -- 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: bench-low}\nvalue: 100\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: bench-high}\nvalue: 1000\n' |
    $KC create -f - >/dev/null
fi
sched_port=$(sed -n 's/^kube-scheduler=//p' "$D/ports")
run_pass kube-scheduler bench-k default-scheduler "$D/bin/kube-scheduler" \
  --config="$D/bench/kube-scheduler.yaml" --bind-address=127.0.0.1 --secure-port="$sched_port" \
  --authentication-kubeconfig="$D/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$D/kube-scheduler.kubeconfig" --profiling=false
run_pass arbiter bench-a arbiter "$ARBITER" scheduler --kubeconfig "$D/kubeconfig" \
  --scheduler-name arbiter

k=${RESULT[kube-scheduler]}
a=${RESULT[arbiter]}
ratio() { # column
  awk -v k="$(echo "$k" | cut -d'|' -f"$1")" -v a="$(echo "$a" | cut -d'|' -f"$1")" 'BEGIN { printf "%.2f", a / k }'
}
build=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$ARBITER")/CMakeCache.txt" 2>/dev/null || echo unknown)
if [ "$PREEMPT" = 1 ]; then
  echo "## PREEMPT=1 bench/kubesched.sh $NODES nodes: $((2 * NODES)) low-priority pods bound, $HIGH high-priority pods per scheduler"
else
  echo "## bench/kubesched.sh $NODES nodes, $PODS pods per scheduler"
fi
echo
echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git describe --always --dirty 2>/dev/null || echo unknown); arbiter build: $build"
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load before $load_before, after $(load)"
echo "- cluster: $(cat "$D/bin/../complete" 2>/dev/null | cut -d' ' -f1) (tests/cluster), KWOK nodes"
echo
pre_cols="" pre_sep=""
[ "$PREEMPT" = 1 ] && pre_cols=" evictions | start to last eviction (s) | evictions/s |" pre_sep="---|---|---|"
echo "| scheduler | pods bound | first to last binding (s) | bind rate (pods/s) | start to last binding (s) | end to end (pods/s) | Events created | start to last Event (s) | with events (pods/s) |$pre_cols wall (s) | scheduler CPU (s) | kube-apiserver CPU (s) | etcd CPU (s) | KWOK CPU (s) | controller-manager CPU (s) |"
echo "|---|---|---|---|---|---|---|---|---|$pre_sep---|---|---|---|---|---|"
echo "| kube-scheduler (qps/burst 10000) | $k |"
echo "| arbiter scheduler | $a |"
echo
line="Arbiter / kube-scheduler: bind rate $(ratio 3)x, end to end $(ratio 5)x, with events $(ratio 8)x"
[ "$PREEMPT" = 1 ] && line="$line, evictions/s $(ratio 11)x"
echo "$line."
if [ "${AUDIT:-0}" = 1 ]; then
  for ua in kube-scheduler arbiter-scheduler; do
    echo
    echo "Requests of $ua (audit log, by verb and resource):"
    echo '```'
    requests "$ua"
    echo '```'
  done
fi

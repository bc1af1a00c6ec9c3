#!/usr/bin/env bash
# Every speed figure the docs quote, from one command: builds the benchmarks the way the README
# builds the product (scripts/setup.sh, then cmake in $BUILD_DIR with the README's build type),
# runs them and prints markdown tables headed by what makes a figure reproducible: the commit,
# the build type and its flags, the CPU model, the core count and the load before and after.
# The docs quote only this script's output.
#
#   bench/run.sh [SECTION...]     sections: engine (default), backfill, large, all
#     engine    bench_engine: placement, preemption, reclaim + room, gangs, backfill placement
#               (5,000 nodes x 8 GPUs; rates per second of the measured thread's CPU time and of
#               wall time; the median of REPS runs)                               about 2 min
#     backfill  the openb trace on 5 nodes with backfillDepth off/1/2/4/8 (deterministic: the
#               same waits on every machine)                               about 1-2 min a depth
#     large     bench/large_sim.sh 10000 1000000 through the CLI: wall, user, system, peak RSS
#               (REPS runs; needs about 5 GB free memory)                         about 2 min a run
#     trace     bench_trace: the FGD paper's saturate runs and timelines on the openb trace
#     billing   bench_billing: rollups, the SQLite ledger, month invoices (builds a 1.4 GB ledger
#               in the temp directory once)                                       about 3 min
#     ledger10m a month's invoice for every tenant and a month's FOCUS export from a 10M-row
#               ledger (3 months of 4,630 series, 2.7 GB; built once, about 7 min, and kept in
#               $ARBITER_BENCH_CACHE, default ~/.cache/arbiter/bench), through bench_billing and
#               through the CLI (`arbiter invoice --month`, REPS runs)      about 1 min once built
#     serve     bench_serve: the daemon in process on loopback (creates, watches, lists, start-up)
#     serveload bench_serve_load: the real binary with 10,000 watches and 1,000 slowloris clients
#               attached: creates' rate and latency alone and under that load (one run a
#               repetition; needs ~25,000 open files)                            about 1 min a run
#               and creates as live pods grow (0 and 100k; ARBITER_BENCH_LIVE_PODS=300000 or
#               1000000 adds that size): daemon CPU per create, p50/p99, RSS    about 3 min more
#     warehouse bench_warehouse: ledger sync to ClickHouse and PostgreSQL and invoices read back;
#               starts and stops both servers (scripts/services)                  about 10 min
#     warehouse10m  bench_warehouse at 10M rows: the 10M-row ledger of ledger10m (built there
#               first), sealed (a copy kept beside it), synced once into each server, then a
#               month's invoice for every tenant through the monthly rollups and from the hourly
#               rows (5 runs each); starts and stops both servers                 about 12 min
#
#   REPS=3             repetitions (engine, large)
#   BUILD_DIR=build    the build directory (the README's)
#   ARBITER_BENCH_NO_BUILD=1   use the binaries already in BUILD_DIR
#
# Figures are comparable only between runs with the same header; a load above the core count
# makes wall times meaningless (the per-CPU-second rates suffer less).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
REPS=${REPS:-3}
SECTIONS=("$@")
[ ${#SECTIONS[@]} -gt 0 ] || SECTIONS=(engine)
[ "${SECTIONS[0]}" = all ] && SECTIONS=(engine backfill large trace billing ledger10m serve serveload warehouse warehouse10m)
for s in "${SECTIONS[@]}"; do
  case $s in engine | backfill | large | trace | billing | ledger10m | serve | serveload | warehouse | warehouse10m) ;; *)
    echo "bench/run.sh: unknown section '$s' (engine, backfill, large, trace, billing, ledger10m, serve, serveload, warehouse, warehouse10m, all)" >&2
    exit 2
    ;;
  esac
done

if [ "${ARBITER_BENCH_NO_BUILD:-0}" != 1 ]; then
  ./scripts/setup.sh >&2
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  echo "bench/run.sh: building arbiter and the benchmarks in $BUILD" >&2
  cmake --build "$BUILD" -j2 --target arbiter bench_engine bench_trace bench_billing bench_serve bench_serve_load bench_warehouse -- --quiet >&2
fi

load() { cut -d' ' -f1 /proc/loadavg; }
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
flags=$(sed -n "s/^CMAKE_CXX_FLAGS_$(echo "$build_type" | tr a-z A-Z):[A-Z]*=//p" "$BUILD/CMakeCache.txt")
echo "## bench/run.sh ${SECTIONS[*]}"
echo
echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
echo "- build: $build_type ($flags), $(c++ --version | head -n1)"
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; load before: $(load)"
echo

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
fmt_k() { awk -v x="$1" 'BEGIN {if (x == "-") print "-"; else if (x >= 1000) printf "%.1fk", x / 1000; else printf "%.0f", x}'; }

# engine: the rows of docs/scheduling.md's performance table, with the issue's targets.
engine() {
  local json
  json=$(mktemp)
  "$BUILD/bench_engine" --benchmark_filter='BM_(Placement|Preemption|ReclaimPreemption|GangPlacement|GangPreemption|GangReclaimPreemption|BackfillPlacement)/' \
    --benchmark_repetitions="$REPS" --benchmark_format=json >"$json" 2>/dev/null
  echo "### Engine (bench_engine, 5,000 nodes x 8 GPUs, median of $REPS)"
  echo
  echo "| benchmark | what is counted | per CPU-second | per wall second | target |"
  echo "|---|---|---|---|---|"
  local row name what counter target
  for row in "BM_Placement|placements of 50,000 pending pods, one cycle|placements|200k" \
    "BM_Preemption|preemption decisions, 5,000 preemptors on a full pool|decisions|20k" \
    "BM_ReclaimPreemption|single pods reclaiming quota and preempting for room|decisions|10k" \
    "BM_GangPlacement|placements, 4,000 groups of 8 one-GPU members|placements|-" \
    "BM_GangPreemption|group decisions, 1,000 groups of 4 preempting|group_decisions|-" \
    "BM_GangReclaimPreemption|group decisions, reclaim + room|group_decisions|-" \
    "BM_BackfillPlacement|placements beside 4 reservations, 5,000 pods|placements|-"; do
    IFS='|' read -r name what counter target <<<"$row"
    local cpu wall
    cpu=$(python3 - "$json" "$name" "$counter/cpu_s" <<'PY' | median
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "iteration" and b["name"].startswith(sys.argv[2] + "/") and sys.argv[3] in b:
        print(b[sys.argv[3]])
PY
)
    wall=$(python3 - "$json" "$name" "$counter/s" <<'PY' | median
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "iteration" and b["name"].startswith(sys.argv[2] + "/") and sys.argv[3] in b:
        print(b[sys.argv[3]])
PY
)
    echo "| \`$name\` | $what | $(fmt_k "$cpu")/cpu_s | $(fmt_k "$wall")/s | $target |"
  done
  echo
  rm -f "$json"
}

# backfill: docs/scheduling.md's backfillDepth table on the openb trace: its first five 8-GPU
# nodes, BestFit, the three tiers with preemptionPolicy: Never, --time-limits 150.
backfill() {
  local trace=${ARBITER_TRACES:-../shared/traces}/alibaba-gpu-v2023/csv
  if [ ! -f "$trace/openb_pod_list_default.csv" ]; then
    echo "bench/run.sh: backfill needs the openb trace in $trace (set ARBITER_TRACES)" >&2
    return 1
  fi
  local work
  work=$(mktemp -d)
  awk -F, 'NR == 1 || ($4 == 8 && n++ < 5)' "$trace/openb_node_list_gpu_node.csv" >"$work/nodes.csv"
  echo "### Backfill on the openb trace (8,152 pods on its first five 8-GPU nodes, BestFit, --time-limits 150)"
  echo
  echo "| backfillDepth | 8-GPU max wait | 8-GPU mean wait | all pods' mean wait | all pods' p99 | CPU |"
  echo "|---|---|---|---|---|---|"
  local depth
  for depth in off 1 2 4 8; do
    backfill_policy "$depth" >"$work/policy.yaml"
    /usr/bin/time -f "%U" -o "$work/cpu" "$BUILD/arbiter" sim --nodes "$work/nodes.csv" \
      --pods "$trace/openb_pod_list_default.csv" --policy-file "$work/policy.yaml" \
      --time-limits 150 --report-json "$work/r.json" -q >/dev/null
    python3 - "$work/r.json" "$depth" "$(cat "$work/cpu")" <<'PY'
import json, math, sys
ws = json.load(open(sys.argv[1]))["policyRun"]["workloads"]
def gpus(w):
    for kv in w["requests"].split(","):
        k, _, v = kv.partition("=")
        if k == "nvidia.com/gpu":
            return v
    return "0"
waits = sorted(w["pendingSeconds"] for w in ws)
big = [w["pendingSeconds"] for w in ws if gpus(w) == "8"]
p99 = waits[max(0, math.ceil(0.99 * len(waits)) - 1)]  # nearest rank
label = {"off": "backfill off", "1": "1 (default)"}.get(sys.argv[2], sys.argv[2])
print("| %s | %.1f h | %.1f h | %.1f min | %.1f h | %s s |" % (label, max(big) / 3600, sum(big) / len(big) / 3600,
      sum(waits) / len(waits) / 60, p99 / 3600, sys.argv[3]))
PY
  done
  echo
  rm -rf "$work"
}

backfill_policy() {  # DEPTH
  local scheduling="{backfill: true, backfillDepth: $1}"
  [ "$1" = off ] && scheduling="{backfill: false}"
  cat <<YAML
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: bench}
spec:
  placement: {policy: BestFit}
  scheduling: $scheduling
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: interactive}
value: 1000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 5000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: inference}
value: 10000
preemptionPolicy: Never
YAML
}

# large: the 1M-pod timeline through the CLI.
large() {
  echo "### 1,000,000 pods on 10,000 nodes through the CLI (bench/large_sim.sh, $REPS run(s))"
  echo
  echo "| run | wall | user | system | peak RSS |"
  echo "|---|---|---|---|---|"
  local i out walls=() rss=()
  for i in $(seq 1 "$REPS"); do
    out=$(bench/large_sim.sh 10000 1000000 "$BUILD/arbiter" 2>&1 >/dev/null | grep '^wall ')
    # "wall W s, user U s, system S s, max RSS R KiB"
    echo "$out" | awk -v i="$i" '{gsub(",", ""); printf "| %d | %s s | %s s | %s s | %.2f GiB |\n", i, $2, $5, $8, $12 / 1048576}'
  done
  echo
}

# A Google Benchmark binary's results as a table: the median of REPS repetitions of each
# benchmark (wall time, CPU time and every counter).
gbench() {  # TITLE BINARY [benchmark args...]
  local title=$1 bin=$2 json
  shift 2
  json=$(mktemp)
  "$BUILD/$bin" --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
    --benchmark_format=json "$@" >"$json" 2>/dev/null
  echo "### $title ($bin, median of $REPS)"
  echo
  python3 - "$json" <<'PY'
import json, sys
skip = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
        "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
        "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message"}
def num(x):
    if abs(x) >= 1e6: return "%.2fM" % (x / 1e6)
    if abs(x) >= 1e3: return "%.1fk" % (x / 1e3)
    return "%.3g" % x
print("| benchmark | wall | CPU | counters |")
print("|---|---|---|---|")
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
        continue
    name = b["run_name"] if "run_name" in b else b["name"]
    unit = b.get("time_unit", "ns")
    counters = ", ".join("%s=%s" % (k, num(v)) for k, v in sorted(b.items())
                         if k not in skip and isinstance(v, (int, float)))
    print("| `%s` | %.1f %s | %.1f %s | %s |" % (name, b["real_time"], unit, b["cpu_time"], unit, counters))
PY
  echo
  rm -f "$json"
}

trace() { gbench "Trace replay" bench_trace; }
billing() { gbench "Billing and the SQLite ledger" bench_billing --benchmark_filter='-10MRow'; }
# ledger10m: issue 28's goal, a month's invoice for every tenant in under 100 ms at 10M rows.
ledger10m() {
  gbench "A month of a 10M-row ledger (3 months x 4,630 series)" bench_billing --benchmark_filter='10MRow'
  local db=${ARBITER_BENCH_CACHE:-$HOME/.cache/arbiter/bench}/ledger-10M-3months-schema5-v1.db
  echo "### \`arbiter invoice --db LEDGER --month M -o json\` on it (whole process, $REPS runs)"
  echo
  echo "| month | wall (median) | user | system | peak RSS | invoices |"
  echo "|---|---|---|---|---|---|"
  local month i t
  for month in 2026-01 2026-03; do
    t=$(mktemp)
    for i in $(seq 1 "$REPS"); do
      /usr/bin/time -f "%e %U %S %M" -a -o "$t" "$BUILD/arbiter" invoice --db "$db" --month "$month" -o json >"$t.json"
    done
    awk -v m="$month" -v n="$(grep -c '"namespace"' "$t.json")" '{w[NR] = $1; u = $2; s = $3; r = $4}
      END {asort(w); printf "| %s | %.3f s | %s s | %s s | %.0f MiB | %d |\n", m, w[int((NR + 1) / 2)], u, s, r / 1024, n}' "$t"
    rm -f "$t" "$t.json"
  done
  echo
}
serve() { gbench "The daemon (arbiter serve), in process on loopback" bench_serve; }
serveload() { gbench "The daemon (arbiter serve) with 10,000 watches and 1,000 slow clients" bench_serve_load; }
with_warehouses() {  # COMMAND...: runs it with ClickHouse and PostgreSQL started, then stops them
  ./scripts/services/clickhouse.sh install >&2
  ./scripts/services/postgres.sh install >&2
  ./scripts/services/clickhouse.sh start >&2
  ./scripts/services/postgres.sh start >&2
  local rc=0
  "$@" || rc=$?
  ./scripts/services/clickhouse.sh stop >&2 || true
  ./scripts/services/postgres.sh stop >&2 || true
  return $rc
}
warehouse() {
  with_warehouses gbench "Warehouses (ClickHouse, PostgreSQL)" bench_warehouse --benchmark_filter=-TenMillion
}
# warehouse10m: issue 28's goal, a month's invoice for every tenant in under 300 ms from
# ClickHouse at 10M rows.
warehouse10m() {
  with_warehouses gbench "Warehouses at 10M rows (the ledger10m ledger, sealed)" bench_warehouse --benchmark_filter=TenMillion
}

for s in "${SECTIONS[@]}"; do "$s"; done
echo "- load after: $(load)"

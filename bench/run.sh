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
#               same numbers on every machine)                                    about 3 min
#     large     bench/large_sim.sh 10000 1000000 through the CLI: wall, user, system, peak RSS
#               (the median of REPS runs; needs about 5 GB free memory)           about 2 min a run
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
[ "${SECTIONS[0]}" = all ] && SECTIONS=(engine backfill large)
for s in "${SECTIONS[@]}"; do
  case $s in engine | backfill | large) ;; *)
    echo "bench/run.sh: unknown section '$s' (engine, backfill, large, all)" >&2
    exit 2
    ;;
  esac
done

if [ "${ARBITER_BENCH_NO_BUILD:-0}" != 1 ]; then
  ./scripts/setup.sh >&2
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  echo "bench/run.sh: building arbiter and bench_engine in $BUILD" >&2
  cmake --build "$BUILD" -j2 --target arbiter bench_engine -- --quiet >&2
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

# backfill: docs/scheduling.md's backfillDepth table on the openb trace (5 nodes, --time-limits 150).
backfill() {
  local trace=../shared/traces/alibaba-gpu-v2023
  [ -d "$trace" ] || trace=${ARBITER_TRACES:-}/alibaba-gpu-v2023
  if [ ! -f "$trace/openb_pod_list_default.csv" ]; then
    echo "bench/run.sh: backfill needs the openb trace (../shared/traces/alibaba-gpu-v2023 or ARBITER_TRACES)" >&2
    return 1
  fi
  local work
  work=$(mktemp -d)
  head -n 6 "$trace/openb_node_list_gpu_node.csv" >"$work/nodes.csv"
  echo "### Backfill on the openb trace (8,152 pods on 5 8-GPU nodes, BestFit, --time-limits 150)"
  echo
  echo "| backfillDepth | 8-GPU max wait | 8-GPU mean wait | all pods' mean wait | all pods' p99 |"
  echo "|---|---|---|---|---|"
  local depth
  for depth in off 1 2 4 8; do
    backfill_policy "$depth" >"$work/policy.yaml"
    "$BUILD/arbiter" sim --nodes "$work/nodes.csv" --pods "$trace/openb_pod_list_default.csv" \
      --policy-file "$work/policy.yaml" --time-limits 150 --report-json "$work/r.json" -q >/dev/null
    python3 - "$work/r.json" "$depth" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["waits"]
def h(s): return "%.1f h" % (s / 3600.0)
def m(s): return "%.1f min" % (s / 60.0)
big = w["byGpus"]["8"]
label = {"off": "backfill off", "1": "1 (default)"}.get(sys.argv[2], sys.argv[2])
print("| %s | %s | %s | %s | %s |" % (label, h(big["maxSeconds"]), h(big["meanSeconds"]), m(w["all"]["meanSeconds"]), h(w["all"]["p99Seconds"])))
PY
  done
  echo
  rm -rf "$work"
}

backfill_policy() {  # DEPTH
  local backfill="backfill: true"
  [ "$1" = off ] && backfill="backfill: false" || backfill="backfill: true
    backfillDepth: $1"
  cat <<YAML
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: bench}
spec:
  placement: BestFit
  scheduling:
    $backfill
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
  echo "### 1,000,000 pods on 10,000 nodes through the CLI (bench/large_sim.sh, median of $REPS)"
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

for s in "${SECTIONS[@]}"; do "$s"; done
echo "- load after: $(load)"

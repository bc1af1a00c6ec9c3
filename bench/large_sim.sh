#!/usr/bin/env bash
# The issue-3 scale run, end to end through the CLI: generates a pool of NODES nodes x 8 GPUs and
# PODS pods (the shapes and priorities of bench_engine's BM_Timeline: 10 % high priority, 20
# arrivals per second, 10-26 minute runs, three teams with ElasticQuotas in one cohort, a PriceBook)
# as one YAML file, then runs `arbiter sim -f` on it with the JSON report and prints wall time and
# peak memory.
#
#   bench/large_sim.sh [NODES] [PODS] [ARBITER]      default 10000 1000000 build/arbiter
#
# TAINT=1: every fourth node (the H100s) also carries a `PreferNoSchedule` taint
# (bench.arbiter.dev/reserved) that no pod tolerates: a score, never a filter, that changes where
# pods go and how often reclaim searches the nodes (issue 29's slow case).
#
# The manifest (~300 MB for a million pods) and the report go to $WORK (default a temp dir, removed
# at the end unless KEEP=1).
set -euo pipefail
NODES=${1:-10000}
PODS=${2:-1000000}
ARBITER=${3:-build/arbiter}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
trap '[[ "${KEEP:-0}" == 1 ]] || rm -rf "$WORK"' EXIT
MANIFEST=$WORK/pool-$NODES-$PODS.yaml

echo "generating $NODES nodes and $PODS pods into $MANIFEST" >&2
awk -v nodes="$NODES" -v pods="$PODS" -v taint="${TAINT:-0}" 'BEGIN {
  print "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 1000"
  print "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 10000"
  print "---\napiVersion: arbiter.dev/v1alpha1\nkind: PriceBook\nmetadata: {name: standard}\nspec:"
  print "  currency: USD\n  effectiveFrom: \"2026-01-01T00:00:00Z\"\n  mode: Max"
  print "  prices: {cpu: \"0.05\", memory: \"0.01\", nvidia.com/gpu: \"2.50\"}"
  gpus = nodes * 8
  for (t = 0; t < 3; t++) {
    print "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-" t "}"
    print "---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: eq, namespace: team-" t "}"
    print "spec:\n  cohort: pool\n  min: {nvidia.com/gpu: \"" int(gpus / 3) "\"}\n  max: {nvidia.com/gpu: \"" gpus "\"}"
  }
  for (i = 0; i < nodes; i++) {
    printf "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%05d\n", i
    print "  labels: {nvidia.com/gpu.product: " (i % 4 == 0 ? "NVIDIA-H100-80GB-HBM3" : "NVIDIA-A100-SXM4-80GB") "}"
    if (taint == 1 && i % 4 == 0)
      print "spec:\n  taints: [{key: bench.arbiter.dev/reserved, effect: PreferNoSchedule}]"
    print "status:\n  capacity: {cpu: \"128\", memory: 1Ti, nvidia.com/gpu: \"8\"}"
  }
  split("4 8 2 1 16 2", cpu, " "); split("16 32 8 4 64 8", mem, " "); split("1 2 0.5 0 4 0.25", gpu, " ")
  for (i = 0; i < pods; i++) {
    k = (i * 7) % 6 + 1
    g = gpu[k] == "0" ? "" : ", nvidia.com/gpu: \"" gpu[k] "\""
    print "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-" i "\n  namespace: team-" (i % 3)
    print "  annotations: {arbiter.dev/submit-time: \"" (i * 50) "ms\", arbiter.dev/duration: \"" (600 + (i % 17) * 60) "s\"}"
    print "spec:\n  priorityClassName: " (i % 10 == 0 ? "high" : "low") "\n  containers:\n  - name: c"
    print "    resources:\n      requests: {cpu: \"" cpu[k] "\", memory: " mem[k] "Gi" g "}"
  }
}' > "$MANIFEST"
ls -la "$MANIFEST" >&2
/usr/bin/time -f "wall %e s, user %U s, system %S s, max RSS %M KiB" \
  "$ARBITER" sim -q -f "$MANIFEST" --report-json "$WORK/report.json"
ls -la "$WORK/report.json" >&2

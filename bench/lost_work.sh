#!/usr/bin/env bash
# GPU-seconds lost to preemption under Kubernetes' victim order vs PoolPolicy
# preemption.victimOrder: LeastLostWork (issue 29), on the openb trace (data/openb, the FGD paper's
# Alibaba cluster-trace-gpu-v2023 default pod list) replayed as a timeline through `arbiter sim`.
#
#   bench/lost_work.sh [ARBITER] [SEEDS] [STRIDES]     default build/arbiter "42 43 44 45 46" "100 150"
#
# The setup, deterministic end to end:
#  - the pool: every STRIDE-th node of openb's node list (rows 0, STRIDE, 2 STRIDE, ...): the
#    trace's 8152 pods on its own 1213 nodes peak at about 1 % of the GPUs and never preempt;
#    on 13 nodes (stride 100, 56 GPUs) or 9 (stride 150, 40 GPUs) they contend;
#  - checkpoints: every pod whose trace run time is longer than 30m saves every 30m and needs 2m
#    after SIGTERM to save (`--checkpoint-interval 30m --shutdown-time 2m`): more than the 30 s
#    grace period, so a victim is killed and rolls back to its last periodic checkpoint; shorter
#    pods have no checkpoints and restart from zero;
#  - the policy (bench/lost_work_policy.yaml): BestFit, type Priority, Requeue, the trace's qos
#    tiers as PriorityClasses (LS 10000, Burstable/Guaranteed 5000, BE 1000), four tenants (the
#    seeded --tenants rule); the second run adds `victimOrder: LeastLostWork`, nothing else;
#  - the same seeds for both orders (the seed shuffles the node order that breaks score ties and
#    spreads the pods over the tenants);
#  - QUOTAS=1: each tenant also gets an ElasticQuota in one cohort, min a quarter of the slice's
#    GPUs and max all of them (borrowing, and reclaim by Kueue's rules, join the preemptions);
#  - BACKOFF="BASE MAX" (seconds): two more runs, each order with `requeuingStrategy:
#    {backoffBaseSeconds: BASE, backoffMaxSeconds: MAX}` (Kueue's requeue back-off for victims);
#    every run is then compared with Kubernetes' order without it.
#
# Prints per stride and seed: preemptions, lost GPU-seconds (total and by tenant), and the mean
# pending time of the preemptors (workloads that preempted someone) and of each priority tier,
# from the JSON reports (policyRun.summary); then the totals over the seeds.
set -euo pipefail
ARBITER=${1:-build/arbiter}
SEEDS=${2:-42 43 44 45 46}
STRIDES=${3:-100 150}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
trap '[[ "${KEEP:-0}" == 1 ]] || rm -rf "$WORK"' EXIT
NODES_CSV=$ROOT/data/openb/openb_node_list_gpu_node.csv
PODS_CSV=$ROOT/data/openb/openb_pod_list_default.csv
POLICY=$ROOT/bench/lost_work_policy.yaml
cp "$POLICY" "$WORK/k8s.yaml"  # Kubernetes' order: the default
sed 's/^    mode: Requeue$/    mode: Requeue\n    victimOrder: LeastLostWork/' "$POLICY" > "$WORK/llw.yaml"
grep -q 'victimOrder: LeastLostWork' "$WORK/llw.yaml"
ORDERS="k8s llw"
if [[ -n "${BACKOFF:-}" ]]; then
  read -r base max <<< "$BACKOFF"
  for order in k8s llw; do
    sed "s/^    mode: Requeue$/    mode: Requeue\n    requeuingStrategy: {backoffBaseSeconds: $base, backoffMaxSeconds: $max}/" \
      "$WORK/$order.yaml" > "$WORK/${order}b.yaml"
    grep -q 'requeuingStrategy' "$WORK/${order}b.yaml"
  done
  ORDERS="k8s llw k8sb llwb"
fi

echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $("$ARBITER" --version), quotas ${QUOTAS:-0}, back-off ${BACKOFF:-none}"
for stride in $STRIDES; do
  awk -v k="$stride" 'NR == 1 || (NR - 2) % k == 0' "$NODES_CSV" > "$WORK/nodes-$stride.csv"
  gpus=$(awk -F, 'NR > 1 { s += $4 } END { print s }' "$WORK/nodes-$stride.csv")
  for order in $ORDERS; do
    cp "$WORK/$order.yaml" "$WORK/$order-$stride.yaml"
    if [[ "${QUOTAS:-0}" == 1 ]]; then
      for t in 0 1 2 3; do
        printf -- '---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: gpus, namespace: tenant-%s}\nspec: {cohort: openb, min: {nvidia.com/gpu: "%s"}, max: {nvidia.com/gpu: "%s"}}\n' \
          "$t" "$((gpus / 4))" "$gpus" >> "$WORK/$order-$stride.yaml"
      done
    fi
  done
  for seed in $SEEDS; do
    for order in $ORDERS; do
      "$ARBITER" sim -q --nodes "$WORK/nodes-$stride.csv" --pods "$PODS_CSV" --mode timeline \
        --tenants 4 --policy-file "$WORK/$order-$stride.yaml" --seed "$seed" \
        --checkpoint-interval 30m --shutdown-time 2m \
        --report-json "$WORK/$stride-$seed-$order.json" > /dev/null
    done
  done
done

python3 - "$WORK" "$STRIDES" "$SEEDS" "$ORDERS" <<'PY'
import json, sys
work, strides, seeds, orders = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()

def load(stride, seed, order):
    r = json.load(open(f"{work}/{stride}-{seed}-{order}.json"))["policyRun"]
    s = r["summary"]
    return {
        "order": r["pool"]["victimOrder"] + ("+backoff" if order.endswith("b") else ""),
        "preemptions": s["preemptions"] + s["reclaims"],
        "lost": float(s["gpuSecondsLostToPreemption"]),
        "tenants": {t["namespace"]: float(t["gpuSecondsLost"])
                    for t in s["gpuSecondsLostToPreemptionByNamespace"]},
        "preemptors": s["preemptors"]["workloads"],
        "preemptor_pending": float(s["preemptors"]["pendingSecondsTotal"]),
        "tiers": {t["priority"]: (t["workloads"], float(t["pendingSecondsTotal"]))
                  for t in s["pendingByTier"]},
    }

def mean(total, n):
    return total / n if n else 0.0

for stride in strides:
    nodes = sum(1 for _ in open(f"{work}/nodes-{stride}.csv")) - 1
    print(f"\nstride {stride} ({nodes} nodes)")
    print(f"{'seed':>5} {'order':>22} {'preempt':>8} {'lost GPU-s':>12} "
          f"{'preemptor pending mean s':>25} {'10000 mean s':>13} {'1000 mean s':>12}  lost by tenant")
    sums = {}
    for seed in seeds:
        for order in orders:
            r = load(stride, seed, order)
            t = sums.setdefault(order, {"order": r["order"], "preemptions": 0, "lost": 0.0,
                                        "preemptors": 0, "preemptor_pending": 0.0,
                                        "tenants": {}, "tiers": {}})
            for k in ("preemptions", "lost", "preemptors", "preemptor_pending"):
                t[k] += r[k]
            for ns, v in r["tenants"].items():
                t["tenants"][ns] = t["tenants"].get(ns, 0.0) + v
            for p, (n, pend) in r["tiers"].items():
                a = t["tiers"].setdefault(p, [0, 0.0])
                a[0] += n
                a[1] += pend
            tiers = r["tiers"]
            print(f"{seed:>5} {r['order']:>22} {r['preemptions']:>8} {r['lost']:>12.1f} "
                  f"{mean(r['preemptor_pending'], r['preemptors']):>25.1f} "
                  f"{mean(tiers.get(10000, (0, 0))[1], tiers.get(10000, (0, 0))[0]):>13.1f} "
                  f"{mean(tiers.get(1000, (0, 0))[1], tiers.get(1000, (0, 0))[0]):>12.1f}  "
                  + " ".join(f"{ns}={v:.0f}" for ns, v in sorted(r["tenants"].items())))
    for order in orders:
        t = sums[order]
        print(f"{'all':>5} {t['order']:>22} {t['preemptions']:>8} {t['lost']:>12.1f} "
              f"{mean(t['preemptor_pending'], t['preemptors']):>25.1f}  "
              + " ".join(f"{ns}={v:.0f}" for ns, v in sorted(t["tenants"].items())))
    change = lambda a, b: (b - a) / a * 100 if a else 0.0
    k = sums["k8s"]
    for order in orders[1:]:
        l = sums[order]
        goal = (change(k['lost'], l['lost']) <= -30 and l['preemptions'] <= k['preemptions'] and
                change(mean(k['preemptor_pending'], k['preemptors']),
                       mean(l['preemptor_pending'], l['preemptors'])) <= 5)
        print(f"{l['order']} vs Kubernetes: lost GPU-seconds {change(k['lost'], l['lost']):+.1f} %, "
              f"preemptions {l['preemptions'] - k['preemptions']:+d}, preemptor mean pending "
              f"{change(mean(k['preemptor_pending'], k['preemptors']), mean(l['preemptor_pending'], l['preemptors'])):+.1f} %"
              f"{', goal holds' if goal else ''}")
PY

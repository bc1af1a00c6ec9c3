#!/usr/bin/env python3
"""Writes fixture.om: hours of kube-state-metrics, cAdvisor and dcgm-exporter series for the
Prometheus integration tests (backfilled by scripts/services/prometheus.sh start with
`promtool tsdb create-blocks-from openmetrics`). Deterministic: run it again, same bytes.

Two data sets:
  exact      2026-01-05T00:00Z .. 03:00Z, samples exactly on the 30 s grid, simple rates, so
             that the invoices can be computed by hand (tests/integration/prometheus_meter_test.cc
             shows the arithmetic): namespaces fx-a (Max mode) and fx-b (Usage mode).
  crosscheck 2026-01-06T00:00Z .. 04:00Z, scrapes at an offset of the grid with jitter, varying
             rates, counter resets, scrape gaps, pods starting and stopping mid-hour: namespaces
             xc-1 and xc-2, compared against PromQL increase() / avg_over_time().
"""
import math, os

lines = []
def series(name, labels, points):
    lab = ",".join('%s="%s"' % (k, v) for k, v in labels)
    for t, v in points:
        ts = ("%.3f" % t).rstrip("0").rstrip(".")
        lines.append((name, lab, t, "%s{%s} %s %s" % (name, lab, fmt(v), ts)))

def fmt(v):
    if isinstance(v, int):
        return str(v)
    s = repr(float(v))
    return s

GIB = 1 << 30
D1 = 1767571200  # 2026-01-05T00:00:00Z
S = 30

def grid(a, b, step=S, skip=()):
    return [t for t in range(a, b, step) if t not in skip]

# ---------------------------------------------------------------- exact
def node_labels(node, product, a, b):
    lab = [("node", node)]
    if product:
        lab.append(("label_nvidia_com_gpu_product", product))
    series("kube_node_labels", lab, [(t, 1) for t in grid(a, b)])

def ksm_pod(ns, pod, node, a, b, requests, skip=()):
    ts = grid(a, b, skip=skip)
    series("kube_pod_status_phase", [("namespace", ns), ("pod", pod), ("phase", "Running")], [(t, 1) for t in ts])
    series("kube_pod_info", [("namespace", ns), ("pod", pod), ("node", node)], [(t, 1) for t in ts])
    for ctr, res, unit, v in requests:
        series("kube_pod_container_resource_requests",
               [("namespace", ns), ("pod", pod), ("container", ctr), ("node", node), ("resource", res), ("unit", unit)],
               [(t, v) for t in ts])

node_labels("gpu-1", "NVIDIA-H100-80GB-HBM3", D1, D1 + 3 * 3600)
node_labels("mig-1", "NVIDIA-A100-SXM4-80GB", D1, D1 + 3 * 3600)
node_labels("cpu-1", "", D1, D1 + 3 * 3600)

# fx-a/train on gpu-1, [00:00, 02:00): requests cpu 4, memory 16Gi, 1 GPU; uses 2 cores, 8Gi, GPU 0.5.
a, b = D1, D1 + 7200
ksm_pod("fx-a", "train", "gpu-1", a, b,
        [("main", "cpu", "core", 4), ("main", "memory", "byte", 16 * GIB), ("main", "nvidia_com_gpu", "integer", 1)])
c = [("namespace", "fx-a"), ("pod", "train"), ("container", "main")]
series("container_cpu_usage_seconds_total", c + [("cpu", "total")], [(t, 2 * (t - a)) for t in grid(a, b)])
series("container_memory_working_set_bytes", c, [(t, 8 * GIB) for t in grid(a, b)])
series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", [("gpu", "0"), ("UUID", "GPU-h100-0"), ("modelName", "NVIDIA H100 80GB HBM3"),
       ("Hostname", "gpu-1")] + c, [(t, 0.5) for t in grid(a, b)])

# fx-b/infer on mig-1, [00:00, 01:00): cpu 1, one 1g.10gb MIG instance; uses 0.5 core, MIG 0.25.
a, b = D1, D1 + 3600
ksm_pod("fx-b", "infer", "mig-1", a, b,
        [("srv", "cpu", "core", 1), ("srv", "nvidia_com_mig_1g_10gb", "integer", 1)])
c = [("namespace", "fx-b"), ("pod", "infer"), ("container", "srv")]
series("container_cpu_usage_seconds_total", c, [(t, 0.5 * (t - a)) for t in grid(a, b)])
series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", [("gpu", "0"), ("UUID", "GPU-a100-0"), ("GPU_I_PROFILE", "1g.10gb"),
       ("GPU_I_ID", "7"), ("Hostname", "mig-1")] + c, [(t, 0.25) for t in grid(a, b)])

# fx-b/batch on cpu-1, [00:00, 01:00): cpu 2, memory 2Gi; uses 1 core and 1Gi. KSM misses the
# scrape at 00:20 (bridged); the container restarts at 00:29:45 (counter reset seen at 00:30);
# cAdvisor misses 00:40:00 .. 00:41:30 (4 scrapes); cAdvisor values linger 5 min after the end.
a, b = D1, D1 + 3600
ksm_pod("fx-b", "batch", "cpu-1", a, b, [("job", "cpu", "core", 2), ("job", "memory", "byte", 2 * GIB)],
        skip=(D1 + 1200,))
c = [("namespace", "fx-b"), ("pod", "batch"), ("container", "job")]
gap = set(range(D1 + 2400, D1 + 2520, S))
restart = D1 + 1785
cpu = []
for t in grid(a, b + 300):
    if t in gap:
        continue
    cpu.append((t, (t - a) if t < restart else (t - restart)))
series("container_cpu_usage_seconds_total", c, cpu)
series("container_memory_working_set_bytes", c, [(t, GIB) for t in grid(a, b + 300) if t not in gap])
# The pause container and a series without a container are never counted.
series("container_cpu_usage_seconds_total", [("namespace", "fx-b"), ("pod", "batch"), ("container", "POD")],
       [(t, 1000 + t - a) for t in grid(a, b)])
series("container_memory_working_set_bytes", [("namespace", "fx-b"), ("pod", "batch"), ("container", "")],
       [(t, 5 * GIB) for t in grid(a, b)])

# ---------------------------------------------------------------- crosscheck
D2 = D1 + 86400  # 2026-01-06T00:00:00Z
END2 = D2 + 4 * 3600
node_labels("xc-node-1", "NVIDIA-H100-80GB-HBM3", D2 - 600, END2 + 600)
node_labels("xc-node-2", "", D2 - 600, END2 + 600)

def jittered(a, b, offset, seed):
    # scrape times: every 30 s at `offset` past the grid, with a deterministic +-0.2 s jitter
    out = []
    k = 0
    t0 = (a // S) * S
    while True:
        t = t0 + k * S + offset + 0.2 * math.sin(seed * 7.3 + k * 1.7)
        k += 1
        if t < a:
            continue
        if t >= b:
            return out
        out.append(round(t, 3))

def xc_pod(ns, pod, node, a, b, cores_req, mem_req, rate, mem, seed, resets=(), gaps=(), gpu=None):
    ksm = jittered(a, b, 3.1, seed)
    series("kube_pod_status_phase", [("namespace", ns), ("pod", pod), ("phase", "Running")], [(t, 1) for t in ksm])
    series("kube_pod_info", [("namespace", ns), ("pod", pod), ("node", node)], [(t, 1) for t in ksm])
    series("kube_pod_container_resource_requests",
           [("namespace", ns), ("pod", pod), ("container", "c"), ("node", node), ("resource", "cpu"), ("unit", "core")],
           [(t, cores_req) for t in ksm])
    series("kube_pod_container_resource_requests",
           [("namespace", ns), ("pod", pod), ("container", "c"), ("node", node), ("resource", "memory"), ("unit", "byte")],
           [(t, mem_req) for t in ksm])
    c = [("namespace", ns), ("pod", pod), ("container", "c")]
    scr = jittered(a, b, 11.2 + seed, seed)
    cpu, m, g = [], [], []
    acc, last_reset = 0.0, a
    prev = a
    for t in scr:
        # usage integrates rate(t) = rate * (1 + 0.5 sin): a trapezoid per scrape interval
        r0 = rate * (1 + 0.5 * math.sin((prev - a) / 900.0 + seed))
        r1 = rate * (1 + 0.5 * math.sin((t - a) / 900.0 + seed))
        acc += (r0 + r1) / 2 * (t - prev)
        prev = t
        if any(prev - S < x <= prev for x in resets):
            acc = (r1 * 5.0)  # restarted 5 s before this scrape
        if any(x <= t < x + 150 for x in gaps):
            continue
        cpu.append((t, round(acc, 6)))
        m.append((t, int(mem * (1 + 0.25 * math.cos((t - a) / 600.0 + seed)))))
        if gpu is not None:
            g.append((t, round(gpu * (1 + 0.5 * math.sin((t - a) / 700.0)), 4)))
    series("container_cpu_usage_seconds_total", c, cpu)
    series("container_memory_working_set_bytes", c, m)
    if gpu is not None:
        ksm_gpu = [("namespace", ns), ("pod", pod), ("container", "c"), ("node", node), ("resource", "nvidia_com_gpu"),
                   ("unit", "integer")]
        series("kube_pod_container_resource_requests", ksm_gpu, [(t, 1) for t in ksm])
        series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", [("gpu", "1"), ("UUID", "GPU-xc"), ("Hostname", node)] + c, g)

xc_pod("xc-1", "web", "xc-node-2", D2 - 1800, END2 + 900, 2, 4 * GIB, 1.2, 3 * GIB, 1)
xc_pod("xc-1", "etl", "xc-node-2", D2 + 1234, D2 + 2 * 3600 + 777, 4, 8 * GIB, 3.0, 6 * GIB, 2,
       resets=(D2 + 3000, D2 + 5000), gaps=(D2 + 4000,))
xc_pod("xc-2", "train", "xc-node-1", D2 + 600, END2 + 900, 8, 32 * GIB, 6.5, 20 * GIB, 3, gpu=0.6,
       resets=(D2 + 9000,), gaps=(D2 + 7300, D2 + 12000))
xc_pod("xc-2", "short", "xc-node-2", D2 + 8000, D2 + 8000 + 95, 1, GIB, 0.8, GIB // 2, 4)

# ---------------------------------------------------------------- edge cases
# 2026-01-07T00:00Z .. 02:00Z, on the 30 s grid (tests: PrometheusMeter.EdgeCases...):
#   ed/resize  cpu request 2 -> 4 at 00:30 (in-place resize): two run segments, 2×1800 + 4×1800
#   ed/move    on cpu-1 00:00-00:20, gone 20 min (longer than the 5 min bridge), back on gpu-1
#              00:40-01:00 with one GPU: two segments, the GPU row priced as an H100
#   ed/nogpu   one GPU on gpu-1 for the hour, no DCGM series at all: usage 0 from 0 samples,
#              120 usage gaps recorded (never a silent zero)
D3 = D1 + 2 * 86400
node_labels("gpu-1", "NVIDIA-H100-80GB-HBM3", D3, D3 + 2 * 3600)
node_labels("cpu-1", "", D3, D3 + 2 * 3600)
def ed_pod(pod, node, a, b, reqs, cpu_rate=None):
    ts = grid(a, b)
    series("kube_pod_status_phase", [("namespace", "ed"), ("pod", pod), ("phase", "Running")], [(t, 1) for t in ts])
    series("kube_pod_info", [("namespace", "ed"), ("pod", pod), ("node", node)], [(t, 1) for t in ts])
    for res, unit, v in reqs:
        series("kube_pod_container_resource_requests",
               [("namespace", "ed"), ("pod", pod), ("container", "c"), ("node", node), ("resource", res), ("unit", unit)],
               [(t, v(t) if callable(v) else v) for t in ts])
ed_pod("resize", "cpu-1", D3, D3 + 3600, [("cpu", "core", lambda t: 2 if t < D3 + 1800 else 4)])
ed_pod("move", "cpu-1", D3, D3 + 1200, [("cpu", "core", 1)])
ed_pod("move", "gpu-1", D3 + 2400, D3 + 3600, [("cpu", "core", 1), ("nvidia_com_gpu", "integer", 1)])
ed_pod("nogpu", "gpu-1", D3, D3 + 3600, [("nvidia_com_gpu", "integer", 1)])
series("container_cpu_usage_seconds_total", [("namespace", "ed"), ("pod", "resize"), ("container", "c")],
       [(t, t - D3) for t in grid(D3, D3 + 3600)])

# ---------------------------------------------------------------- duplicates and GPU shares
# 2026-01-08T00:00Z .. 01:00Z, on the 30 s grid (tests: PrometheusMeter.DuplicateSeries...,
# PrometheusMeter.GpuShares...):
#   dp/ha      cpu 2, memory 4Gi. kube-state-metrics runs as two replicas (instance ksm-0 all hour,
#              ksm-1 the first 30 min: an HA pair, then a rolling update); cAdvisor is scraped by
#              two jobs (kubelet, cadvisor) all hour: 1 core, 1 GiB. Billed once: 7200 core-s.
#   dp/solo    cpu 1 from one replica: no duplicates.
#   dp/gpu2    2 GPUs on gpu-8: dcgm-exporter devices GPU-a (0.5) and GPU-b (0.25), each scraped by
#              two jobs: usage 0.75 GPU, not 1.5.
#   sh/shared  1 replica of a 4-way time-sliced T4 (ts-1), no DCGM series (DCGM cannot attribute a
#              replica): usage track = the request, flagged.
#   sh/mig     one 1g.10gb MIG instance on mig-8, no DCGM series: usage track = the request, flagged.
D4 = D1 + 3 * 86400
node_labels("gpu-8", "NVIDIA-H100-80GB-HBM3", D4, D4 + 3600)
node_labels("mig-8", "NVIDIA-A100-SXM4-80GB", D4, D4 + 3600)
node_labels("cpu-8", "", D4, D4 + 3600)
series("kube_node_labels", [("node", "ts-1"), ("label_nvidia_com_gpu_product", "Tesla-T4"),
                            ("label_nvidia_com_gpu_replicas", "4")], [(t, 1) for t in grid(D4, D4 + 3600)])
def dp_pod(ns, pod, node, reqs, replicas, a=D4, b=D4 + 3600):
    for inst, ra, rb in replicas:
        ts = grid(max(a, ra), min(b, rb))
        k = [("instance", inst), ("job", "kube-state-metrics")]
        series("kube_pod_status_phase", k + [("namespace", ns), ("pod", pod), ("phase", "Running")], [(t, 1) for t in ts])
        series("kube_pod_info", k + [("namespace", ns), ("pod", pod), ("node", node)], [(t, 1) for t in ts])
        for res, unit, v in reqs:
            series("kube_pod_container_resource_requests",
                   k + [("namespace", ns), ("pod", pod), ("container", "c"), ("node", node), ("resource", res), ("unit", unit)],
                   [(t, v) for t in ts])
ALL = (D4, D4 + 3600)
dp_pod("dp", "ha", "cpu-8", [("cpu", "core", 2), ("memory", "byte", 4 * GIB)],
       [("ksm-0:8080", *ALL), ("ksm-1:8080", D4, D4 + 1800)])
for job in ("kubelet", "cadvisor"):
    c = [("instance", "cpu-8:10250"), ("job", job), ("namespace", "dp"), ("pod", "ha"), ("container", "c")]
    series("container_cpu_usage_seconds_total", c, [(t, t - D4) for t in grid(*ALL)])
    series("container_memory_working_set_bytes", c, [(t, GIB) for t in grid(*ALL)])
dp_pod("dp", "solo", "cpu-8", [("cpu", "core", 1)], [("ksm-0:8080", *ALL)])
dp_pod("dp", "gpu2", "gpu-8", [("nvidia_com_gpu", "integer", 2)], [("ksm-0:8080", *ALL)])
for job in ("dcgm-0", "dcgm-1"):
    for uuid, gpu, v in (("GPU-a", "0", 0.5), ("GPU-b", "1", 0.25)):
        series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", [("instance", "gpu-8:9400"), ("job", job), ("gpu", gpu), ("UUID", uuid),
               ("Hostname", "gpu-8"), ("namespace", "dp"), ("pod", "gpu2"), ("container", "c")],
               [(t, v) for t in grid(*ALL)])
dp_pod("sh", "shared", "ts-1", [("nvidia_com_gpu", "integer", 1)], [("ksm-0:8080", *ALL)])
dp_pod("sh", "mig", "mig-8", [("nvidia_com_mig_1g_10gb", "integer", 1)], [("ksm-0:8080", *ALL)])

lines.sort(key=lambda x: (x[0], x[1], x[2]))
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture.om")
with open(out, "w") as f:
    for l in lines:
        f.write(l[3] + "\n")
    f.write("# EOF\n")
print("%s: %d samples" % (out, len(lines)))

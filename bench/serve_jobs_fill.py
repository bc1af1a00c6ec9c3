#!/usr/bin/env python3
"""Cross-Job fill budget bench for `arbiter serve` (measurement only).

usage: bench/serve_jobs_fill.py BINARY SCENARIO PORT [TAG]
  SCENARIO A: namespace team-a creates 20 Jobs of parallelism=completions=5000 (100,000 pods),
              then namespace team-b makes 200 single-pod creates one after another (one client).
  SCENARIO Ac: as A, but team-b's client starts with the first Job create (concurrently).
  SCENARIO B[N]: one Job of N pods (default 20,000), then team-b's 200 creates.
  SCENARIO C<k>: (per-advance cost probe) 12 Jobs of 500+k pods one after another, each Job's
              create making 500 and one clock advance making k, while team-b loops creates; the
              advance's duration is the gap from its record to the next record.
One node "big" (cpu 100000, memory 100Ti, pods 200000): every pod fits (checked at the end).
Fresh data dir $BENCH_OUT/data-PORT per run, listen 127.0.0.1:PORT, daemon stopped at the end.
Prints one JSON line (also appended to $BENCH_OUT/results.jsonl) and writes
$BENCH_OUT/adv-TAG.csv (per record with pods: seq, op, pods, bytes, gap_to_next_ms).
"""
import http.client, json, os, re, shutil, sqlite3, statistics, subprocess, sys, threading, time

binary, scen, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
tag = sys.argv[4] if len(sys.argv) > 4 else f"{os.path.basename(binary)}-{scen}-{port}"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_jobs_common import Daemon, make_pool, mkreq as request_on, pct

daemon = Daemon(binary, port, tag)
D, data, proc, load_start, conn = daemon.out_dir, daemon.data, daemon.proc, daemon.load_start, daemon.conn
def mkreq(c):
    return request_on(c, ok=(200, 201))

try:
    c = daemon.ready()
    req = mkreq(c)
    make_pool(req)

    def job(name, n):
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                "spec": {"parallelism": n, "completions": n, "template": {
                    "metadata": {"annotations": {"arbiter.dev/duration": "1h"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                        "resources": {"requests": {"cpu": "10m"}}}]}}}}

    def bpod(i):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "10m"}}}]}}

    out = {"tag": tag, "binary": os.path.basename(binary), "scenario": scen, "load_start": load_start}

    if scen.startswith("C"):
        k = int(scen[1:])
        stop = threading.Event(); blat = []
        def bloop():
            r2 = mkreq(conn()); i = 0
            while not stop.is_set():
                s = time.time(); r2("POST", "/api/v1/namespaces/team-b/pods", bpod(i)); blat.append(time.time() - s); i += 1
        th = threading.Thread(target=bloop); th.start()
        time.sleep(0.3)
        for j in range(12):
            req("POST", "/apis/batch/v1/namespaces/team-a/jobs", job(f"j{j:02d}", 500 + k))
            time.sleep(0.4)
        stop.set(); th.join()
        total = 12 * (500 + k)
        out["b_creates"] = len(blat)
    else:
        njobs, per = (20, 5000) if scen.startswith("A") else (1, int(scen[1:] or 20000))
        concurrent = scen == "Ac"   # team-b starts with the first Job create instead of after the last
        total = njobs * per
        lat, starts = [], []
        def bclient():
            r4 = mkreq(conn()) if concurrent else req
            for i in range(200):
                s = time.time()
                r4("POST", "/api/v1/namespaces/team-b/pods", bpod(i))
                lat.append(time.time() - s); starts.append(s - t0)
        bth = threading.Thread(target=bclient)
        t0 = time.time()
        if concurrent: bth.start()
        jc = []
        for j in range(njobs):
            s = time.time(); req("POST", "/apis/batch/v1/namespaces/team-a/jobs", job(f"j{j:02d}", per)); jc.append(time.time() - s)
        t_jobs = time.time() - t0
        # fill watcher: its own connection, lists team-a's Jobs every 100 ms
        fill = {"done": None, "series": [], "list_lat": []}
        def watch():
            r3 = mkreq(conn())
            while True:
                s = time.time()
                js = r3("GET", "/apis/batch/v1/namespaces/team-a/jobs")
                e = time.time(); fill["list_lat"].append(e - s)
                act = sum(x.get("status", {}).get("active", 0) + x.get("status", {}).get("succeeded", 0) for x in js["items"])
                fill["series"].append((round(e - t0, 3), act))
                if act >= total:
                    fill["done"] = e - t0; return
                if e - t0 > 600: return
                time.sleep(0.1)
        wt = threading.Thread(target=watch); wt.start()
        if not concurrent: bth.start()
        bth.join()
        b_end = time.time() - t0
        wt.join()
        lat_ms = [x * 1000 for x in lat]
        during = [l for l, s in zip(lat_ms, starts) if fill["done"] is None or s < fill["done"]]
        out.update({
            "jobs_create_s": round(t_jobs, 2), "job_create_ms_median": round(statistics.median(jc) * 1000, 1), "job_create_ms_max": round(max(jc) * 1000, 1),
            "fill_done_s": round(fill["done"], 2) if fill["done"] else None,
            "b_done_s": round(b_end, 2), "b_during_fill": len(during),
            "b_median_ms": round(statistics.median(lat_ms), 2), "b_p90_ms": round(pct(lat_ms, .9), 2),
            "b_p99_ms": round(pct(lat_ms, .99), 2), "b_max_ms": round(max(lat_ms), 2),
            "b_mean_ms": round(statistics.mean(lat_ms), 2),
            "b_over_20ms": sum(x > 20 for x in lat_ms), "b_over_100ms": sum(x > 100 for x in lat_ms),
            "b_over_500ms": sum(x > 500 for x in lat_ms),
            "watch_list_p99_ms": round(pct(fill["list_lat"], .99) * 1000, 1),
            "watch_list_max_ms": round(max(fill["list_lat"]) * 1000, 1)})
        json.dump({"t0_epoch": t0, "b_lat_ms": lat_ms, "b_start_s": starts, "fill_series": fill["series"]},
                  open(f"{D}/raw-{tag}.json", "w"))
    # end state: all pods exist and run?
    time.sleep(0.5)
    def count(sel):
        r = req("GET", "/api/v1/namespaces/team-a/pods?limit=1" + sel)
        return len(r["items"]) + r["metadata"].get("remainingItemCount", 0)
    out["a_pods"] = count("")
    out["a_pending"] = count("&fieldSelector=status.phase%3DPending")
    out.update(daemon.figures())
finally:
    daemon.stop()
out["load_end"] = open("/proc/loadavg").read().split()[:3]

# journal: per record pods made (distinct Job pod names in its commands), size, gap to next record
db = sqlite3.connect(f"file:{data}/journal.db?mode=ro", uri=True)
rows = db.execute("SELECT seq, record, commands FROM journal ORDER BY seq").fetchall()
out["journal_first_seq"] = rows[0][0]
pat = re.compile(rb"j\d\d-[a-z0-9]{5}")
recs = []
for seq, rec, cmd in rows:
    m = json.loads(rec); cmd = cmd or b""
    recs.append((seq, m.get("op"), m.get("namespace", ""), m["time"], len(set(pat.findall(cmd))), len(rec) + len(cmd)))
with open(f"{D}/rec-{tag}.csv", "w") as f:   # every record: seq, op, namespace, time (unix ms), Job pods, bytes
    f.write("seq,op,ns,time_ms,pods,bytes\n")
    for r in recs: f.write(",".join(str(x) for x in r) + "\n")
with open(f"{D}/adv-{tag}.csv", "w") as f:
    f.write("seq,op,ns,pods,bytes,gap_to_next_ms\n")
    adv = []
    for i, r in enumerate(recs):
        gap = recs[i + 1][3] - r[3] if i + 1 < len(recs) else None
        if r[4] > 0:
            f.write(f"{r[0]},{r[1]},{r[2]},{r[4]},{r[5]},{gap}\n")
            if r[1] == "advance": adv.append((r[4], gap, r[5]))
out["records"] = len(recs)
out["max_record_bytes"] = max(r[5] for r in recs)
out["advances_with_pods"] = len(adv)
out["max_pods_one_advance"] = max((a[0] for a in adv), default=0)
out["pods_in_advances"] = sum(a[0] for a in adv)
full = [a[1] for a in adv if a[0] == out["max_pods_one_advance"] and a[1] is not None]
out["adv_full_gap_ms_median"] = statistics.median(full) if full else None
out["adv_full_gap_ms_p90"] = pct(full, .9) if full else None
# the same for the first and the last tenth of the fill's full advances: does an advance cost
# more as the Jobs grow (a sync plans over all of its Job's pods)?
tenth = max(1, len(full) // 10)
out["adv_full_gap_ms_first_tenth_median"] = statistics.median(full[:tenth]) if full else None
out["adv_full_gap_ms_last_tenth_median"] = statistics.median(full[-tenth:]) if full else None
if scen.startswith("C"):
    # advances with exactly k pods: gap to the next record (a team-b create that waited for it)
    kk = [a[1] for a in adv if a[0] == k and a[1] is not None]
    out["k"] = k; out["adv_k_gap_ms"] = sorted(kk)
    out["b_median_ms"] = round(statistics.median(blat) * 1000, 2)
bsz = [r[5] for r in recs if r[1] == "create" and r[2] == "team-b"]
out["b_record_bytes_max"] = max(bsz) if bsz else None
print(json.dumps(out))
with open(f"{D}/results.jsonl", "a") as f:
    f.write(json.dumps(out) + "\n")
shutil.rmtree(data, ignore_errors=True)

#!/usr/bin/env python3
"""Scenario D: delete of a big Job while another tenant creates pods (measurement only).

usage: bench/serve_jobs_delete.py BINARY PORT TAG [N=50000] [FULL=0] [MON=0.25]
team-a creates Job j00 (parallelism=completions=N, pods run 1h, same template as bench.py) and
waits until all N pods exist (Job status.active == N and a pod count of N). Then at t0, at the
same moment: team-a DELETEs the Job (propagationPolicy Background) on its own connection, and
team-b makes 200 sequential single pod creates (own connection). A monitor (own connection) polls
GET team-a pods?limit=1 every MON s (0.25 default; each such list costs ~50 ms of daemon time at 50,000 pods) (count = items + remainingItemCount). With FULL=1 it also
lists all team-a pods (pages of 10,000) every ~1 s and counts those without deletionTimestamp.
Node "big" (cpu 100000, memory 100Ti, pods 200000): 50,000 x 10m fits.
Fresh data dir $BENCH_OUT/data-PORT, 127.0.0.1:PORT, daemon stopped at the end.
Appends one JSON line to $BENCH_OUT/resultsD.jsonl; journal records to recD-TAG.csv.
"""
import http.client, json, os, re, shutil, sqlite3, statistics, subprocess, sys, threading, time

binary, port, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 50000
FULL = len(sys.argv) > 5 and sys.argv[5] == "1"
MON = float(sys.argv[6]) if len(sys.argv) > 6 else 0.25   # monitor poll interval (s)
WATCH = len(sys.argv) > 7 and sys.argv[7] == "1"   # observer: a pods watch from just before the DELETE
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_jobs_common import Daemon, make_pool, mkreq as request_on, pct

daemon = Daemon(binary, port, tag)
D, data, proc, load_start, conn = daemon.out_dir, daemon.data, daemon.proc, daemon.load_start, daemon.conn
statuses = []
def mkreq(c):
    return request_on(c, statuses=statuses)

out = {"tag": tag, "binary": os.path.basename(binary), "scenario": "D", "N": N, "full": FULL, "mon_interval_s": MON, "watch": WATCH, "load_start": load_start}
try:
    c = daemon.ready()
    req = mkreq(c)
    make_pool(req)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j00"},
           "spec": {"parallelism": N, "completions": N, "template": {
               "metadata": {"annotations": {"arbiter.dev/duration": "1h"}},
               "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                   "resources": {"requests": {"cpu": "10m"}}}]}}}}
    def bpod(i):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "10m"}}}]}}
    def count(r, sel=""):
        x = r("GET", "/api/v1/namespaces/team-a/pods?limit=1" + sel)
        return len(x["items"]) + x["metadata"].get("remainingItemCount", 0), x
    tf = time.time()
    req("POST", "/apis/batch/v1/namespaces/team-a/jobs", job)
    while True:
        j = req("GET", "/apis/batch/v1/namespaces/team-a/jobs/j00")
        if j.get("status", {}).get("active", 0) >= N: break
        if time.time() - tf > 900: raise SystemExit("fill timeout")
        time.sleep(0.2)
    out["fill_s"] = round(time.time() - tf, 2)
    out["pods_before_delete"] = count(req)[0]
    time.sleep(1.0)  # let the clock settle
    journal_seq_before = None

    lat, starts, mon, full = [], [], [], []
    go = threading.Event(); stop = threading.Event()
    rb = mkreq(conn()); rd = mkreq(conn()); rm = mkreq(conn()); rf = mkreq(conn()) if FULL else None
    def bclient():
        go.wait()
        for i in range(200):
            s = time.time(); rb("POST", "/api/v1/namespaces/team-b/pods", bpod(i))
            lat.append(time.time() - s); starts.append(s - t0)
    def monitor():
        go.wait()
        while not stop.is_set():
            s = time.time(); n, x = count(rm); e = time.time()
            dts = x["items"][0]["metadata"].get("deletionTimestamp") if x["items"] else None
            ph = x["items"][0].get("status", {}).get("phase") if x["items"] else None
            mon.append((round(s - t0, 3), n, round((e - s) * 1000, 1), bool(dts), ph))   # start, count, latency, first item deleting, phase
            if n == 0: return
            if e - t0 > 300: return
            time.sleep(MON)
    def fuller():
        go.wait()
        while not stop.is_set():
            s = time.time(); tot = nodt = 0; cont = None
            while True:
                x = rf("GET", "/api/v1/namespaces/team-a/pods?limit=10000" + (f"&continue={cont}" if cont else ""))
                tot += len(x["items"]); nodt += sum(1 for p in x["items"] if not p["metadata"].get("deletionTimestamp"))
                cont = x["metadata"].get("continue")
                if not cont: break
            e = time.time(); full.append((round(s - t0, 3), round(e - t0, 3), tot, nodt))
            if tot == 0 or e - t0 > 300: return
            time.sleep(1.0)
    wst = {"dts": set(), "gone": 0, "events": 0, "t_all_dts": None, "t_all_gone": None, "err": None}
    namepat = re.compile(rb'"name":"(j00-[a-z0-9]{5})"')
    def watcher(rv):
        try:
            wc = conn(); wc.request("GET", f"/api/v1/namespaces/team-a/pods?watch=1&resourceVersion={rv}")
            wr = wc.getresponse()
            if wr.status != 200: wst["err"] = wr.status; return
            while True:
                line = wr.readline()
                if not line: wst["ended_s"] = round(time.time() - t0, 3); return
                wst["events"] += 1
                m = namepat.search(line)
                if not m or line[:40].find(b'"type":"ERROR"') >= 0 or line[:40].find(b'"type":"BOOKMARK"') >= 0:
                    wst.setdefault("other", []).append((round(time.time() - t0, 3), line[:400].decode(errors="replace")))
                    if not m: continue
                nm = m.group(1)
                if b'"type":"DELETED"' in line[:40]:
                    wst["gone"] += 1; wst["dts"].add(nm)
                elif b'"deletionTimestamp"' in line:
                    wst["dts"].add(nm)
                if wst["t_all_dts"] is None and len(wst["dts"]) >= N: wst["t_all_dts"] = round(time.time() - t0, 3)
                if wst["gone"] >= N: wst["t_all_gone"] = round(time.time() - t0, 3); return
        except Exception as ex:
            wst["err"] = repr(ex)
    if WATCH:
        rv = req("GET", "/api/v1/namespaces/team-a/pods?limit=1")["metadata"]["resourceVersion"]
        wth = threading.Thread(target=watcher, args=(rv,), daemon=True); wth.start(); time.sleep(0.5)
    ths = [threading.Thread(target=bclient), threading.Thread(target=monitor)]
    if FULL: ths.append(threading.Thread(target=fuller))
    for t in ths: t.start()
    t0 = time.time(); go.set()
    dresp = rd("DELETE", "/apis/batch/v1/namespaces/team-a/jobs/j00",
               {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
    out["delete_ms"] = round((time.time() - t0) * 1000, 1)
    out["delete_resp_kind"] = dresp.get("kind")
    ths[0].join()
    out["b_done_s"] = round(time.time() - t0, 2)
    ths[1].join()
    stop.set()
    for t in ths[2:]: t.join()
    if WATCH:
        wth.join(60)
        out["watch_all_deleting_s"] = wst["t_all_dts"]; out["watch_all_gone_s"] = wst["t_all_gone"]
        out["watch_events"] = wst["events"]; out["watch_deleting_seen"] = len(wst["dts"]); out["watch_deleted_seen"] = wst["gone"]; out["watch_err"] = wst["err"]
        out["watch_other"] = wst.get("other", [])[:5]; out["watch_ended_s"] = wst.get("ended_s")
    lat_ms = [x * 1000 for x in lat]
    out.update({"b_median_ms": round(statistics.median(lat_ms), 2), "b_p90_ms": round(pct(lat_ms, .9), 2),
        "b_p99_ms": round(pct(lat_ms, .99), 2), "b_max_ms": round(max(lat_ms), 2),
        "b_mean_ms": round(statistics.mean(lat_ms), 2), "b_over_20ms": sum(x > 20 for x in lat_ms),
        "b_over_100ms": sum(x > 100 for x in lat_ms), "b_over_500ms": sum(x > 500 for x in lat_ms)})
    zero = [round(m[0] + m[2] / 1000, 3) for m in mon if m[1] == 0]   # end of the first poll that saw none
    out["all_gone_s_poll"] = zero[0] if zero else None
    out["remaining_at_end"] = mon[-1][1] if mon else None
    out["mon_polls"] = len(mon); out["mon_max_ms"] = max(m[2] for m in mon) if mon else None
    if FULL:
        nz = [f for f in full if f[3] == 0]
        out["no_undeleted_s_full"] = nz[0][1] if nz else None
        out["full_series"] = full[:40]
    # states of b's pods at the end, a's left
    out["a_pods_end"] = count(req)[0]
    jl = req("GET", "/apis/batch/v1/namespaces/team-a/jobs")
    out["jobs_left"] = len(jl["items"])
    x = req("GET", "/api/v1/namespaces/team-b/pods?limit=1&fieldSelector=status.phase%3DPending")
    out["b_pending_end"] = len(x["items"]) + x["metadata"].get("remainingItemCount", 0)
    json.dump({"t0_epoch": t0, "b_lat_ms": lat_ms, "b_start_s": starts, "mon": mon, "full": full},
              open(f"{D}/rawD-{tag}.json", "w"))
    out["t0_epoch"] = t0
    out.update(daemon.figures())
finally:
    daemon.stop()
out["load_end"] = open("/proc/loadavg").read().split()[:3]
out["non2xx"] = sorted(set(s for s in statuses if s >= 300))

db = sqlite3.connect(f"file:{data}/journal.db?mode=ro", uri=True)
rows = db.execute("SELECT seq, record, commands FROM journal ORDER BY seq").fetchall()
pat = re.compile(rb"j00-[a-z0-9]{5}")
t0ms = out["t0_epoch"] * 1000
recs = []
for seq, rec, cmd in rows:
    m = json.loads(rec); cmd = cmd or b""
    recs.append((seq, m.get("op"), m.get("namespace", ""), m.get("kind", ""), m["time"], round(m["time"] - t0ms), len(set(pat.findall(cmd))), len(rec) + len(cmd)))
with open(f"{D}/recD-{tag}.csv", "w") as f:
    f.write("seq,op,ns,kind,time_ms,rel_t0_ms,jobpods,bytes\n")
    for r in recs: f.write(",".join(str(x) for x in r) + "\n")
after = [r for r in recs if r[4] >= t0ms - 5]
out["max_record_bytes"] = max(r[7] for r in recs)
out["max_record_bytes_after_delete"] = max((r[7] for r in after), default=None)
adv = [r for r in after if r[1] == "advance"]
out["advances_after_delete"] = len(adv); out["max_advance_bytes_after_delete"] = max((r[7] for r in adv), default=None)
touch = [r for r in after if r[1] != "create" and r[7] > 2000]   # Job pod names are not in the commands: big records = pod work
out["big_records_after_delete"] = len(touch)
out["last_big_record_s"] = round(touch[-1][5] / 1000, 3) if touch else None
dl = [r for r in after if r[1] == "delete" and r[2] == "team-a"]
out["delete_record"] = dl[0] if dl else None
print(json.dumps(out))
with open(f"{D}/resultsD.jsonl", "a") as f:
    f.write(json.dumps(out) + "\n")
shutil.rmtree(data, ignore_errors=True)

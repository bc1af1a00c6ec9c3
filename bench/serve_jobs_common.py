"""What bench/serve_jobs_fill.py and bench/serve_jobs_delete.py share (measurement only): a real
`arbiter serve` on a fresh data dir ($BENCH_OUT/data-PORT, results and logs under $BENCH_OUT,
default /tmp/arbiter-bench-jobs), listening on 127.0.0.1:PORT; JSON requests on a connection of
one's own; the pool both scenarios start from; the daemon's process figures; percentiles."""
import http.client, json, os, shutil, subprocess, time


class Daemon:
    def __init__(self, binary, port, tag):
        self.port = port
        self.out_dir = os.environ.get("BENCH_OUT", "/tmp/arbiter-bench-jobs")
        os.makedirs(self.out_dir, exist_ok=True)
        self.data = f"{self.out_dir}/data-{port}"
        shutil.rmtree(self.data, ignore_errors=True)
        self.load_start = open("/proc/loadavg").read().split()[:3]
        self.log = open(f"{self.out_dir}/serve-{tag}.log", "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--data", self.data, "--listen", f"127.0.0.1:{port}"], stderr=self.log)

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)

    def ready(self):
        """A connection once /readyz answers (at most ~20 s)."""
        for _ in range(400):
            try:
                c = self.conn(); c.request("GET", "/readyz"); c.getresponse().read(); return c
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"the daemon on port {self.port} did not get ready")

    def figures(self):
        """Its RSS and peak RSS (MB) and CPU seconds so far."""
        st = {}
        for line in open(f"/proc/{self.proc.pid}/status"):
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"): st[k] = int(v.split()[0]) // 1024
        ticks = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()[11:13]
        return {"rss_mb": st["VmRSS"], "hwm_mb": st["VmHWM"],
                "cpu_s": sum(int(x) for x in ticks) / os.sysconf("SC_CLK_TCK")}

    def stop(self):
        self.proc.terminate()
        try: self.proc.wait(120)
        except subprocess.TimeoutExpired: self.proc.kill(); self.proc.wait()


def mkreq(c, ok=(200, 201, 202), statuses=None):
    """req(method, path, body) on connection c: the answer's JSON; any other status ends the run.
    Each status is appended to `statuses` if given."""
    def req(method, path, body=None):
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse(); out = r.read()
        if statuses is not None: statuses.append(r.status)
        if r.status not in ok: raise SystemExit(f"{method} {path}: {r.status} {out[:300]}")
        return json.loads(out)
    return req


def make_pool(req):
    """Namespaces team-a and team-b, and node "big" (cpu 100000, memory 100Ti, pods 200000)."""
    for ns in ("team-a", "team-b"):
        req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    req("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big"},
        "status": {"capacity": {"cpu": "100000", "memory": "100Ti", "pods": "200000"}}})


def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * q))]

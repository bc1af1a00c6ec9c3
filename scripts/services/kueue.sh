#!/usr/bin/env bash
# Kueue (sigs.k8s.io/kueue) beside Arbiter on a test cluster of kube.sh: its manager, built from
# upstream source at the release pinned in tests/cluster/kueue/go.mod, run outside the cluster with
# the cluster's admin kubeconfig, as kube.sh runs the Kubernetes components.
#
#   scripts/services/kueue.sh install      build the manager once per machine and pin
#                                          (tests/cluster/kueue/build.sh; cached outside the checkout)
#   scripts/services/kueue.sh start DIR    DIR: a cluster `kube.sh start DIR` started. Applies Kueue's
#                                          CRDs, starts the manager (a running one is stopped first),
#                                          registers its webhooks; returns when the manager is ready
#                                          and its Job webhook suspends a Job
#   scripts/services/kueue.sh stop DIR     deletes the webhook configurations, stops the manager by PID
#                                          (kube.sh stop DIR stops it too)
#   scripts/services/kueue.sh status DIR   exit 0 when the manager is alive
#
# DIR receives kueue.log, kueue.pid, and kueue/: config.yaml (Kueue's Configuration), ports, certs/
# (a CA and the webhook server's certificate for 127.0.0.1, made with openssl), webhooks.json.
# The manager: no leader election, the batch/job integration only, the visibility API off, the
# metrics server off, health probes on 127.0.0.1, the webhook server on 127.0.0.1 (free ports).
# Its webhooks (the release's config/components/webhook: those of Kueue's own kinds and of
# batch/v1 Jobs) are registered with a URL and the CA instead of a Service, and, for namespaced
# objects, only for the namespaces labelled arbiter.dev/kueue=true: the other tests sharing the
# cluster never depend on Kueue running. Kueue's internal certificate management is off (it makes
# certificates for a Service's DNS name); Kueue then reads its metrics server's certificate from
# the fixed path /etc/kueue/metrics/certs even with metrics off: a self-signed one is put there
# when missing (the one file written outside DIR).
# ARBITER_KUEUE_DEADLINE (120): seconds the manager may take to become ready.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SVC=kueue
# shellcheck source=lib.sh
. "$HERE/lib.sh"
DEADLINE=${ARBITER_KUEUE_DEADLINE:-120}
NS=kueue-system
SELECTOR=arbiter.dev/kueue
METRICS_CERTS=/etc/kueue/metrics/certs
WEBHOOKS=(kueue-mutating-webhook-configuration kueue-validating-webhook-configuration)

[ -x /usr/local/go/bin/go ] && ! command -v go > /dev/null && export PATH=$PATH:/usr/local/go/bin

usage() { echo "usage: $0 install | start DIR | stop DIR | status DIR" >&2; exit 2; }

# free_ports N: as kube.sh's (below the kernel's ephemeral range, random, each checked free).
free_ports() {
  python3 -c 'import random,socket,sys
low=int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
ports=[]
for p in random.sample(range(max(1024, low - 12000), low), 200):
  s=socket.socket()
  try:
    s.bind(("127.0.0.1", p))
    ports.append(p)
  except OSError:
    pass
  finally:
    s.close()
  if len(ports) == int(sys.argv[1]): break
print(" ".join(map(str, ports)))' "$1"
}

kubectl() { "$D/bin/kubectl" --kubeconfig="$D/kubeconfig" "$@"; }

# certs DIR: DIR/ca.crt, and DIR/tls.{crt,key} for 127.0.0.1 signed by it (the names
# controller-runtime's webhook server reads).
certs() {
  local c=$1
  mkdir -p "$c"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=arbiter-test-kueue-ca" -keyout "$c/ca.key" -out "$c/ca.crt" 2> /dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=kueue-webhook" \
    -keyout "$c/tls.key" -out "$c/tls.csr" 2> /dev/null
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n' > "$c/tls.ext"
  openssl x509 -req -in "$c/tls.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 3650 \
    -extfile "$c/tls.ext" -out "$c/tls.crt" 2> /dev/null
  rm -f "$c/tls.csr" "$c/tls.ext"
  chmod 600 "$c"/*.key
}

# webhooks MANIFESTS PORT CA: the release's webhook configurations as JSON, with the webhooks of
# Kueue's kinds and of batch/v1 Jobs only, each calling https://127.0.0.1:PORT<path> with the CA,
# the namespaced ones limited to the namespaces labelled SELECTOR=true.
webhooks() {
  kubectl create --dry-run=client -o json -f "$1" |
    python3 -c 'import base64,json,sys
port, ca, sel = sys.argv[1], base64.b64encode(open(sys.argv[2], "rb").read()).decode(), sys.argv[3]
text, objs, i = sys.stdin.read(), [], 0
while text[i:].strip():  # one JSON object per document
  o, i = json.JSONDecoder().raw_decode(text, len(text) - len(text[i:].lstrip()))
  objs += o["items"] if o.get("kind") == "List" else [o]
def wanted(w):
  return any("kueue.x-k8s.io" in r["apiGroups"] or ("batch" in r["apiGroups"] and "jobs" in r["resources"])
             for r in w["rules"])
for o in objs:
  o["metadata"]["name"] = "kueue-" + ("mutating" if o["kind"].startswith("Mutating") else "validating") + "-webhook-configuration"
  o["webhooks"] = [w for w in o["webhooks"] if wanted(w)]
  for w in o["webhooks"]:
    path = w["clientConfig"]["service"]["path"]
    w["clientConfig"] = {"url": "https://127.0.0.1:" + port + path, "caBundle": ca}
    w["namespaceSelector"] = {"matchLabels": {sel: "true"}}
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}, indent=1))' "$2" "$3" "$SELECTOR"
}

stop_manager() {
  local pid
  [ -f "$D/kueue.pid" ] || return 0
  pid=$(cat "$D/kueue.pid")
  svc_stop_pid "$pid"
  rm -f "$D/kueue.pid"
}

# fail MESSAGE: prints it and the end of the manager's log, stops what was started, exits 1.
fail() {
  echo "kueue: $1"
  [ -f "$D/kueue.log" ] && { echo "--- end of $D/kueue.log:"; tail -n 25 "$D/kueue.log"; }
  [ -f "$D/kubeconfig" ] && kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration \
    "${WEBHOOKS[@]}" --ignore-not-found > /dev/null 2>&1
  stop_manager
  exit 1
}

# wait_until WHAT CMD...: runs CMD every 0.2 s until it succeeds; fails when the manager exits or
# DEADLINE seconds pass.
wait_until() {
  local what=$1 end=$((SECONDS + DEADLINE))
  shift
  until "$@" > /dev/null 2>&1; do
    alive "$(cat "$D/kueue.pid")" || fail "the manager exited while waiting for $what"
    [ $SECONDS -lt "$end" ] || fail "$what: not after $DEADLINE s"
    sleep 0.2
  done
}

# A Job with a queue name, created unsuspended (a server-side dry run): Kueue's webhook suspends it.
probe_suspends() {
  local out
  out=$(printf '%s' "apiVersion: batch/v1
kind: Job
metadata: {name: kueue-probe, namespace: $NS, labels: {kueue.x-k8s.io/queue-name: probe}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]" |
    kubectl create --dry-run=server -o 'jsonpath={.spec.suspend}' -f -) || return 1
  [ "$out" = true ]
}

start() {
  [ $# -eq 0 ] || usage
  local out t0=$SECONDS health_port webhook_port K=$D/kueue
  out=$("$ROOT/tests/cluster/kueue/build.sh" --print) \
    || { echo "kueue: Kueue is not built: run scripts/services/kueue.sh install"; exit 1; }
  [ -f "$D/kubeconfig" ] && kubectl get --raw=/readyz > /dev/null 2>&1 \
    || { echo "kueue: no test cluster running in $D (scripts/services/kube.sh start $D)"; exit 1; }
  stop_manager
  rm -rf "$K" "$D/kueue.log"
  mkdir -p "$K"
  read -r health_port webhook_port <<< "$(free_ports 2)"
  printf 'kueue-health=%s\nkueue-webhook=%s\n' "$health_port" "$webhook_port" > "$K/ports"
  certs "$K/certs"
  if [ ! -f "$METRICS_CERTS/tls.crt" ] || [ ! -f "$METRICS_CERTS/tls.key" ]; then
    mkdir -p "$METRICS_CERTS"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj "/CN=kueue-metrics" -keyout "$METRICS_CERTS/tls.key" -out "$METRICS_CERTS/tls.crt" 2> /dev/null
    echo "kueue: wrote a self-signed certificate to $METRICS_CERTS (Kueue reads it there)"
  fi
  # The CRDs (server-side: the Workload CRD is too large for the last-applied annotation).
  kubectl apply --server-side --force-conflicts -f "$out/crd/" > "$K/crds.log" 2>&1 \
    || { cat "$K/crds.log"; fail "applying the CRDs failed"; }
  kubectl wait --for=condition=Established --timeout=60s -f "$out/crd/" > /dev/null \
    || fail "the CRDs are not established"
  kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - > /dev/null
  kubectl label namespace "$NS" "$SELECTOR=true" --overwrite > /dev/null
  cat > "$K/config.yaml" << EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $NS
health:
  healthProbeBindAddress: 127.0.0.1:$health_port
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: $webhook_port
  certDir: $K/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks: [batch/job]
featureGates:
  VisibilityOnDemand: false
EOF
  KUBECONFIG=$D/kubeconfig "$out/bin/kueue" --config="$K/config.yaml" < /dev/null > "$D/kueue.log" 2>&1 &
  echo $! > "$D/kueue.pid"
  wait_until "the manager's /readyz" curl -sf "http://127.0.0.1:$health_port/readyz"
  webhooks "$out/webhook/manifests.yaml" "$webhook_port" "$K/certs/ca.crt" > "$K/webhooks.json" \
    || fail "the webhook configurations could not be made"
  kubectl apply -f "$K/webhooks.json" > /dev/null || fail "registering the webhooks failed"
  wait_until "its Job webhook to suspend a Job" probe_suspends
  echo "kueue: ready in $((SECONDS - t0)) s ($(cut -d' ' -f1 "$out/complete"); pid $(cat "$D/kueue.pid"); readyz http://127.0.0.1:$health_port/readyz)"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
D=${1:-${ARBITER_CI_DIR:-/tmp/arbiter-ci}/kube}
[ $# -gt 0 ] && shift
D=${D%/}
case $cmd in
install)
  command -v go > /dev/null || { echo "kueue: the Go toolchain is needed (go on PATH or /usr/local/go)"; exit 1; }
  t0=$SECONDS
  out=$("$ROOT/tests/cluster/kueue/build.sh")
  echo "kueue: $(cut -d' ' -f1 "$out/complete") in $out ($((SECONDS - t0)) s)"
  ;;
start) start "$@" ;;
stop)
  if [ -f "$D/kubeconfig" ] && [ -x "$D/bin/kubectl" ]; then
    kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration "${WEBHOOKS[@]}" \
      --ignore-not-found --request-timeout=10s > /dev/null 2>&1 || true
  fi
  stop_manager
  echo "kueue: stopped"
  ;;
status)
  [ -f "$D/kueue.pid" ] && alive "$(cat "$D/kueue.pid")" || { echo "kueue: stopped"; exit 3; }
  echo "kueue: running in $D (pid $(cat "$D/kueue.pid"))"
  ;;
*) usage ;;
esac

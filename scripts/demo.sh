#!/usr/bin/env bash
# The main command (README): sets everything up, builds the arbiter binary, then runs the live
# daemon on the example pool and shows it with kubectl: `arbiter serve` on loopback with a
# temporary data directory, `kubectl apply -f examples/pool.yaml`, nodes and pods, a pod that
# runs to completion, the events, `describe` of a pending pod; then stops the daemon (by its PID, also on any exit) and runs the simulation
# demo (scripts/demo-sim.sh; DEMO_SIM=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# The demo builds the CLI alone, in its own directory, at -O1 without debug information: about a
# third less compile time than -O2 (the daemon and the demo's simulations need no more). The tests
# and the benchmarks build at -O2 in build/ (scripts/test.sh, bench/run.sh). Warnings are not
# errors here: GCC's flow-based warnings (-Wmaybe-uninitialized, -Warray-bounds, ...) differ from
# one optimisation level to another, and the tests, which treat them as errors, build at -O2 and
# -O0; a warning only -O1 finds must not stop a user's demo (it did once, at 6aab310).
BUILD=${BUILD_DIR:-build-demo}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DARBITER_WERROR=OFF -DARBITER_BUILD_TESTS=OFF -DARBITER_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j2 --target arbiter

WORK=$(mktemp -d -t arbiter-demo.XXXXXX)
SERVE_PID=""
stop_daemon() {
  if [ -n "$SERVE_PID" ]; then
    kill -TERM "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
    SERVE_PID=""
  fi
}
trap 'stop_daemon; rm -rf "$WORK"' EXIT

echo "== arbiter serve --data $WORK/data --listen 127.0.0.1:0"
"$BUILD/arbiter" serve --data "$WORK/data" --listen 127.0.0.1:0 2>"$WORK/serve.log" &
SERVE_PID=$!
ADDRESS=""
for _ in $(seq 1 200); do
  ADDRESS=$(grep -o '"address":"127\.0\.0\.1:[0-9]*"' "$WORK/serve.log" | head -n1 | cut -d'"' -f4 || true)
  [ -n "$ADDRESS" ] && break
  kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$ADDRESS" ] || { echo "arbiter serve did not start:"; cat "$WORK/serve.log"; exit 1; }
echo "listening on $ADDRESS"
cat >"$WORK/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: arbiter
  cluster: {server: "http://$ADDRESS"}
contexts:
- name: arbiter
  context: {cluster: arbiter, user: admin, namespace: default}
current-context: arbiter
users:
- name: admin
  user: {}
KUBECONFIG
export KUBECONFIG="$WORK/kubeconfig"
k() {
  echo "== kubectl $*"
  kubectl "$@"
}

k apply -f examples/pool.yaml
k get nodes -o wide
k get pods -A -o wide
# One more pod, that runs for 5 s on its virtual node (arbiter.dev/duration) and completes.
cat >"$WORK/more.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: quick-check
  namespace: default
  annotations: {arbiter.dev/duration: "5s"}
spec:
  nodeSelector: {arbiter.dev/node-pool: cpu}
  containers:
  - name: main
    image: busybox
    resources:
      requests: {cpu: "1", memory: 1Gi}
YAML
k apply -f "$WORK/more.yaml"
k wait --for=jsonpath='{.status.phase}'=Succeeded pod/quick-check --timeout=60s
k get pods -A -o wide
k get events -A --sort-by=.lastTimestamp
PENDING=$(kubectl get pods -A --field-selector=status.phase=Pending \
  -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' | awk 'NR == 1')  # awk reads it all: no SIGPIPE under pipefail
if [ -n "$PENDING" ]; then
  k describe pod -n "${PENDING%%/*}" "${PENDING#*/}"
fi
echo "== stopping arbiter serve (pid $SERVE_PID)"
stop_daemon
tail -n1 "$WORK/serve.log"

if [ "${DEMO_SIM:-1}" != "0" ]; then
  echo
  echo "== the simulation demo: scripts/demo-sim.sh"
  ARBITER_DEMO_BUILT=1 BUILD_DIR="$BUILD" ./scripts/demo-sim.sh
fi

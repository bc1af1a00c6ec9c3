#!/usr/bin/env bash
# A real Kubernetes test cluster on 127.0.0.1, built from upstream source (tests/cluster/):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK (the fake kubelet), no
# container runtime. Nodes annotated kwok.x-k8s.io/node=fake become Ready; pods bound to them go
# Running and, with arbiter.dev/duration, Succeeded that long after (kube/kwok-stages.yaml).
#
#   scripts/services/kube.sh install                   build the binaries once per machine and pin
#                                                      (tests/cluster/build.sh; the cache is outside
#                                                      the checkout)
#   scripts/services/kube.sh start DIR [--no-scheduler]  fresh state in DIR (a cluster running there
#                                                      is stopped first), every component; returns
#                                                      when the apiserver is ready and the default
#                                                      ServiceAccount exists
#   scripts/services/kube.sh stop DIR                  every process start started, by PID (and
#                                                      Kueue's manager, scripts/services/kueue.sh)
#   scripts/services/kube.sh status DIR                exit 0 when every process is alive
#
# DIR (default ${ARBITER_CI_DIR:-/tmp/arbiter-ci}/kube) receives: kubeconfig (admin, system:masters,
# certificates embedded), bin -> the cached binaries (kubectl at the same release), pki/ (CA,
# serving and client certificates, service-account key pair, made with openssl), etcd/ (data),
# *.log, *.pid, ports (NAME=PORT lines), env (KUBECONFIG=... and PATH=... for a shell).
# Ports are free ones picked at start (ARBITER_KUBE_APISERVER_PORT fixes the apiserver's).
# --no-scheduler leaves kube-scheduler out (pods then need spec.nodeName or another scheduler).
# ARBITER_KUBE_DEADLINE (120): seconds the cluster may take to become ready.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SVC=kube
# shellcheck source=lib.sh
. "$HERE/lib.sh"
DEADLINE=${ARBITER_KUBE_DEADLINE:-120}
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)  # start order
CIDR=10.96.0.0/16                                                              # service IPs

[ -x /usr/local/go/bin/go ] && ! command -v go > /dev/null && export PATH=$PATH:/usr/local/go/bin

usage() { echo "usage: $0 install | start DIR [--no-scheduler] | stop DIR | status DIR" >&2; exit 2; }

# free_ports N: N distinct free TCP ports on 127.0.0.1.
# Taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 here): a port
# the kernel hands out (bind to 0) can be taken again as the local port of any outbound connection
# before the daemon binds it, and once was ("kube-controller-manager: bind: address already in
# use" in a full test run). Random ones, each checked free.
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

# make_pki DIR: a CA; the apiserver's serving certificate; client certificates; the front proxy's
# CA and client certificate (aggregated APIs, and the request-header CA the other components'
# delegated authentication reads); the service-account signing key pair. ECDSA P-256 throughout
# (fast to make).
make_pki() {
  local p=$1 name
  mkdir -p "$p"
  for name in ca:arbiter-test-cluster-ca front-proxy-ca:arbiter-test-front-proxy-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj "/CN=${name#*:}" -keyout "$p/${name%%:*}.key" -out "$p/${name%%:*}.crt" 2> /dev/null
  done
  CA=front-proxy-ca cert "$p" front-proxy-client "/CN=front-proxy-client" clientAuth
  cert "$p" apiserver "/CN=kube-apiserver" serverAuth \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert "$p" admin "/O=system:masters/CN=kubernetes-admin" clientAuth
  cert "$p" apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  cert "$p" kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
  cert "$p" kube-scheduler "/CN=system:kube-scheduler" clientAuth
  cert "$p" kwok "/O=system:masters/CN=kwok-controller" clientAuth
  openssl ecparam -name prime256v1 -genkey -noout 2> /dev/null | openssl pkcs8 -topk8 -nocrypt -out "$p/sa.key"
  openssl ec -in "$p/sa.key" -pubout -out "$p/sa.pub" 2> /dev/null
  for name in "$p"/*.key; do chmod 600 "$name"; done
}

# [CA=NAME] cert DIR NAME SUBJECT USAGE [EXTENSION]: DIR/NAME.{key,crt} signed by DIR/ca (or
# DIR/NAME of the CA).
cert() {
  local p=$1 name=$2 subj=$3 usage=$4 ext=${5:-} ca=${CA:-ca}
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subj" \
    -keyout "$p/$name.key" -out "$p/$name.csr" 2> /dev/null
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s\n' \
    "$usage" "$ext" > "$p/$name.ext"
  openssl x509 -req -in "$p/$name.csr" -CA "$p/$ca.crt" -CAkey "$p/$ca.key" -CAcreateserial -days 3650 \
    -extfile "$p/$name.ext" -out "$p/$name.crt" 2> /dev/null
  rm -f "$p/$name.csr" "$p/$name.ext"
}

# kubeconfig FILE USER: a kubeconfig for the client certificate USER, certificates embedded.
kubeconfig() {
  local file=$1 user=$2 p=$D/pki
  cat > "$file" << EOF
apiVersion: v1
kind: Config
clusters:
- name: arbiter-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$p/$user.crt")
    client-key-data: $(base64 -w0 "$p/$user.key")
contexts:
- name: arbiter-test
  context: {cluster: arbiter-test, user: $user, namespace: default}
current-context: arbiter-test
EOF
  chmod 600 "$file"
}

# launch NAME ARGS...: starts the binary NAME in the background, output to DIR/NAME.log, its PID in
# DIR/NAME.pid.
launch() {
  local name=$1
  shift
  "$D/bin/$name" "$@" < /dev/null > "$D/$name.log" 2>&1 &
  echo $! > "$D/$name.pid"
}

pid_of() { [ -f "$D/$1.pid" ] && cat "$D/$1.pid"; }

stop_all() {
  local i pid
  # Kueue's manager, when scripts/services/kueue.sh started one on this cluster.
  if pid=$(pid_of kueue); then svc_stop_pid "$pid"; rm -f "$D/kueue.pid"; fi
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    pid=$(pid_of "${COMPONENTS[$i]}") || continue
    svc_stop_pid "$pid"
    rm -f "$D/${COMPONENTS[$i]}.pid"
  done
}

# fail MESSAGE LOG...: prints MESSAGE and the end of each LOG, stops what was started, exits 1.
fail() {
  local msg=$1 f
  shift
  echo "kube: $msg"
  for f in "$@"; do echo "--- end of $f:"; tail -n 25 "$f" 2> /dev/null || true; done
  stop_all
  exit 1
}

# wait_until SECONDS WHAT CMD...: runs CMD every 0.2 s until it succeeds; fails with the logs when
# a component exits or SECONDS pass.
wait_until() {
  local secs=$1 end=$((SECONDS + $1)) what=$2 c pid
  shift 2
  until "$@" > /dev/null 2>&1; do
    for c in "${STARTED[@]}"; do
      pid=$(pid_of "$c")
      alive "$pid" || fail "$c exited while waiting for $what" "$D/$c.log"
    done
    if [ $SECONDS -ge "$end" ]; then
      local logs=()
      for c in "${STARTED[@]}"; do logs+=("$D/$c.log"); done
      fail "$what: not after $secs s" "${logs[@]}"
    fi
    sleep 0.2
  done
}

start() {
  local scheduler=1 bin t0=$SECONDS
  for a in "$@"; do
    case $a in --no-scheduler) scheduler=0 ;; *) usage ;; esac
  done
  bin=$("$ROOT/tests/cluster/build.sh" --print) \
    || { echo "kube: the cluster's binaries are not built: run scripts/services/kube.sh install"; exit 1; }
  if [ -f "$D/kube-apiserver.pid" ] && alive "$(pid_of kube-apiserver)"; then
    echo "kube: a cluster is running in $D (pid $(pid_of kube-apiserver)): stopping it, starting afresh"
  fi
  stop_all
  # DIR is emptied: only one this script made (its marker file) or an empty or new one.
  if [ -d "$D" ] && [ ! -f "$D/.arbiter-kube" ] && [ ! -f "$D/ports" ] && [ -n "$(ls -A "$D")" ]; then
    echo "kube: $D is not empty and not a test cluster's directory: not touching it"
    exit 1
  fi
  # The last cluster's logs are kept in DIR.previous: a test that failed and was rerun (test.sh
  # reruns failed tests on a fresh cluster) still leaves the cluster's side of its story.
  if [ -f "$D/.arbiter-kube" ] && ls "$D"/*.log > /dev/null 2>&1; then
    rm -rf "$D.previous" && mkdir -p "$D.previous" && mv "$D"/*.log "$D.previous/"
  fi
  rm -rf "$D"
  mkdir -p "$D"
  touch "$D/.arbiter-kube"
  ln -s "$bin" "$D/bin"
  make_pki "$D/pki"
  local etcd_port peer_port kcm_port sched_port kwok_port
  read -r etcd_port peer_port API_PORT kcm_port sched_port kwok_port <<< "$(free_ports 6)"
  API_PORT=${ARBITER_KUBE_APISERVER_PORT:-$API_PORT}
  printf 'etcd=%s\netcd-peer=%s\nkube-apiserver=%s\nkube-controller-manager=%s\nkube-scheduler=%s\nkwok=%s\n' \
    "$etcd_port" "$peer_port" "$API_PORT" "$kcm_port" "$sched_port" "$kwok_port" > "$D/ports"
  for c in admin kube-controller-manager kube-scheduler kwok; do kubeconfig "$D/$c.kubeconfig" "$c"; done
  mv "$D/admin.kubeconfig" "$D/kubeconfig"
  printf 'export KUBECONFIG=%s\nexport PATH=%s:$PATH\n' "$D/kubeconfig" "$D/bin" > "$D/env"
  STARTED=()
  local p=$D/pki

  launch etcd --name=test --data-dir="$D/etcd" --unsafe-no-fsync --log-level=warn \
    --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-cluster="test=http://127.0.0.1:$peer_port"
  STARTED+=(etcd)
  wait_until "$DEADLINE" "etcd /health" curl -sf "http://127.0.0.1:$etcd_port/health"

  launch kube-apiserver --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" --client-ca-file="$p/ca.crt" \
    --kubelet-client-certificate="$p/apiserver-kubelet-client.crt" --kubelet-client-key="$p/apiserver-kubelet-client.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-cluster-ip-range="$CIDR" --authorization-mode=RBAC --allow-privileged=true \
    --requestheader-client-ca-file="$p/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$p/front-proxy-client.crt" --proxy-client-key-file="$p/front-proxy-client.key" \
    --endpoint-reconciler-type=none --profiling=false \
    --audit-policy-file="$HERE/kube/audit-policy.yaml" --audit-log-path="$D/audit.log" --audit-log-format=json
  STARTED+=(kube-apiserver)
  wait_until "$DEADLINE" "kube-apiserver /readyz" curl -sf --cacert "$p/ca.crt" --cert "$p/admin.crt" \
    --key "$p/admin.key" "https://127.0.0.1:$API_PORT/readyz"

  launch kube-controller-manager --kubeconfig="$D/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$D/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig="$D/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$kcm_port" --leader-elect=false \
    --use-service-account-credentials=true --service-account-private-key-file="$p/sa.key" \
    --root-ca-file="$p/ca.crt" --cluster-signing-cert-file="$p/ca.crt" --cluster-signing-key-file="$p/ca.key" \
    --service-cluster-ip-range="$CIDR" --profiling=false
  STARTED+=(kube-controller-manager)
  if [ $scheduler = 1 ]; then
    launch kube-scheduler --kubeconfig="$D/kube-scheduler.kubeconfig" \
      --authentication-kubeconfig="$D/kube-scheduler.kubeconfig" \
      --authorization-kubeconfig="$D/kube-scheduler.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port="$sched_port" --leader-elect=false --profiling=false
    STARTED+=(kube-scheduler)
  fi
  launch kwok --kubeconfig="$D/kwok.kubeconfig" --config="$HERE/kube/kwok-stages.yaml" \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --server-address="127.0.0.1:$kwok_port" --node-ip=127.0.0.1 --cidr=10.244.0.0/16
  STARTED+=(kwok)
  # Pods need their namespace's ServiceAccount (admission refuses them before the controller
  # manager has made it).
  wait_until "$DEADLINE" "the default ServiceAccount" "$D/bin/kubectl" --kubeconfig="$D/kubeconfig" \
    get serviceaccount default --namespace=default
  local pids="" c
  for c in "${STARTED[@]}"; do pids+=" $c=$(pid_of "$c")"; done
  echo "kube: ready at https://127.0.0.1:$API_PORT in $((SECONDS - t0)) s ($(cat "$bin/../complete" | cut -d' ' -f1);$pids); KUBECONFIG=$D/kubeconfig"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
D=${1:-${ARBITER_CI_DIR:-/tmp/arbiter-ci}/kube}
[ $# -gt 0 ] && shift
case $cmd in
install)
  command -v go > /dev/null || { echo "kube: the Go toolchain is needed (go on PATH or /usr/local/go)"; exit 1; }
  command -v openssl > /dev/null || svc_apt_install openssl
  t0=$SECONDS
  bin=$("$ROOT/tests/cluster/build.sh")
  echo "kube: $(cat "$bin/../complete" | cut -d' ' -f1) binaries in $bin ($((SECONDS - t0)) s)"
  ;;
start) start "$@" ;;
stop)
  D=${D%/}
  stop_all
  echo "kube: stopped"
  ;;
status)
  for c in "${COMPONENTS[@]}"; do
    pid=$(pid_of "$c") || continue
    alive "$pid" || { echo "kube: $c (pid $pid) is not running"; exit 3; }
  done
  [ -f "$D/kube-apiserver.pid" ] || { echo "kube: stopped"; exit 3; }
  echo "kube: running in $D"
  ;;
*) usage ;;
esac

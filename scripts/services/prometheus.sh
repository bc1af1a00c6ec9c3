#!/usr/bin/env bash
# Prometheus 2.42 (Debian) for the integration tests, on 127.0.0.1 only.
#   scripts/services/prometheus.sh install|start|stop|status
# State: ${ARBITER_CI_DIR:-/tmp/arbiter-ci}/prometheus (fresh on every start).
# Port: PROMETHEUS_PORT (default 19090).
# Backfill: every *.om file (OpenMetrics text ending in "# EOF") in PROMETHEUS_BACKFILL_DIR
# (default tests/integration/data/prometheus) is turned into TSDB blocks with
# `promtool tsdb create-blocks-from openmetrics` before the server starts, so the tests query a
# known history. Retention is 10 years so that the fixture's fixed dates are never deleted.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DIR=${ARBITER_CI_DIR:-/tmp/arbiter-ci}/prometheus
PORT=${PROMETHEUS_PORT:-19090}
BACKFILL=${PROMETHEUS_BACKFILL_DIR:-$ROOT/tests/integration/data/prometheus}
DEADLINE=${PROMETHEUS_START_DEADLINE:-150}
PIDFILE=$DIR/prometheus.pid

alive() {  # alive PID: running and not a zombie
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

case "${1:-}" in
install)
  [ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  echo "prometheus: $(prometheus --version 2>&1 | head -1)"
  ;;
start)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "prometheus: already running (pid $(cat "$PIDFILE"))"; exit 0; fi
  rm -rf "$DIR"; mkdir -p "$DIR/data"
  sed "s/127.0.0.1:19090/127.0.0.1:$PORT/" "$HERE/prometheus/prometheus.yml" > "$DIR/prometheus.yml"
  promtool check config "$DIR/prometheus.yml" >/dev/null
  n=0
  for f in "$BACKFILL"/*.om; do
    [ -e "$f" ] || continue
    promtool tsdb create-blocks-from openmetrics "$f" "$DIR/data" > "$DIR/backfill.log" 2>&1 \
      || { echo "prometheus: backfill of $f failed:"; tail -5 "$DIR/backfill.log"; exit 1; }
    n=$((n + 1))
  done
  prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
    --storage.tsdb.retention.time=10y --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle \
    < /dev/null > "$DIR/prometheus.log" 2>&1 &
  echo $! > "$PIDFILE"
  end=$((SECONDS + DEADLINE))
  until curl -sf "http://127.0.0.1:$PORT/-/ready" >/dev/null 2>&1; do
    alive "$(cat "$PIDFILE")" || { echo "prometheus: exited during start:"; tail -20 "$DIR/prometheus.log"; exit 1; }
    [ $SECONDS -lt $end ] || { echo "prometheus: not ready after ${DEADLINE}s"; tail -20 "$DIR/prometheus.log"; exit 1; }
    sleep 0.1
  done
  echo "prometheus: ready on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"), $n backfill file(s))"
  ;;
stop)
  [ -f "$PIDFILE" ] || { echo "prometheus: not running"; exit 0; }
  pid=$(cat "$PIDFILE")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    end=$((SECONDS + 20))
    while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
    if alive "$pid"; then echo "prometheus: still running, SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$PIDFILE"
  echo "prometheus: stopped"
  ;;
status)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "prometheus: running (pid $(cat "$PIDFILE"))"; else echo "prometheus: stopped"; exit 3; fi
  ;;
*)
  echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac

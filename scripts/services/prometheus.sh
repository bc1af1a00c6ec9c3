#!/usr/bin/env bash
# Prometheus 2.42 (Debian) for the integration tests, on 127.0.0.1 only.
#   scripts/services/prometheus.sh install|start|stop|status
# State: ${ARBITER_CI_DIR:-/tmp/arbiter-ci}/prometheus (fresh on every start).
# Port: PROMETHEUS_PORT (default 19090).
# Live targets: file_sd target files (JSON) in $DIR/targets/ are scraped every second (job
# arbiter-serve; the end-to-end metering test puts its `arbiter serve` there).
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

SVC=prometheus
# shellcheck source=lib.sh
. "$HERE/lib.sh"

case "${1:-}" in
install)
  svc_apt_install prometheus
  echo "prometheus: $(prometheus --version 2>&1 | head -1)"
  ;;
start)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "prometheus: already running (pid $(cat "$PIDFILE"))"; exit 0; fi
  rm -rf "$DIR"; mkdir -p "$DIR/data" "$DIR/targets"
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
  svc_wait_ready "$DEADLINE" "$(cat "$PIDFILE")" "$DIR/prometheus.log" -- \
    curl -sf "http://127.0.0.1:$PORT/-/ready" || exit 1
  echo "prometheus: ready on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"), $n backfill file(s))"
  ;;
stop)
  [ -f "$PIDFILE" ] || { echo "prometheus: not running"; exit 0; }
  svc_stop_pid "$(cat "$PIDFILE")"
  rm -f "$PIDFILE"
  echo "prometheus: stopped"
  ;;
status)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "prometheus: running (pid $(cat "$PIDFILE"))"; else echo "prometheus: stopped"; exit 3; fi
  ;;
*)
  echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac

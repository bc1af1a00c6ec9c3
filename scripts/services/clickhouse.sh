#!/usr/bin/env bash
# ClickHouse 18.16 (Debian 12's clickhouse-server) for the integration tests, on 127.0.0.1 only.
#   scripts/services/clickhouse.sh install|start|stop|status
# State: ${ARBITER_CI_DIR:-/tmp/arbiter-ci}/clickhouse (fresh on every start).
# Ports: CLICKHOUSE_HTTP_PORT (default 18123), CLICKHOUSE_TCP_PORT (default 19000).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${ARBITER_CI_DIR:-/tmp/arbiter-ci}/clickhouse
HTTP_PORT=${CLICKHOUSE_HTTP_PORT:-18123}
TCP_PORT=${CLICKHOUSE_TCP_PORT:-19000}
DEADLINE=${CLICKHOUSE_START_DEADLINE:-150}
PIDFILE=$DIR/clickhouse.pid

SVC=clickhouse
# shellcheck source=lib.sh
. "$HERE/lib.sh"

case "${1:-}" in
install)
  svc_apt_install clickhouse-server clickhouse-client
  echo "clickhouse: $(dpkg-query -W -f='${Version}' clickhouse-server 2>/dev/null)"
  ;;
start)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "clickhouse: already running (pid $(cat "$PIDFILE"))"; exit 0; fi
  rm -rf "$DIR"; mkdir -p "$DIR"/{log,data,tmp,user_files,format_schemas}
  for f in config.xml users.xml; do
    sed -e "s|@DIR@|$DIR|g" -e "s|@HTTP_PORT@|$HTTP_PORT|g" -e "s|@TCP_PORT@|$TCP_PORT|g" \
      "$HERE/clickhouse/$f" > "$DIR/$f"
  done
  clickhouse-server --config-file="$DIR/config.xml" < /dev/null > "$DIR/stdout.log" 2>&1 &
  echo $! > "$PIDFILE"
  svc_wait_ready "$DEADLINE" "$(cat "$PIDFILE")" "$DIR/stdout.log" "$DIR/log/server.err.log" -- \
    curl -sf "http://127.0.0.1:$HTTP_PORT/ping" || exit 1
  echo "clickhouse: ready on 127.0.0.1:$HTTP_PORT (HTTP), :$TCP_PORT (native) (pid $(cat "$PIDFILE"))"
  ;;
stop)
  [ -f "$PIDFILE" ] || { echo "clickhouse: not running"; exit 0; }
  svc_stop_pid "$(cat "$PIDFILE")"
  rm -f "$PIDFILE"
  echo "clickhouse: stopped"
  ;;
status)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "clickhouse: running (pid $(cat "$PIDFILE"))"; else echo "clickhouse: stopped"; exit 3; fi
  ;;
*)
  echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac

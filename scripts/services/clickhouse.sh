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

alive() {  # alive PID: running and not a zombie
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

case "${1:-}" in
install)
  [ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
  if ! command -v clickhouse-server >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends clickhouse-server clickhouse-client >/dev/null
  fi
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
  end=$((SECONDS + DEADLINE))
  until curl -sf "http://127.0.0.1:$HTTP_PORT/ping" >/dev/null 2>&1; do
    alive "$(cat "$PIDFILE")" || { echo "clickhouse: exited during start:"; tail -20 "$DIR/stdout.log" "$DIR/log/server.err.log" 2>/dev/null; exit 1; }
    [ $SECONDS -lt $end ] || { echo "clickhouse: not ready after ${DEADLINE}s"; exit 1; }
    sleep 0.1
  done
  echo "clickhouse: ready on 127.0.0.1:$HTTP_PORT (HTTP), :$TCP_PORT (native) (pid $(cat "$PIDFILE"))"
  ;;
stop)
  [ -f "$PIDFILE" ] || { echo "clickhouse: not running"; exit 0; }
  pid=$(cat "$PIDFILE")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    end=$((SECONDS + 20))
    while alive "$pid" && [ $SECONDS -lt $end ]; do sleep 0.1; done
    if alive "$pid"; then echo "clickhouse: still running, SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$PIDFILE"
  echo "clickhouse: stopped"
  ;;
status)
  if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then echo "clickhouse: running (pid $(cat "$PIDFILE"))"; else echo "clickhouse: stopped"; exit 3; fi
  ;;
*)
  echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac

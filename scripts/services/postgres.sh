#!/usr/bin/env bash
# PostgreSQL 15 (Debian 12) for the integration tests, on 127.0.0.1 only, database "arbiter".
#   scripts/services/postgres.sh install|start|stop|status
# State: ${ARBITER_CI_DIR:-/tmp/arbiter-ci}/postgres (fresh on every start; owned by the
# postgres user: the server refuses to run as root). Port: POSTGRES_PORT (default 15432).
# Durability is off (fsync, synchronous_commit): a test database, not a production one.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SVC=postgres
# shellcheck source=lib.sh
. "$HERE/lib.sh"
DIR=${ARBITER_CI_DIR:-/tmp/arbiter-ci}/postgres
PORT=${POSTGRES_PORT:-15432}
DEADLINE=${POSTGRES_START_DEADLINE:-150}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pid_of() { [ -f "$DIR/data/postmaster.pid" ] && head -1 "$DIR/data/postmaster.pid"; }

case "${1:-}" in
install)
  svc_apt_install postgresql postgresql-client
  echo "postgres: $("$PGBIN/postgres" --version)"
  ;;
start)
  if pid=$(pid_of) && alive "$pid"; then echo "postgres: already running (pid $pid)"; exit 0; fi
  rm -rf "$DIR"; mkdir -p "$(dirname "$DIR")"
  if [ "$(id -u)" -eq 0 ]; then install -d -o postgres -g postgres "$DIR"; else mkdir -p "$DIR"; fi
  as_pg "$PGBIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync > "$DIR/initdb.log" 2>&1 \
    || { echo "postgres: initdb failed:"; tail -20 "$DIR/initdb.log"; exit 1; }
  as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t "$DEADLINE" \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start < /dev/null > "$DIR/pg_ctl.log" 2>&1 \
    || { echo "postgres: start failed:"; tail -20 "$DIR/server.log"; exit 1; }
  end=$((SECONDS + DEADLINE))
  until psql "postgresql://postgres@127.0.0.1:$PORT/postgres" -Atqc 'SELECT 1' >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || { echo "postgres: not answering after ${DEADLINE}s"; exit 1; }
    sleep 0.1
  done
  psql "postgresql://postgres@127.0.0.1:$PORT/postgres" -Atqc 'CREATE DATABASE arbiter' >/dev/null
  echo "postgres: ready on 127.0.0.1:$PORT, database arbiter (pid $(pid_of))"
  ;;
stop)
  pid=$(pid_of) || { echo "postgres: not running"; exit 0; }
  svc_stop_pid "$pid" INT   # SIGINT: fast shutdown
  echo "postgres: stopped"
  ;;
status)
  if pid=$(pid_of) && alive "$pid"; then echo "postgres: running (pid $pid)"; else echo "postgres: stopped"; exit 3; fi
  ;;
*)
  echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# A disposable PostgreSQL for tests and the demo: private data directory, private port, trust auth on
# loopback only. initdb refuses to run as root, so the server runs as the `postgres` user when we are root.
#
#   scripts/pg.sh start     # initdb (first time) and start; prints the DATABASE_URL
#   scripts/pg.sh stop      # stop and delete the data directory
#   scripts/pg.sh url       # print the DATABASE_URL
#
# HERALD_PG_DURABLE=1 starts it with PostgreSQL's durability defaults (fsync, synchronous_commit and
# full_page_writes on) and wal_level=logical, as hosted databases run (`make bench`'s WAL line).
set -euo pipefail

# Private ports sit below the ephemeral range (32768 and up), so no outgoing connection can hold them.
PORT="${HERALD_PG_PORT:-25432}"
DIR="${HERALD_PG_DIR:-/tmp/herald-pg-$PORT}"
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
URL="postgresql://postgres@127.0.0.1:$PORT/postgres"

if [ -z "$BIN" ]; then echo "pg.sh: PostgreSQL is not installed (run scripts/deps.sh)" >&2; exit 1; fi

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}

case "${1:-}" in
  start)
    if [ -f "$DIR/data/postmaster.pid" ] && as_pg "'$BIN/pg_ctl' -D '$DIR/data' status" >/dev/null 2>&1; then
      echo "$URL"; exit 0
    fi
    rm -rf "$DIR"
    mkdir -p "$DIR"
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$DIR"; fi
    as_pg "'$BIN/initdb' -D '$DIR/data' -U postgres -A trust -E UTF8 --locale=C.UTF-8 >'$DIR/initdb.log' 2>&1" \
      || { cat "$DIR/initdb.log" >&2; exit 1; }
    # Tuned for a throw-away test server: no fsync, enough connections for concurrent passes.
    DURABILITY="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if [ "${HERALD_PG_DURABLE:-}" = 1 ]; then DURABILITY="-c wal_level=logical"; fi
    as_pg "'$BIN/pg_ctl' -D '$DIR/data' -l '$DIR/server.log' -w -t 60 \
      -o \"-p $PORT -k '$DIR' -c listen_addresses=127.0.0.1 $DURABILITY \
          -c max_connections=400 -c shared_buffers=256MB\" start" >/dev/null \
      || { cat "$DIR/server.log" >&2; exit 1; }
    echo "$URL"
    ;;
  stop)
    if [ -d "$DIR/data" ]; then
      as_pg "'$BIN/pg_ctl' -D '$DIR/data' -m fast -w stop" >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    ;;
  url)
    echo "$URL"
    ;;
  *)
    echo "usage: scripts/pg.sh start|stop|url" >&2; exit 2
    ;;
esac

#!/usr/bin/env bash
# A disposable primary with a synchronous standby, as managed PostgreSQL runs one, for the failover test
# and for measuring what a failover costs. Both listen on loopback only, with private data directories;
# as root they run as the `postgres` user (as scripts/pg.sh runs its server).
#
#   scripts/pg-pair.sh start      # initdb and start the primary, pg_basebackup -R the standby, start it,
#                                 # make it synchronous; prints the multi-host URL
#   scripts/pg-pair.sh failover   # stop the primary at once (immediate) and promote the standby; returns
#                                 # once the new primary accepts writes
#   scripts/pg-pair.sh stop-primary   # only stop the primary at once: no server accepts writes
#   scripts/pg-pair.sh stop       # stop both and delete their directories
#   scripts/pg-pair.sh url        # print the multi-host URL
#
# HERALD_PG_PRIMARY_PORT (25440) and HERALD_PG_STANDBY_PORT (the next one) choose the ports.
set -euo pipefail

P1="${HERALD_PG_PRIMARY_PORT:-25440}"
P2="${HERALD_PG_STANDBY_PORT:-$((P1 + 1))}"
DIR1="/tmp/herald-pair-$P1-primary"
DIR2="/tmp/herald-pair-$P2-standby"
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
URL="postgresql://postgres@127.0.0.1:$P1,127.0.0.1:$P2/postgres?target_session_attrs=read-write&connect_timeout=2"

if [ -z "$BIN" ]; then echo "pg-pair.sh: PostgreSQL is not installed (run scripts/deps.sh)" >&2; exit 1; fi

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}

# A throw-away pair: no fsync (nothing here outlives the test), but each commit waits for the standby
# (synchronous_commit=on with synchronous_standby_names), so a commit the app saw is on both servers.
OPTIONS="-c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100 \
  -c wal_level=replica -c max_wal_senders=4 -c hot_standby=on"

# The servers outlive this script: they must not inherit a descriptor of whoever started it beyond the
# three standard ones (a process waiting for the script's end on such a descriptor would wait for theirs).
start_server() {  # dir port
  ( for fd in /proc/$BASHPID/fd/*; do n="${fd##*/}"; if [ "$n" -gt 2 ]; then eval "exec $n>&-" 2>/dev/null || true; fi; done
    as_pg "'$BIN/pg_ctl' -D '$1/data' -l '$1/server.log' -w -t 60 -o \"-p $2 -k '$1' $OPTIONS\" start" >/dev/null ) \
    || { cat "$1/server.log" >&2; exit 1; }
}

sql() {  # dir port statement
  as_pg "'$BIN/psql' -X -q -At -h '$1' -p $2 -U postgres -d postgres -c \"$3\""
}

stop_server() {  # dir
  if [ -f "$1/data/postmaster.pid" ]; then
    as_pg "'$BIN/pg_ctl' -D '$1/data' -m immediate -w stop" >/dev/null 2>&1 || true
  fi
}

case "${1:-}" in
  start)
    stop_server "$DIR1"; stop_server "$DIR2"
    rm -rf "$DIR1" "$DIR2"
    mkdir -p "$DIR1" "$DIR2"
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$DIR1" "$DIR2"; fi
    as_pg "'$BIN/initdb' -D '$DIR1/data' -U postgres -A trust -E UTF8 --locale=C.UTF-8 >'$DIR1/initdb.log' 2>&1" \
      || { cat "$DIR1/initdb.log" >&2; exit 1; }
    start_server "$DIR1" "$P1"
    as_pg "'$BIN/pg_basebackup' -h 127.0.0.1 -p $P1 -U postgres -D '$DIR2/data' -R -X stream -c fast \
      >'$DIR2/basebackup.log' 2>&1" || { cat "$DIR2/basebackup.log" >&2; exit 1; }
    start_server "$DIR2" "$P2"
    sql "$DIR1" "$P1" "alter system set synchronous_standby_names = '*'" >/dev/null
    sql "$DIR1" "$P1" "select pg_reload_conf()" >/dev/null
    for _ in $(seq 1 300); do
      if [ "$(sql "$DIR1" "$P1" "select count(*) from pg_stat_replication where sync_state = 'sync'")" = 1 ]; then
        echo "$URL"; exit 0
      fi
      sleep 0.1
    done
    echo "pg-pair.sh: the standby did not become synchronous within 30 s" >&2
    cat "$DIR2/server.log" >&2
    exit 1
    ;;
  stop-primary)
    as_pg "'$BIN/pg_ctl' -D '$DIR1/data' -m immediate -w stop" >/dev/null
    ;;
  failover)
    as_pg "'$BIN/pg_ctl' -D '$DIR1/data' -m immediate -w stop" >/dev/null
    as_pg "'$BIN/pg_ctl' -D '$DIR2/data' -w -t 60 promote" >/dev/null \
      || { cat "$DIR2/server.log" >&2; exit 1; }
    ;;
  stop)
    stop_server "$DIR1"; stop_server "$DIR2"
    rm -rf "$DIR1" "$DIR2"
    ;;
  url)
    echo "$URL"
    ;;
  *)
    echo "usage: scripts/pg-pair.sh start|failover|stop-primary|stop|url" >&2; exit 2
    ;;
esac

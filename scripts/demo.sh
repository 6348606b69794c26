#!/usr/bin/env bash
# `make demo`: a disposable PostgreSQL, the migrations, demo data, and one real pass with every channel
# on the log adapter. Prints what was sent, the summary, the queue's status and one decision trail.
set -euo pipefail
cd "$(dirname "$0")/.."

export HERALD_PG_PORT="${HERALD_PG_PORT:-25433}"
url=$(scripts/pg.sh start)
trap 'scripts/pg.sh stop' EXIT INT TERM
psql -q "$url" -c "create database herald_demo" >/dev/null
export DATABASE_URL="${url%/postgres}/herald_demo"
HERALD=.build/debug/herald

for c in PUSH SMS WHATSAPP EMAIL WEBHOOK IN_APP; do export "HERALD_CHANNEL_$c=log"; done
outbox=$(mktemp /tmp/herald-demo-outbox.XXXXXX.jsonl)
export HERALD_LOG_ADAPTER_FILE="$outbox"

echo "== herald migrate"
$HERALD migrate --quiet
psql -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -f scripts/demo.sql

echo
echo "== herald run --now 2026-01-25T03:00:00Z --batch-size 50   (19:00 in Los Angeles, 03:00 in London, 12:00 in Tokyo)"
$HERALD run --now 2026-01-25T03:00:00Z --quiet | tee /tmp/herald-demo-summary.json
echo
echo "== what the log adapter sent ($outbox)"
if command -v python3 >/dev/null; then
  python3 - "$outbox" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    n = json.loads(line)
    who = n["recipient_user_id"][-1]
    print(f"  {n['channel']:7} to user {who} via {n['provider']:7} {n['title']!r}: {n['body']!r}")
PY
else
  cat "$outbox"
fi

echo
echo "== the queue, row by row"
psql -q "$DATABASE_URL" -c "
  select p.display_name as recipient, q.channel, q.kind, q.severity, q.status,
         coalesce(q.skip_reason, q.last_error, '') as why, to_char(q.run_after at time zone 'UTC', 'HH24:MI') as run_after_utc
    from notification_queue q join user_profiles p on p.user_id = q.recipient_user_id
   order by p.display_name, q.channel"

echo "== herald status --now 2026-01-25T03:00:00Z"
$HERALD status --now 2026-01-25T03:00:00Z

deferred=$(psql -qtA "$DATABASE_URL" -c "select id from notification_queue where status = 'pending' and kind = 'reminder' limit 1")
if [ -n "$deferred" ]; then
  echo
  echo "== herald explain $deferred   (why Sam's reminder waits)"
  $HERALD explain "$deferred"
fi
rm -f "$outbox"

#!/usr/bin/env bash
# A smoke run for CI and for a new deployment's throw-away database:
#
#   scripts/smoke.sh postgresql://postgres@127.0.0.1:5432/herald_smoke
#
# migrates the database, adds one recipient per channel (no quiet hours, the channel on), enqueues one
# notification per channel with `herald enqueue`, runs one pass, and exits 0 only if the pass exited 0
# and every row it enqueued was sent. Every channel goes to the log adapter unless the environment
# routes it already (HERALD_CHANNEL_<CHANNEL>=log or off): a channel turned off leaves its row unsent,
# and the run fails saying which. It writes to the database it is given: use a throw-away one.
#
# HERALD (default .build/debug/herald, built if missing) is the binary under test; HERALD_SQL_DIR the
# migrations (default this checkout's sql/). Needs psql.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "smoke: FAILED: $*" >&2; exit 1; }

[ $# -eq 1 ] && [ -n "$1" ] || { echo "usage: scripts/smoke.sh DATABASE_URL" >&2; exit 64; }
export DATABASE_URL="$1"
export HERALD_SQL_DIR="${HERALD_SQL_DIR:-$PWD/sql}"
HERALD="${HERALD:-.build/debug/herald}"
command -v psql >/dev/null 2>&1 || fail "psql is not installed (scripts/deps.sh installs it)"
if [ ! -x "$HERALD" ]; then
  echo "smoke: building herald" >&2
  swift build --product herald >&2
fi

channels=(push sms whatsapp email webhook in_app)
for c in "${channels[@]}"; do
  var="HERALD_CHANNEL_${c^^}"
  export "$var=${!var:-log}"
done
work=$(mktemp -d /tmp/herald-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HERALD_LOG_ADAPTER_FILE="$work/outbox.jsonl"
sql() { psql -X -q -v ON_ERROR_STOP=1 -tA "$DATABASE_URL" -c "$1"; }

echo "smoke: herald migrate" >&2
"$HERALD" migrate --quiet || fail "herald migrate exited $?"

# One recipient per channel, so that no rate limit between a person's notifications holds one back.
ids=()
for c in "${channels[@]}"; do
  user=$(sql "
    insert into user_profiles (user_id, display_name, timezone, email, phone_e164, notify_in_app, notify_push,
                               notify_email, notify_sms, notify_whatsapp)
    values (gen_random_uuid(), 'smoke $c', 'UTC', 'smoke@example.com', '+15555550100', true, true, true, true, true)
    returning user_id") || fail "cannot add the $c recipient"
  if [ "$c" = push ]; then
    sql "insert into device_tokens (user_id, device_token, platform, provider)
         values ('$user', encode(sha256(gen_random_uuid()::text::bytea), 'hex'), 'ios', 'apns')" >/dev/null \
      || fail "cannot add the push recipient's device token"
  fi
  id=$("$HERALD" enqueue --quiet --to "$user" --channel "$c" --title "smoke $c" --body "one pass sends this") \
    || fail "herald enqueue --channel $c exited $?"
  ids+=("$id")
done

echo "smoke: herald run" >&2
set +e
"$HERALD" run --quiet --batch-size "${#channels[@]}" >"$work/summary.json"
code=$?
set -e
cat "$work/summary.json"
[ "$code" -eq 0 ] || fail "herald run exited $code (README.md#exit-codes)"

unsent=0
for i in "${!channels[@]}"; do
  row=$(sql "select status || ' ' || coalesce(skip_reason, last_error, '') from notification_queue where id = '${ids[$i]}'")
  if [ "${row%% *}" != sent ]; then
    echo "smoke: the ${channels[$i]} row ${ids[$i]} was not sent: $row (HERALD_CHANNEL_${channels[$i]^^}=$(printenv "HERALD_CHANNEL_${channels[$i]^^}"))" >&2
    unsent=$((unsent + 1))
  fi
done
[ "$unsent" -eq 0 ] || fail "$unsent of ${#channels[@]} rows were not sent"
echo "smoke: ok, ${#channels[@]} rows sent, one per channel" >&2

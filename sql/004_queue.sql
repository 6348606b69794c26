-- The queue and its records (seed 000's notification_queue, extended by DESIGN §2–3).

create table if not exists notification_queue (
  id                   uuid primary key default gen_random_uuid(),
  recipient_user_id    uuid not null,
  member_user_id       uuid,           -- who it is about; the recipient for a person's own notifications
  alert_state_id       uuid references pattern_alert_state (id) on delete set null,
  -- Not constrained: an unknown channel is failed by the worker with a readable last_error.
  channel              text not null,
  kind                 text not null default 'system',
  severity             text check (severity in ('watch', 'attention', 'critical')),
  priority             text not null default 'normal' check (priority in ('high', 'normal', 'low')),
  priority_rank        smallint generated always as
                         (case priority when 'high' then 0 when 'normal' then 1 else 2 end) stored,
  payload              jsonb not null default '{}'::jsonb,
  status               text not null default 'pending'
                         check (status in ('pending', 'processing', 'sent', 'failed', 'skipped')),
  attempts             int not null default 0,
  max_attempts         int not null default 5 check (max_attempts > 0),
  -- A failed row that will not be retried (a permanent error, or attempts used up).
  permanent            boolean not null default false,
  last_error           text,
  skip_reason          text,
  -- When the notification was meant to go out; --max-age is measured from here.
  scheduled_at         timestamptz not null default now(),
  -- Not before: the schedule, a deferral, or the next retry.
  run_after            timestamptz not null default now(),
  locked_until         timestamptz,
  locked_by            text,
  dedupe_key           text,
  provider_message_id  text,
  sent_at              timestamptz,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now()
) with (
  -- Every claim and record is an update: leave room on each page for HOT updates, vacuum often.
  fillfactor = 70,
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);

create unique index if not exists notification_queue_dedupe
  on notification_queue (dedupe_key) where dedupe_key is not null;

-- Serves exactly the claim: the due predicate, in claim order.
create index if not exists notification_queue_due
  on notification_queue (priority_rank, run_after, id)
  where status = 'pending' or (status = 'failed' and not permanent);

-- Lease recovery: rows whose pass died.
create index if not exists notification_queue_leased
  on notification_queue (locked_until) where status = 'processing';

-- Rate limits and superseding read recent sends per recipient; status and explain read by recipient.
create index if not exists notification_queue_recipient_sent
  on notification_queue (recipient_user_id, sent_at) where status = 'sent';
create index if not exists notification_queue_alert
  on notification_queue (alert_state_id) where alert_state_id is not null;
-- Pruning terminal rows past the retention.
create index if not exists notification_queue_terminal
  on notification_queue (updated_at) where status in ('sent', 'skipped') or permanent;
-- Seed 000's index.
create index if not exists notification_queue_status_created on notification_queue (status, created_at);

-- One row per attempt per destination. A retry re-sends only to destinations with no `delivered` row.
create table if not exists notification_deliveries (
  id                   bigint generated always as identity primary key,
  queue_id             uuid not null references notification_queue (id) on delete cascade,
  pass_id              text not null,
  attempt              int not null,
  channel              text not null,
  provider             text not null,
  destination          text not null,
  device_token_id      uuid,
  outcome              text not null check (outcome in ('delivered', 'retry', 'permanent', 'destination_invalid')),
  http_status          int,
  provider_error_code  text,
  provider_message_id  text,
  error                text,
  latency_ms           int,
  at                   timestamptz not null default now()
);
create index if not exists notification_deliveries_queue on notification_deliveries (queue_id, destination);

-- The decision trail, append-only: why a person did or did not get a notification.
create table if not exists notification_events (
  id        bigint generated always as identity primary key,
  queue_id  uuid not null references notification_queue (id) on delete cascade,
  pass_id   text,
  at        timestamptz not null default now(),
  event     text not null check (event in
              ('enqueued', 'claimed', 'sent', 'skipped', 'deferred', 'failed', 'superseded', 'recovered')),
  reason    text,
  details   jsonb
);
create index if not exists notification_events_queue on notification_events (queue_id, id);

-- One row per pass: what `herald status` shows as the last passes.
create table if not exists herald_passes (
  pass_id      text primary key,
  started_at   timestamptz not null,
  finished_at  timestamptz,
  host         text,
  exit_code    int,
  summary      jsonb
);
create index if not exists herald_passes_started on herald_passes (started_at desc);

-- Providers that confirm later (Expo): tickets waiting for their receipts.
create table if not exists push_receipts (
  id               bigint generated always as identity primary key,
  queue_id         uuid not null references notification_queue (id) on delete cascade,
  provider         text not null default 'expo',
  ticket_id        text not null unique,
  device_token_id  uuid references device_tokens (id) on delete set null,
  status           text not null default 'pending' check (status in ('pending', 'ok', 'error')),
  error_code       text,
  error_message    text,
  created_at       timestamptz not null default now(),
  checked_at       timestamptz
);
create index if not exists push_receipts_pending on push_receipts (created_at) where status = 'pending';

-- The in-app channel's records (seed 003's notification records). One per queue row: a repeated
-- delivery after a crash inserts nothing new.
create table if not exists inbox (
  id          uuid primary key default gen_random_uuid(),
  user_id     uuid not null,
  queue_id    uuid unique references notification_queue (id) on delete set null,
  type        text not null,
  priority    text not null default 'normal',
  title       text not null,
  body        text not null,
  deep_link   text,
  data        jsonb not null default '{}'::jsonb,
  is_read     boolean not null default false,
  read_at     timestamptz,
  created_at  timestamptz not null default now()
);
create index if not exists inbox_user_unread on inbox (user_id) where not is_read;
create index if not exists inbox_user_created on inbox (user_id, created_at desc);

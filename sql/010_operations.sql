-- Operator controls: pauses honoured by every pass at the claim, and the trail events of
-- the operator verbs (herald retry, cancel, reschedule, unlock).

-- A pause holds back due rows of a channel, a kind, or a kind on one channel: they stay pending and
-- are counted as `paused`. `herald pause` writes it, `herald resume` deletes it.
create table if not exists herald_pauses (
  id         bigint generated always as identity primary key,
  channel    text,
  kind       text,
  reason     text,
  paused_by  text,
  paused_at  timestamptz not null default now(),
  check (channel is not null or kind is not null)
);
create unique index if not exists herald_pauses_scope on herald_pauses (coalesce(channel, ''), coalesce(kind, ''));

-- herald's own table: no access for app roles (see 008_security.sql for the model).
select herald_restrict_table('herald_pauses');

alter table notification_events drop constraint if exists notification_events_event_check;
alter table notification_events add constraint notification_events_event_check check (event in
  ('enqueued', 'claimed', 'sent', 'skipped', 'deferred', 'failed', 'superseded', 'recovered', 'released',
   'retried', 'cancelled', 'rescheduled', 'unlocked'));

-- The `snoozed` action reschedules the reminder's notification (the design's snooze button): the
-- notification goes again `snooze_minutes` later (10 by default), once. A second snooze of the same
-- notification reschedules nothing more; the notification sent again is a notification of its own,
-- which may be snoozed once in turn.
--
--     select record_notification_action('3f2c…', 'snoozed');            -- again in 10 minutes
--     select record_notification_action('3f2c…', 'snoozed', 30);        -- again in 30 minutes
--     -- {…, "action":"snoozed", "rescheduled":true, "snoozed_until":1769310720000}
--
-- Only a reminder's notification is rescheduled (a queue row that names its reminder, while the
-- queue keeps it), and only while the reminder is enabled and not cancelled. The copy is a new queue
-- row at the new time: the same text, payload, channel and related entity, `snoozed_from` in its
-- payload, the reminder's id (cancelling the reminder withdraws it while it waits), and the
-- original's notification group, so the rate limits count the two as one notification (as an
-- escalation's copy) and the hour between two reminders does not hold the snooze back. Its dedupe key
-- (`snooze:<notification id>`) makes it once.
--

-- The copy of a sent reminder notification, `minutes` from now; nothing when it is not a live
-- reminder's. `rescheduled` says whether this call made it; `snoozed_until` is the copy's time (made
-- now or by an earlier snooze), null when there is none.
create or replace function herald_snooze_reminder(caller uuid, notification uuid, minutes int,
                                                  out rescheduled boolean, out snoozed_until timestamptz)
language plpgsql set search_path = public, pg_temp
as $$
declare
  q notification_queue;
  copy uuid;
  until timestamptz := now() + make_interval(mins => minutes);
begin
  rescheduled := false;
  select * into q from notification_queue x
   where x.id = notification and x.recipient_user_id = caller and x.reminder_id is not null;
  if q.id is null or not exists (select 1 from reminders r
                                  where r.id = q.reminder_id and r.user_id = caller and r.enabled and r.cancelled_at is null) then
    return;
  end if;
  insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, priority, payload,
                                  scheduled_at, run_after, dedupe_key, notification_group, related_entity_type,
                                  related_entity_id, reminder_id)
  values (q.recipient_user_id, q.member_user_id, q.channel, q.kind, q.severity, q.priority,
          q.payload || jsonb_build_object('snoozed_from', q.id), until, until, 'snooze:' || q.id,
          coalesce(q.notification_group, q.id::text), q.related_entity_type, q.related_entity_id, q.reminder_id)
  on conflict do nothing
  returning id into copy;
  if copy is null then
    select x.scheduled_at into snoozed_until from notification_queue x
     where x.dedupe_key = 'snooze:' || q.id and x.recipient_user_id = caller;
    return;
  end if;
  insert into notification_events (queue_id, event, reason, details)
  values (copy, 'enqueued', 'snoozed', jsonb_build_object('snoozed_from', q.id, 'minutes', minutes));
  rescheduled := true;
  snoozed_until := until;
end
$$;

-- record_notification_action (sql/037) as it was, with `snooze_minutes` and the snoozed branch. A new
-- parameter makes a new function: the two-parameter one is dropped first, so that a call with two
-- arguments (positional, or two JSON keys through PostgREST) has one function to match.
drop function if exists record_notification_action(uuid, text);
create or replace function record_notification_action(notification_id uuid, action text, snooze_minutes int default null)
returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  entry inbox;
  marked int := 0;
  queued notification_queue;
  dose_at timestamptz;
  step text;
  zone text;
  dose_done boolean := false;
  log_done boolean := false;
  rescheduled boolean := false;
  snoozed_until timestamptz;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if record_notification_action.action is null or record_notification_action.action not in
       ('opened', 'dismissed', 'dose_marked_taken', 'symptom_logged', 'snoozed') then
    perform herald_raise('validation_error',
      'action must be one of opened, dismissed, dose_marked_taken, symptom_logged, snoozed');
  end if;
  if record_notification_action.notification_id is null then
    perform herald_raise('validation_error', 'notification_id is required');
  end if;
  if record_notification_action.snooze_minutes is not null
     and (record_notification_action.action <> 'snoozed' or record_notification_action.snooze_minutes not between 1 and 1440) then
    perform herald_raise('validation_error', 'snooze_minutes must be from 1 to 1440, with the snoozed action only');
  end if;

  select * into entry from inbox i
   where i.id = herald_entry_of(caller, record_notification_action.notification_id) and i.user_id = caller
     and (i.delivered_at is not null or exists (
           select 1 from notification_queue q
            where q.status = 'sent' and q.recipient_user_id = caller
              and (q.id = i.queue_id or q.notification_group = i.notification_key)))
  for update;
  if entry.id is null then
    perform herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;
  if record_notification_action.action = 'opened' and not entry.is_read then
    marked := 1;
  end if;
  update inbox i
     set action = record_notification_action.action, actioned_at = at,
         is_read = i.is_read or marked > 0, read_at = case when marked > 0 then at else i.read_at end
   where i.id = entry.id
  returning i.* into entry;

  -- The queue row behind the entry, while the queue keeps it: its payload names the dose.
  select * into queued from notification_queue q
   where q.recipient_user_id = caller
     and q.id in (record_notification_action.notification_id, entry.queue_id)
   order by q.id = record_notification_action.notification_id desc limit 1;

  if record_notification_action.action = 'dose_marked_taken' then
    step := coalesce(queued.related_entity_id, entry.related_entity_id);
    dose_at := herald_try_timestamptz(queued.payload ->> 'dose_at');
    if dose_at is null and queued.id is null and entry.type = 'reminder' then
      select coalesce(entry.scheduled_at, entry.created_at) + make_interval(mins => p.dose_reminder_advance_minutes)
        into dose_at from user_profiles p where p.user_id = caller;
    end if;
    if step is not null and dose_at is not null then
      insert into dose_events as d (user_id, related_entity_id, scheduled_at, taken_at)
      values (caller, step, dose_at, at)
      on conflict (user_id, related_entity_id, scheduled_at)
        do update set taken_at = coalesce(d.taken_at, excluded.taken_at);
      dose_done := true;
    end if;

  elsif record_notification_action.action = 'symptom_logged' then
    select p.timezone into zone from user_profiles p where p.user_id = caller;
    insert into daily_logs (user_id, log_date, logged_at)
    values (caller, (at at time zone coalesce(zone, 'UTC'))::date, at)
    on conflict (user_id, log_date) do nothing;
    log_done := true;

  elsif record_notification_action.action = 'snoozed' then
    select s.rescheduled, s.snoozed_until into rescheduled, snoozed_until
      from herald_snooze_reminder(caller, coalesce(queued.id, entry.queue_id, entry.id),
                                  coalesce(record_notification_action.snooze_minutes, 10)) s;
  end if;

  return jsonb_build_object('id', entry.id, 'notification_id', record_notification_action.notification_id,
                            'action', entry.action, 'actioned_time', herald_ms(entry.actioned_at),
                            'marked_read', marked > 0, 'dose_recorded', dose_done, 'log_recorded', log_done,
                            'rescheduled', rescheduled, 'snoozed_until', herald_ms(snoozed_until));
end
$$;

-- Privileges: the helper for the owner only; the RPC for `authenticated`, not anon or PUBLIC.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname = 'herald_snooze_reminder'
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
  revoke all on function record_notification_action(uuid, text, int) from public;
  if exists (select 1 from pg_roles where rolname = 'anon') then
    revoke all on function record_notification_action(uuid, text, int) from anon;
  end if;
  if exists (select 1 from pg_roles where rolname = 'authenticated') then
    grant execute on function record_notification_action(uuid, text, int) to authenticated;
  end if;
end
$$;

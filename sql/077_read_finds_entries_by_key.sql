-- The app's read and action find the entries they name by the list's key, whatever the statistics say.
-- Each condition on the person's id matched the list's other indexes as well as the key, and with
-- statistics of one entry a person (the planner knows better only after the next analyze) the plans
-- walked all of a person's entries:
--   - `mark_notifications_read` marked `id in (select … from named)`, a hash join over the person's
--     unread entries; it now marks `id = any(array(…))`, the named entries found first, then each by
--     its key. One entry, one read per transaction as the person: 114.0 against 122.8 µs
--     of the backend's CPU.
--   - `record_notification_action` took the entry where `id = herald_entry_of(…) and user_id = …`,
--     walking the person's entries and calling the lookup on each: 78 ms an action for a person with
--     3,000 entries, 1 ms now. Its queue row is found by its key, the recipient tested after.
--   - `herald_entry_of` tests the owner after each lookup by key (`offset 0` keeps the test out of
--     the lookup), and finds a group's entry by the person and the group together.
-- The entry a notification id names is the caller's (`herald_entry_of` tests it), so the read and the
-- action look up that id alone.
--
-- What a read does beyond marking is called for the entries whose notification uses follow-ups, quiet
-- once read or a digest, told apart by a second aggregate over the update's answer (their ids, null
-- when there are none). Migration 076's flag of the transaction, raised by an expression of the
-- update's answer and tested after, cost as much one read per transaction: any such test costs
-- 1.1–1.5 µs a read wherever it is put, and this one says what it does.

create or replace function public.herald_entry_of(uid uuid, notification_id uuid) returns uuid
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
  return coalesce(
    (select e.id from (select i.id, i.user_id from public.inbox i where i.id = notification_id offset 0) e
      where e.user_id = uid),
    (select (select i.id from public.inbox i where i.user_id = uid and i.notification_key = q.entry_key)
       from (select coalesce(q.notification_group, q.id::text) as entry_key, q.recipient_user_id
               from public.notification_queue q where q.id = notification_id offset 0) q
      where q.recipient_user_id = uid));
end
$$;

CREATE OR REPLACE FUNCTION public.mark_notifications_read(notification_ids uuid[]) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  ids uuid[];
  effectful uuid[];
begin
  if caller is null then
    perform public.herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if notification_ids is null then
    perform public.herald_raise('validation_error', 'notification_ids is required');
  end if;
  if cardinality(notification_ids) > 1000 then
    perform public.herald_raise('validation_error', format('notification_ids names %s notifications; at most 1000 a call',
                                                    cardinality(notification_ids)));
  end if;
  with updated as (
    update public.inbox i set is_read = true, read_at = at
     where i.id = any(array(select public.herald_entry_of(caller, n) from unnest(notification_ids) n)) and not i.is_read
    returning i.id, i.read_effects
  )
  select coalesce(array_agg(id), '{}'), array_agg(id) filter (where read_effects) into ids, effectful from updated;
  -- What reading does beyond marking, only for the entries whose notification uses it.
  if effectful is not null then
    perform public.herald_inbox_read_effects(i, true, false, 'read') from public.inbox i where i.id = any(effectful);
  end if;
  return jsonb_build_object('updated_count', cardinality(ids), 'notification_ids', to_jsonb(ids),
                            'read_at', /* public.herald_ms(at) */ ((extract(epoch from (at)::timestamp with time zone) * 1000)::bigint));
end
$$;

CREATE OR REPLACE FUNCTION public.record_notification_action(notification_id uuid, action text, snooze_minutes integer DEFAULT NULL::integer) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  entry public.inbox;
  marked int := 0;
  queued public.notification_queue;
  dose_at timestamptz;
  step text;
  zone text;
  dose_done boolean := false;
  log_done boolean := false;
  rescheduled boolean := false;
  snoozed_until timestamptz;
  previous_action text;
begin
  if caller is null then
    perform public.herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if record_notification_action.action is null or record_notification_action.action not in
       ('opened', 'dismissed', 'dose_marked_taken', 'symptom_logged', 'snoozed') then
    perform public.herald_raise('validation_error',
      'action must be one of opened, dismissed, dose_marked_taken, symptom_logged, snoozed');
  end if;
  if record_notification_action.notification_id is null then
    perform public.herald_raise('validation_error', 'notification_id is required');
  end if;
  if record_notification_action.snooze_minutes is not null
     and (record_notification_action.action <> 'snoozed' or record_notification_action.snooze_minutes not between 1 and 1440) then
    perform public.herald_raise('validation_error', 'snooze_minutes must be from 1 to 1440, with the snoozed action only');
  end if;

  -- By the list's key alone: the entry a notification id names is the caller's (`herald_entry_of`).
  select * into entry from public.inbox i
   where i.id = public.herald_entry_of(caller, record_notification_action.notification_id)
     and (i.delivered_at is not null or exists (
           select 1 from public.notification_queue q
            where q.status = 'sent' and q.recipient_user_id = caller
              and (q.id = i.queue_id or q.notification_group = i.notification_key)))
  for update;
  if entry.id is null then
    perform public.herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;
  if record_notification_action.action = 'opened' and not entry.is_read then
    marked := 1;
  end if;
  previous_action := entry.action;
  update public.inbox i
     set action = record_notification_action.action, actioned_at = at,
         is_read = i.is_read or marked > 0, read_at = case when marked > 0 then at else i.read_at end
   where i.id = entry.id
  returning i.* into entry;
  -- What acting on it does beyond marking, only where its notification uses it.
  if entry.read_effects then
    perform public.herald_inbox_read_effects(entry, marked > 0, entry.action is distinct from previous_action,
                                             case when entry.action is distinct from previous_action
                                                  then entry.action else 'read' end);
  end if;

  -- The queue row behind the entry, while the queue keeps it: its payload names the dose.
  select * into queued
    from (select * from public.notification_queue q
           where q.id in (record_notification_action.notification_id, entry.queue_id) offset 0) q
   where q.recipient_user_id = caller
   order by q.id = record_notification_action.notification_id desc limit 1;

  if record_notification_action.action = 'dose_marked_taken' then
    step := coalesce(queued.related_entity_id, entry.related_entity_id);
    dose_at := public.herald_try_timestamptz(queued.payload ->> 'dose_at');
    if dose_at is null and queued.id is null and entry.type = 'reminder' then
      select coalesce(entry.scheduled_at, entry.created_at) + make_interval(mins => p.dose_reminder_advance_minutes)
        into dose_at from public.user_profiles p where p.user_id = caller;
    end if;
    if step is not null and dose_at is not null then
      insert into public.dose_events as d (user_id, related_entity_id, scheduled_at, taken_at)
      values (caller, step, dose_at, at)
      on conflict (user_id, related_entity_id, scheduled_at)
        do update set taken_at = coalesce(d.taken_at, excluded.taken_at);
      dose_done := true;
    end if;

  elsif record_notification_action.action = 'symptom_logged' then
    select p.timezone into zone from public.user_profiles p where p.user_id = caller;
    insert into public.daily_logs (user_id, log_date, logged_at)
    values (caller, (at at time zone coalesce(zone, 'UTC'))::date, at)
    on conflict (user_id, log_date) do nothing;
    log_done := true;

  elsif record_notification_action.action = 'snoozed' then
    select s.rescheduled, s.snoozed_until into rescheduled, snoozed_until
      from public.herald_snooze_reminder(caller, coalesce(queued.id, entry.queue_id, entry.id),
                                  coalesce(record_notification_action.snooze_minutes, 10)) s;
  end if;

  return jsonb_build_object('id', entry.id, 'notification_id', record_notification_action.notification_id,
                            'action', entry.action, 'actioned_time', /* public.herald_ms(entry.actioned_at) */ ((extract(epoch from (entry.actioned_at)::timestamp with time zone) * 1000)::bigint),
                            'marked_read', marked > 0, 'dose_recorded', dose_done, 'log_recorded', log_done,
                            'rescheduled', rescheduled, 'snoozed_until', /* public.herald_ms(snoozed_until) */ ((extract(epoch from (snoozed_until)::timestamp with time zone) * 1000)::bigint));
end
$$;


-- A read of a notification passed herald's read trigger on `inbox` (sql/068) whatever its type: for an
-- entry whose notification uses none of follow-ups, quiet once read and digests its WHEN clause is
-- false and no function ran, but the server still fetched the row's old version and tested the clause
-- for each updated row, +2.8–3.4 % of the backend's CPU on a one-row read. The trigger goes. What a read
-- does beyond marking runs in the read's own transaction, in the statement after its update, called by
-- what reads: `mark_notifications_read` and `record_notification_action` (the app's read and action),
-- and a digest's read of its items. Each reads back from its update which entries use more
-- (`inbox.read_effects`) and calls `herald_inbox_read_effects` for those alone: a plain read costs one
-- column more in its update's answer.
--
-- A read written straight into `inbox` (the service role's update, which no RPC sees) is honoured when
-- its steps and copies come due: a step's claim checks its chain (sql/057), and a copy's decision
-- checks for a read elsewhere (skipped `read_elsewhere`), so neither goes out; what it does not do is
-- cancel them at once, nor correct the badge on the person's other devices.

-- What reading (`was_read`) or acting on (`acted`; `read_by` the action, or 'read') `entry` does beyond
-- marking it: its chain's pending steps cancelled, the other copies not yet sent withdrawn (with the
-- badge correction asked for), a digest's items read with it. Each only where the entry uses it.
create or replace function public.herald_inbox_read_effects(entry public.inbox, was_read boolean, acted boolean,
                                                            read_by text) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if not (was_read or acted) then
    return;
  end if;
  if entry.follows_up then
    perform public.herald_follow_up_cancel(entry, acted);
  end if;
  if entry.quiet_once_read then
    perform public.herald_withdraw_read_copies(entry, read_by);
  end if;
  if was_read and entry.notification_key like 'digest:%' then
    perform public.herald_digest_read_items(entry);
  end if;
end
$$;

-- A digest's entry read: its items' entries are read with it, and what their reads do beyond marking
-- is done for those that use it.
create or replace function public.herald_digest_read_items(entry public.inbox) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  effectful uuid[];
begin
  with u as (
    update public.inbox i set is_read = true, read_at = coalesce(i.read_at, entry.read_at, now())
     where i.user_id = entry.user_id and not i.is_read
       and i.notification_key in (select it.entry_key from public.notification_digests d
                                    join public.notification_digest_items it on it.digest_id = d.id
                                   where d.user_id = entry.user_id and d.notification_group = entry.notification_key)
    returning i.id, i.read_effects
  )
  select array_agg(id) filter (where read_effects) into effectful from u;
  if effectful is not null then
    perform public.herald_inbox_read_effects(i, true, false, 'read') from public.inbox i
     where i.id = any(effectful) and i.notification_key not like 'digest:%';
  end if;
end
$$;

drop trigger if exists herald_inbox_read on inbox;
drop function if exists public.herald_inbox_read();

-- The app's read, calling what its entries' reads do.
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
  with named as (
    select public.herald_entry_of(caller, n) as id from unnest(notification_ids) n
  ), updated as (
    update public.inbox i set is_read = true, read_at = at
     where i.id in (select id from named) and i.user_id = caller and not i.is_read
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


-- The app's action, calling what acting on the entry does.
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

  select * into entry from public.inbox i
   where i.id = public.herald_entry_of(caller, record_notification_action.notification_id) and i.user_id = caller
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
  select * into queued from public.notification_queue q
   where q.recipient_user_id = caller
     and q.id in (record_notification_action.notification_id, entry.queue_id)
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


do $$
declare
  fn text;
  app_role text;
begin
  foreach fn in array array['public.herald_inbox_read_effects(public.inbox, boolean, boolean, text)',
                            'public.herald_digest_read_items(public.inbox)'] loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated', 'service_role') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

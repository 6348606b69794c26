-- The list (`herald_listed_entries`, under `get_notifications` and the history) and an action's check
-- (`record_notification_action`) find the sends of an entry not yet marked delivered: the queue's sent
-- rows of the person that are the entry's row or share its group, as one condition with an OR. No
-- index serves that OR whole, so the plan rested on the statistics: taken before a burst of sends
-- (autovacuum analyzes a while after), they said there was hardly a sent row, and the planner walked
-- the terminal rows' index through every sent row of everyone for each entry (2.4 ms a list of one
-- entry over 20,000 sent rows; 214 µs once analyzed). Each side is now a lookup of its own, the row by
-- its key and the group by `notification_queue_group` (recipient, group), and tests the status after:
-- a condition on the status in the lookup lets the planner take the terminal rows' index, which stale
-- statistics price as empty (`offset 0` keeps the test out of the lookup). What they find is the same:
-- the earliest send of the two, and its channel.

CREATE OR REPLACE FUNCTION public.herald_listed_entries(uid uuid) RETURNS TABLE(id uuid, user_id uuid, type text, priority text, title text, body text, title_en text, title_ar text, body_en text, body_ar text, deep_link text, image_url text, data jsonb, is_read boolean, read_at timestamp with time zone, created_at timestamp with time zone, scheduled_at timestamp with time zone, delivered_at timestamp with time zone, channel text, action text, actioned_at timestamp with time zone, related_entity_id text, related_entity_type text)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select i.id, i.user_id, i.type, i.priority, i.title, i.body, i.title_en, i.title_ar, i.body_en, i.body_ar,
         i.deep_link, i.image_url, i.data, i.is_read, i.read_at, i.created_at,
         coalesce(i.scheduled_at, i.created_at), coalesce(i.delivered_at, s.at), coalesce(i.channel, s.channel),
         i.action, i.actioned_at, i.related_entity_id, i.related_entity_type
    from public.inbox i
    left join lateral (
      select min(x.at) as at, (array_agg(x.channel order by x.at, x.id))[1] as channel
        from ((select q.id, q.status, coalesce(q.sent_at, q.updated_at) as at, q.channel
                 from public.notification_queue q
                where q.id = i.queue_id and q.recipient_user_id = i.user_id offset 0)
              union all
              (select q.id, q.status, coalesce(q.sent_at, q.updated_at), q.channel
                 from public.notification_queue q
                where q.recipient_user_id = i.user_id and q.notification_group = i.notification_key offset 0)) x
       where i.delivered_at is null and x.status = 'sent') s on true
   where i.user_id = uid and (i.delivered_at is not null or s.at is not null)
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

  select * into entry from public.inbox i
   where i.id = public.herald_entry_of(caller, record_notification_action.notification_id) and i.user_id = caller
     and (i.delivered_at is not null
          or exists (select 1 from (select q.status from public.notification_queue q
                                     where q.id = i.queue_id and q.recipient_user_id = caller offset 0) x
                      where x.status = 'sent')
          or exists (select 1 from (select q.status from public.notification_queue q
                                     where q.recipient_user_id = caller and q.notification_group = i.notification_key
                                     offset 0) x
                      where x.status = 'sent'))
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


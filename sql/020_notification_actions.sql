-- What the person did with a notification does what it says (seed 001 §NotificationAction):
--
--   opened             marks read every in-app copy of the notification, whichever copy was opened: a
--                      push and its in-app copy are two queue rows of one `notification_group`, so
--                      opening the push reads the inbox entry too
--   dose_marked_taken  records the dose as taken in `dose_events` (the test step is the row's
--                      related entity, the dose time its payload's `dose_at`), which the adherence
--                      analyzer reads; a dose already marked keeps its first time
--   symptom_logged     records today's log in `daily_logs` (today in the person's time zone)
--   dismissed, snoozed only recorded
--
-- The answer says what happened beside the action: `marked_read` (in-app copies now read),
-- `dose_recorded`, `log_recorded`. A dose can be recorded only while herald knows which dose it was:
-- the queue row (kept `HERALD_RETENTION_DAYS`) names it, or else the history entry's test step and its
-- scheduled time plus the person's `dose_reminder_advance_minutes`.

-- `dose_at` as written by the reminders phase; null for anything that is not a finite timestamp (the
-- payload is the app's to write: 'infinity' or 'now' are not a dose time). Stable, not immutable: the
-- result of a cast to timestamptz depends on the session's TimeZone.
create or replace function herald_try_timestamptz(t text) returns timestamptz
language plpgsql stable
as $$
declare
  v timestamptz;
begin
  if t is null or lower(btrim(t)) in ('now', 'today', 'tomorrow', 'yesterday', 'epoch') then
    return null;
  end if;
  v := t::timestamptz;
  return case when isfinite(v) then v end;
exception when others then
  return null;
end
$$;

create or replace function record_notification_action(notification_id uuid, action text) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  hid uuid;
  marked int := 0;
  entry notification_history;
  queued notification_queue;
  grp text;
  dose_at timestamptz;
  step text;
  zone text;
  dose_done boolean := false;
  log_done boolean := false;
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

  select h.id into hid from notification_history h
   where h.id = record_notification_action.notification_id and h.user_id = caller;
  if hid is null then
    -- An in-app copy by its own id (copies written before 013 have an id of their own). Its history
    -- row, if it has none (written before 013, or pruned), is made from it.
    insert into notification_history as h (id, user_id, channel, notification_type, title, body,
                                           scheduled_time, delivered_time)
    select coalesce(i.queue_id, i.id), i.user_id, 'in_app', i.type, i.title, i.body, i.created_at, i.created_at
      from inbox i
     where i.id = record_notification_action.notification_id and i.user_id = caller
    on conflict (id) do update set user_id = h.user_id
    returning h.id into hid;
  end if;
  if hid is null then
    perform herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;

  update notification_history h
     set action = record_notification_action.action, actioned_time = at
   where h.id = hid and h.user_id = caller
  returning * into entry;
  if entry.id is null then
    perform herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;

  -- The queue row behind the entry, while the queue keeps it: its group and its payload.
  select * into queued from notification_queue q where q.id = hid and q.recipient_user_id = caller;
  grp := queued.notification_group;

  if record_notification_action.action = 'opened' then
    update inbox i set is_read = true, read_at = at
     where i.user_id = caller and not i.is_read
       and (i.id = hid or i.queue_id = hid or i.id = record_notification_action.notification_id
            or (grp is not null and exists (
                  select 1 from notification_queue q
                   where q.id = i.queue_id and q.recipient_user_id = caller and q.notification_group = grp)));
    get diagnostics marked = row_count;

  elsif record_notification_action.action = 'dose_marked_taken' then
    step := coalesce(queued.related_entity_id, entry.related_entity_id);
    dose_at := herald_try_timestamptz(queued.payload ->> 'dose_at');
    if dose_at is null and queued.id is null and entry.notification_type = 'reminder' then
      select entry.scheduled_time + make_interval(mins => p.dose_reminder_advance_minutes) into dose_at
        from user_profiles p where p.user_id = caller;
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
  end if;

  return jsonb_build_object('id', entry.id, 'notification_id', record_notification_action.notification_id,
                            'action', entry.action, 'actioned_time', herald_ms(entry.actioned_time),
                            'marked_read', marked > 0, 'dose_recorded', dose_done, 'log_recorded', log_done);
end
$$;

-- The helper is the owner's (sql/008_security.sql); the RPC keeps its grants (create or replace does).
revoke all on function herald_try_timestamptz(text) from public;
do $$
declare
  app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_try_timestamptz(text) from %I', app_role);
  end loop;
end
$$;

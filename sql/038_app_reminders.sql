-- Reminders as the app's own (the reminders design's NotificationScheduler): the app schedules,
-- reschedules, cancels and lists its reminders through RPCs, and a reminder may repeat weekly.
--
--     select schedule_reminder(reminder_type => 'daily', trigger => 'weekly', weekday => 2,
--                              local_time => '09:00', title_en => 'Log your week', title_ar => 'سجّل أسبوعك');
--     -- {"id":"…","reminder_type":"daily","trigger":{"type":"weekly","weekday":2,"local_time":"09:00",…},…}
--
-- ERRORS, as the other RPCs raise them (sql/013_app_contract.sql: SQLSTATE PTxyz, the code as the
-- message, the explanation as DETAIL, naming the argument at fault):
--     PT401  unauthorized      no caller
--     PT404  not_found         a reminder_id that is not one of the caller's reminders (another user's
--                              and an unknown one get the same answer: ids are not probed)
--     PT404  user_not_found    the caller has no user_profiles row (herald cannot schedule for them)
--     PT422  validation_error  a missing or bad argument

-- ---------------------------------------------------------------------------------------------------
-- The weekly trigger: `weekday` 1–7, 1 being Sunday (the design's NotificationTrigger.weekday, as Expo
-- numbers it), with `local_time`. The reminders phase sends it on the local dates that fall on that
-- weekday, at that wall-clock time, once each (`last_enqueued_for`, as a daily reminder).
alter table reminders add column if not exists weekday smallint;
alter table reminders drop constraint if exists reminders_schedule_check;
alter table reminders add constraint reminders_schedule_check check (schedule in ('once', 'daily', 'weekly'));
alter table reminders drop constraint if exists reminders_schedule_time_check;
alter table reminders add constraint reminders_schedule_time_check
  check ((schedule = 'daily' and (local_time is not null or reminder_type = 'daily'))
      or (schedule = 'weekly' and local_time is not null)
      or (schedule = 'once' and at is not null));
alter table reminders drop constraint if exists reminders_weekday_check;
alter table reminders add constraint reminders_weekday_check
  check ((schedule = 'weekly') = (weekday is not null) and (weekday is null or weekday between 1 and 7));

-- herald_raise (013, 036) learns not_found; the other codes keep theirs.
create or replace function herald_raise(code text, explanation text default null) returns void
language plpgsql
as $$
begin
  raise exception using
    errcode = case code when 'invalid_token' then 'PT400' when 'invalid_request' then 'PT400'
                        when 'unauthorized' then 'PT401' when 'forbidden' then 'PT403'
                        when 'user_not_found' then 'PT404' when 'not_found' then 'PT404'
                        when 'rate_limit_exceeded' then 'PT429'
                        when 'internal_error' then 'PT500' else 'PT422' end,
    message = code,
    detail = coalesce(explanation, code);
end
$$;

-- The withdraw trigger (014) also follows a new weekday, and lets a weekly reminder whose row was
-- withdrawn come due again today at its new time, as a daily one.
create or replace function herald_reminder_changed() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
declare n int;
begin
  if tg_op = 'DELETE' then
    perform herald_withdraw_reminder_rows(old.id, 'reminder deleted');
    return old;
  end if;
  if not new.enabled or new.cancelled_at is not null then
    if old.enabled and old.cancelled_at is null then
      perform herald_withdraw_reminder_rows(new.id, case when new.cancelled_at is not null
                                                         then 'reminder cancelled' else 'reminder disabled' end);
    end if;
    return new;
  end if;
  if new.at is distinct from old.at or new.ends_at is distinct from old.ends_at
     or new.local_time is distinct from old.local_time or new.schedule is distinct from old.schedule
     or new.weekday is distinct from old.weekday or new.reminder_type is distinct from old.reminder_type then
    n := herald_withdraw_reminder_rows(new.id, 'reminder rescheduled');
    if new.at is distinct from old.at or new.schedule is distinct from old.schedule then
      new.enqueued_at := null;
    end if;
    if new.ends_at is distinct from old.ends_at or new.at is distinct from old.at then
      new.end_enqueued_at := null;
    end if;
    if n > 0 and new.schedule in ('daily', 'weekly') then
      new.last_enqueued_for := null;
    end if;
  end if;
  return new;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Helpers (the owner's only).

-- An instant as the app sends it: Unix milliseconds (the push API contract's times) or ISO 8601 with
-- its offset ("2026-03-08T09:00:00Z", "…+01:00"); a time without an offset would be read in the
-- session's zone, so it is refused. Null for null; a validation_error naming `field` otherwise.
create or replace function herald_reminder_instant(field text, value text) returns timestamptz
language plpgsql stable
as $$
declare
  t timestamptz;
begin
  if value is null then
    return null;
  end if;
  if btrim(value) ~ '^[0-9]{1,15}$' then
    t := to_timestamp(btrim(value)::numeric / 1000);
  elsif btrim(value) ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$' then
    t := herald_try_timestamptz(btrim(value));
  end if;
  if t is null then
    perform herald_raise('validation_error',
      field || ' must be Unix milliseconds or an ISO 8601 instant with its offset (2026-03-08T09:00:00Z)');
  end if;
  if t > now() + interval '366 days' then
    perform herald_raise('validation_error', field || ' must be at most 366 days ahead');
  end if;
  return t;
end
$$;

-- A reminder's timing from the RPCs' arguments, checked: `schedule`, `local_time`, `weekday`, `at` and
-- `ends_at` of the row returned are set, the rest left null. `kind` is the reminder type (checked
-- already). When rescheduling, `current` is the reminder as it is: what is not given is kept where
-- the trigger still uses it (a weekly reminder's weekday when only its time moves, a washout's end,
-- a once reminder's `at` when only its end moves), and only a new `at` must not be in the past.
create or replace function herald_reminder_timing(
  kind text, trig text, wall text, day int, instant text, ending text, current reminders default null
) returns reminders
language plpgsql stable
as $$
declare
  r reminders;
  schedule text := coalesce(lower(btrim(trig)), current.schedule);
begin
  if schedule = 'date' then
    schedule := 'once';          -- the design's NotificationTrigger.type for an instant
  end if;
  if schedule is null or schedule not in ('once', 'daily', 'weekly') then
    perform herald_raise('validation_error', 'trigger must be once, daily or weekly');
  end if;
  if schedule <> 'once' and kind not in ('daily', 'dose') then
    perform herald_raise('validation_error', 'trigger must be once for a ' || kind || ' reminder (only daily and dose reminders repeat)');
  end if;
  if ending is not null and kind <> 'washout' then
    perform herald_raise('validation_error', 'ends_at is for washout reminders only');
  end if;
  r.schedule := schedule;
  if schedule = 'once' then
    if wall is not null then
      perform herald_raise('validation_error', 'local_time is for daily and weekly triggers; a once trigger takes at');
    end if;
    if day is not null then
      perform herald_raise('validation_error', 'weekday is for weekly triggers only');
    end if;
    r.at := coalesce(herald_reminder_instant('at', instant), case when current.schedule = 'once' then current.at end);
    if r.at is null then
      perform herald_raise('validation_error', 'at is required for a once trigger');
    end if;
    if instant is not null and r.at < now() - interval '5 minutes' then
      perform herald_raise('validation_error', 'at must not be in the past');
    end if;
  else
    if instant is not null then
      perform herald_raise('validation_error', 'at is for once triggers; a ' || schedule || ' trigger takes local_time');
    end if;
    if wall is not null and btrim(wall) !~ '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$' then
      perform herald_raise('validation_error', 'local_time must be HH:mm, from 00:00 to 23:59');
    end if;
    r.local_time := coalesce(btrim(wall)::time, current.local_time);
    if r.local_time is null then
      perform herald_raise('validation_error', 'local_time is required for a ' || schedule || ' trigger');
    end if;
    if day is not null and schedule = 'daily' then
      perform herald_raise('validation_error', 'weekday is for weekly triggers only');
    end if;
    if day is not null and day not between 1 and 7 then
      perform herald_raise('validation_error', 'weekday must be 1 (Sunday) to 7 (Saturday)');
    end if;
    r.weekday := case when schedule = 'weekly' then coalesce(day, current.weekday) end;
    if schedule = 'weekly' and r.weekday is null then
      perform herald_raise('validation_error', 'weekday is required for a weekly trigger: 1 (Sunday) to 7 (Saturday)');
    end if;
  end if;
  r.ends_at := coalesce(herald_reminder_instant('ends_at', ending), case when kind = 'washout' then current.ends_at end);
  if r.ends_at is not null and r.ends_at <= r.at then
    perform herald_raise('validation_error', 'ends_at must be after at');
  end if;
  return r;
end
$$;

-- Whether a reminder still has something to send: it repeats, or its instant (or a washout's end) was
-- not enqueued yet, or a row of it is still waiting. Cancelled ones have nothing.
create or replace function herald_reminder_pending(r reminders) returns boolean
language sql stable
as $$
  select r.cancelled_at is null
     and (r.schedule <> 'once' or r.enqueued_at is null
          or (r.reminder_type = 'washout' and r.ends_at is not null and r.end_enqueued_at is null)
          or exists (select 1 from notification_queue q
                      where q.reminder_id = r.id and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))))
$$;

-- A reminder as the RPCs answer it (the design's ScheduledNotification): times in Unix milliseconds;
-- `scheduled_time` is when a once reminder's notification goes (a dose's `advance` minutes before
-- it), null for a repeating one, whose `trigger` says when.
create or replace function herald_reminder_json(r reminders, advance int) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'id', r.id, 'user_id', r.user_id, 'reminder_type', r.reminder_type,
    'trigger', jsonb_build_object(
      'type', r.schedule, 'repeats', r.schedule <> 'once', 'at', herald_ms(r.at),
      'local_time', to_char(r.local_time, 'HH24:MI'), 'hour', extract(hour from r.local_time)::int,
      'minute', extract(minute from r.local_time)::int, 'weekday', r.weekday),
    'scheduled_time', case when r.schedule = 'once' then herald_ms(
      r.at - case when r.reminder_type = 'dose' then make_interval(mins => coalesce(advance, 30)) else interval '0' end) end,
    'ends_at', herald_ms(r.ends_at),
    'title_en', r.title, 'body_en', r.body, 'title_ar', r.title_ar, 'body_ar', r.body_ar,
    'related_entity_type', r.related_entity_type, 'related_entity_id', r.related_entity_id,
    'status', case when r.cancelled_at is not null then 'cancelled' when not r.enabled then 'disabled'
                   when herald_reminder_pending(r) then 'scheduled' else 'done' end,
    'cancelled_at', herald_ms(r.cancelled_at),
    'created_at', herald_ms(r.created_at), 'updated_at', herald_ms(r.updated_at))
$$;

-- The caller, who must be signed in; with `profile`, also known to herald (a user_profiles row).
create or replace function herald_reminder_caller(profile boolean default false) returns uuid
language plpgsql stable
as $$
declare
  caller uuid := auth.uid();
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if profile and not exists (select 1 from user_profiles p where p.user_id = caller) then
    perform herald_raise('user_not_found', 'herald has no profile for the caller (no user_profiles row)');
  end if;
  return caller;
end
$$;

-- A reminder type argument, checked against the vocabulary (sql/014).
create or replace function herald_reminder_type(kind text, required boolean) returns text
language plpgsql immutable
as $$
begin
  if kind is null and not required then
    return null;
  end if;
  if kind is null or kind not in ('daily', 'dose', 'washout', 'test_start') then
    perform herald_raise('validation_error', 'reminder_type must be one of daily, dose, washout, test_start');
  end if;
  return kind;
end
$$;

-- The texts (the reminder's own title and body per language; without them each type has its own):
-- each, when given, 1–256 characters for a title and 1–2,048 for a body, as send_notification's.
create or replace function herald_reminder_texts(title_en text, body_en text, title_ar text, body_ar text) returns void
language plpgsql immutable
as $$
declare
  fields text[] := array['title_en', 'body_en', 'title_ar', 'body_ar'];
  texts text[] := array[title_en, body_en, title_ar, body_ar];
  most int;
begin
  for i in 1 .. 4 loop
    most := case when fields[i] like 'title%' then 256 else 2048 end;
    if texts[i] is not null and (btrim(texts[i]) = '' or length(texts[i]) > most) then
      perform herald_raise('validation_error', format('%s must be 1 to %s characters', fields[i], most));
    end if;
  end loop;
end
$$;

-- What the reminder is about (a test step, a washout): both or neither.
create or replace function herald_reminder_entity(kind text, id text) returns void
language plpgsql immutable
as $$
begin
  if kind is null and id is not null then
    perform herald_raise('validation_error', 'related_entity_type is required with related_entity_id');
  end if;
  if kind is not null and id is null then
    perform herald_raise('validation_error', 'related_entity_id is required with related_entity_type');
  end if;
  if kind is not null and kind !~ '^[a-z][a-z0-9_]{0,63}$' then
    perform herald_raise('validation_error',
      'related_entity_type must be a lowercase name such as test_step or washout (a letter, then letters, digits and _)');
  end if;
  if id is not null and (btrim(id) = '' or length(id) > 256) then
    perform herald_raise('validation_error', 'related_entity_id must be 1 to 256 characters');
  end if;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- The RPCs.

-- The design's schedule(ScheduleNotificationInput): a new reminder of the caller's. At most 200 of a
-- caller's reminders may have something left to send (each pass reads every repeating one).
create or replace function schedule_reminder(
  reminder_type text default null, trigger text default null, local_time text default null,
  weekday int default null, at text default null,
  title_en text default null, body_en text default null, title_ar text default null, body_ar text default null,
  related_entity_type text default null, related_entity_id text default null, ends_at text default null
) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := herald_reminder_caller(true);
  kind text := herald_reminder_type(schedule_reminder.reminder_type, true);
  timing reminders;
  r reminders;
  advance int;
begin
  timing := herald_reminder_timing(kind, schedule_reminder.trigger, schedule_reminder.local_time,
                                   schedule_reminder.weekday, schedule_reminder.at, schedule_reminder.ends_at);
  perform herald_reminder_texts(schedule_reminder.title_en, schedule_reminder.body_en,
                                schedule_reminder.title_ar, schedule_reminder.body_ar);
  perform herald_reminder_entity(schedule_reminder.related_entity_type, schedule_reminder.related_entity_id);

  -- One caller's schedules take turns, so the limit holds against concurrent calls.
  perform pg_advisory_xact_lock(1751478885, hashtext(caller::text));
  if (select count(*) from reminders x where x.user_id = caller and herald_reminder_pending(x)) >= 200 then
    perform herald_raise('validation_error', 'at most 200 reminders may be scheduled at once: cancel some first');
  end if;

  insert into reminders as x (user_id, schedule, reminder_type, title, body, title_ar, body_ar, local_time, weekday,
                              at, ends_at, related_entity_type, related_entity_id)
  values (caller, timing.schedule, kind, schedule_reminder.title_en, schedule_reminder.body_en,
          schedule_reminder.title_ar, schedule_reminder.body_ar, timing.local_time, timing.weekday, timing.at,
          timing.ends_at, schedule_reminder.related_entity_type, schedule_reminder.related_entity_id)
  returning * into r;
  select p.dose_reminder_advance_minutes into advance from user_profiles p where p.user_id = caller;
  return herald_reminder_json(r, advance);
end
$$;

-- The design's reschedule(id, newTime): new timing for one of the caller's reminders (not cancelled).
-- What is not given is kept where the trigger still uses it (herald_reminder_timing). Its rows not yet
-- sent are withdrawn by the reminders' trigger, and it comes due at its new time.
create or replace function reschedule_reminder(
  reminder_id uuid default null, trigger text default null, local_time text default null,
  weekday int default null, at text default null, ends_at text default null
) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := herald_reminder_caller();
  r reminders;
  timing reminders;
  advance int;
begin
  if reschedule_reminder.reminder_id is null then
    perform herald_raise('validation_error', 'reminder_id is required');
  end if;
  select * into r from reminders x
   where x.id = reschedule_reminder.reminder_id and x.user_id = caller and x.cancelled_at is null
  for update;
  if r.id is null then
    perform herald_raise('not_found', 'reminder_id does not name one of your reminders');
  end if;
  if num_nonnulls(reschedule_reminder.trigger, reschedule_reminder.local_time, reschedule_reminder.weekday,
                  reschedule_reminder.at, reschedule_reminder.ends_at) = 0 then
    perform herald_raise('validation_error', 'nothing to reschedule: give trigger, local_time, weekday, at or ends_at');
  end if;
  timing := herald_reminder_timing(r.reminder_type, reschedule_reminder.trigger, reschedule_reminder.local_time,
                                   reschedule_reminder.weekday, reschedule_reminder.at, reschedule_reminder.ends_at, r);
  update reminders x
     set schedule = timing.schedule, local_time = timing.local_time, weekday = timing.weekday, at = timing.at,
         ends_at = timing.ends_at, updated_at = now()
   where x.id = r.id
  returning * into r;
  select p.dose_reminder_advance_minutes into advance from user_profiles p where p.user_id = caller;
  return herald_reminder_json(r, advance);
end
$$;

-- The design's cancel(id): the reminder sends nothing more; its rows not yet sent are withdrawn (the
-- trigger). Cancelling a cancelled reminder answers as the first time.
create or replace function cancel_reminder(reminder_id uuid default null) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := herald_reminder_caller();
  r reminders;
begin
  if cancel_reminder.reminder_id is null then
    perform herald_raise('validation_error', 'reminder_id is required');
  end if;
  update reminders x set cancelled_at = now(), updated_at = now()
   where x.id = cancel_reminder.reminder_id and x.user_id = caller and x.cancelled_at is null
  returning * into r;
  if r.id is null then
    select * into r from reminders x where x.id = cancel_reminder.reminder_id and x.user_id = caller;
  end if;
  if r.id is null then
    perform herald_raise('not_found', 'reminder_id does not name one of your reminders');
  end if;
  return jsonb_build_object('id', r.id, 'status', 'cancelled', 'cancelled_at', herald_ms(r.cancelled_at));
end
$$;

-- The design's cancelNotificationsByType(type): every reminder of the type with something left to send.
create or replace function cancel_reminders_by_type(reminder_type text default null) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := herald_reminder_caller();
  kind text := herald_reminder_type(cancel_reminders_by_type.reminder_type, true);
  stamp timestamptz := now();
  ids uuid[];
begin
  with cancelled as (
    update reminders x set cancelled_at = stamp, updated_at = stamp
     where x.user_id = caller and x.reminder_type = kind and herald_reminder_pending(x)
    returning x.id
  )
  select coalesce(array_agg(id order by id), '{}') into ids from cancelled;
  return jsonb_build_object('reminder_type', kind, 'cancelled_count', cardinality(ids),
                            'reminder_ids', to_jsonb(ids), 'cancelled_at', herald_ms(stamp));
end
$$;

-- The design's getScheduledNotifications() and getScheduledNotificationsByType(type): the caller's
-- enabled reminders with something left to send, oldest first.
create or replace function get_scheduled_reminders(reminder_type text default null) returns jsonb
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := herald_reminder_caller();
  kind text := herald_reminder_type(get_scheduled_reminders.reminder_type, false);
  advance int;
begin
  select p.dose_reminder_advance_minutes into advance from user_profiles p where p.user_id = caller;
  return coalesce((
    select jsonb_agg(herald_reminder_json(x, advance) order by x.created_at, x.id)
      from reminders x
     where x.user_id = caller and x.enabled and herald_reminder_pending(x) and (kind is null or x.reminder_type = kind)
  ), '[]'::jsonb);
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Privileges, as 008 and 013 set them: the helpers for the owner only; the RPCs for `authenticated`
-- (where it exists), not anon or PUBLIC, which Supabase's default privileges granted them.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_raise', 'herald_reminder_changed', 'herald_reminder_instant', 'herald_reminder_timing',
                         'herald_reminder_pending', 'herald_reminder_json', 'herald_reminder_caller',
                         'herald_reminder_type', 'herald_reminder_texts', 'herald_reminder_entity')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;

  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('schedule_reminder', 'reschedule_reminder', 'cancel_reminder', 'cancel_reminders_by_type',
                         'get_scheduled_reminders')
  loop
    execute format('revoke all on function %s from public', fn);
    if exists (select 1 from pg_roles where rolname = 'anon') then
      execute format('revoke all on function %s from anon', fn);
    end if;
    if exists (select 1 from pg_roles where rolname = 'authenticated') then
      execute format('grant execute on function %s to authenticated', fn);
    end if;
  end loop;
end
$$;

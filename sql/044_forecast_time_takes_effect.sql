-- A forecast time that takes effect at once. The daily flare forecast's push is enqueued up to the lead
-- (an hour by default) before the person's `forecast_notification_time`; a change of that time, or of
-- their time zone, made after it was enqueued withdraws it, and the next `forecasts` phase enqueues the
-- day's push again for the new time (at once when the new time has already passed today).
--
-- A withdrawn push becomes skipped `cancelled`, with a `cancelled` event, and gives up its dedupe key
-- (`forecast:<user>:<date>` becomes `forecast:<user>:<date>:withdrawn:<queue id>`), so the phase's
-- once-per-date check lets the new push in. A push already sent is never withdrawn, so a day never gets
-- two; a push a pass holds is being sent and is left alone (the operator verbs' fence). The rule of
-- withdrawing is one function (`herald_withdraw_rows`), which the reminders' and the prompt settings'
-- withdrawals now call too.

-- Withdrawing queue rows, the one rule the reminders, the prompt settings and the forecast time share:
-- of `ids`, the rows not yet sent (pending, or failed with a retry to come) and not held by a pass under
-- a live lease (being sent: the operator verbs' fence) become skipped `cancelled`, an expired lease
-- ending with them, each with a `cancelled` event {"by": withdrawn_by, "reason": why}. With `free_key`,
-- a row gives up its dedupe key (`<key>:withdrawn:<queue id>`), so the notification can be enqueued
-- again. Returns how many it withdrew.
create or replace function herald_withdraw_rows(ids uuid[], withdrawn_by text, why text, free_key boolean default false)
returns int
language plpgsql
as $$
declare n int;
begin
  with target as (
    select q.id from notification_queue q
     where q.id = any(ids)
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
       and not coalesce(q.locked_until >= now(), false)
     for update
  ), u as (
    update notification_queue q
       set status = 'skipped', skip_reason = 'cancelled', permanent = false, locked_until = null,
           locked_by = null, updated_at = now(),
           dedupe_key = case when free_key then q.dedupe_key || ':withdrawn:' || q.id::text else q.dedupe_key end
      from target where q.id = target.id
    returning q.id
  ), e as (
    insert into notification_events (queue_id, event, reason, details)
    select id, 'cancelled', 'cancelled', jsonb_build_object('by', withdrawn_by, 'reason', why) from u
  )
  select count(*) into n from u;
  return n;
end
$$;

-- A reminder's rows (an edit, a cancel, a delete of the reminder).
create or replace function herald_withdraw_reminder_rows(reminder uuid, why text) returns int
language sql security definer set search_path = public, pg_temp
as $$
  select herald_withdraw_rows(array(select q.id from notification_queue q where q.reminder_id = reminder),
                              'reminder', why)
$$;

-- A person's prompts of their two latest planned days (a waking window that crosses midnight leaves the
-- previous day's last prompts waiting), found by the dedupe keys every plan of those days may have used.
create or replace function herald_withdraw_prompt_rows(person uuid, why text) returns int
language sql security definer set search_path = public, pg_temp
as $$
  select herald_withdraw_rows(array(
           select q.id from notification_queue q
            where q.recipient_user_id = person
              and q.dedupe_key in (select herald_prompt_keys(person, d.local_date, d.revision)
                                     from (select ps.local_date, ps.revision from prompt_schedules ps
                                            where ps.user_id = person order by ps.local_date desc limit 2) d)),
         'prompt_settings', why)
$$;

-- A person's forecast pushes waiting to be sent, whatever their date (there are at most today's and
-- tomorrow's), found through the index of waiting rows by recipient (a push waiting for a retry after a
-- failure keeps its retry); each gives up its dedupe key so the `forecasts` phase enqueues the day's
-- push again for the new time.
create or replace function herald_withdraw_forecast_rows(person uuid, why text) returns int
language sql security definer set search_path = public, pg_temp
as $$
  select herald_withdraw_rows(array(
           select q.id from notification_queue q
            where q.recipient_user_id = person and q.status in ('pending', 'processing')
              and q.kind = 'daily_forecast' and q.dedupe_key like 'forecast:%'
              and q.dedupe_key not like '%:withdrawn:%'),
         'user_profiles', why, free_key => true)
$$;

-- Whoever writes user_profiles (the app, its backend, psql): a new forecast time or time zone withdraws
-- the pushes enqueued under the old one. Writing the same values again (an app's sync) changes nothing.
create or replace function herald_forecast_time_changed() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
  perform herald_withdraw_forecast_rows(new.user_id, case
    when new.timezone is distinct from old.timezone then 'time zone changed'
    else 'forecast time changed' end);
  return new;
end
$$;

drop trigger if exists user_profiles_forecast_time on user_profiles;
create trigger user_profiles_forecast_time after update of forecast_notification_time, timezone on user_profiles
  for each row
  when ((new.forecast_notification_time, new.timezone) is distinct from (old.forecast_notification_time, old.timezone))
  execute function herald_forecast_time_changed();

-- Helpers and trigger functions: the owner's only (sql/008_security.sql).
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_withdraw_rows', 'herald_withdraw_reminder_rows', 'herald_withdraw_prompt_rows',
                         'herald_withdraw_forecast_rows', 'herald_forecast_time_changed')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end
$$;

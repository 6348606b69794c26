-- A follower (`herald run --follow`) runs the time-driven generators (reminders, prompts, forecasts)
-- at their own instants, and again as soon as an app changes what they read: a reminder scheduled,
-- rescheduled, cancelled or deleted; prompt settings; the profile columns the generators time by.
-- Each such change tells it twice, both without personal data:
--
-- - `pg_notify('herald_generate', <generator>)`, delivered at commit, once per transaction and
--   generator (PostgreSQL folds identical notifications): what a listening follower wakes on. The
--   payload is the generator's name, `reminders`, `prompts` or `forecasts`, nothing else.
-- - a row in `herald_generator_changes` (the generator's name and the writing transaction's id), once
--   per transaction and generator: what a polling follower looks at where no notification can reach it
--   (a transaction pooler). It asks for the rows of the transactions that committed since its last
--   look (`txid_visible_in_snapshot` against the snapshot it kept), so a transaction that commits
--   late is not missed. Passes delete the rows older than an hour (housekeeping).
--
-- Only real changes tell: an update that writes the same values, or that touches only what the
-- generators write themselves (a reminder's marks, a profile's adherence score), tells nothing.
create table if not exists herald_generator_changes (
  generator text not null check (generator in ('reminders', 'prompts', 'forecasts')),
  xid bigint not null default txid_current(),
  changed_at timestamptz not null default now()
);
create index if not exists herald_generator_changes_xid on herald_generator_changes (xid);
create index if not exists herald_generator_changes_changed_at on herald_generator_changes (changed_at);
select public.herald_restrict_table('public.herald_generator_changes');

-- The trigger function: its arguments name the generators the change concerns.
create or replace function public.herald_generator_changed() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp
as $$
declare
  named text;
  me bigint := txid_current();
begin
  foreach named in array tg_argv loop
    perform pg_notify('herald_generate', named);
    if not exists (select 1 from public.herald_generator_changes c where c.xid = me and c.generator = named) then
      insert into public.herald_generator_changes (generator, xid) values (named, me);
    end if;
  end loop;
  return null;
end
$$;

-- Reminders: one scheduled (enabled), its timing or state changed, one that was active deleted.
drop trigger if exists herald_generate_reminder_added on reminders;
create trigger herald_generate_reminder_added after insert on reminders
  for each row when (new.enabled and new.cancelled_at is null)
  execute function public.herald_generator_changed('reminders');
drop trigger if exists herald_generate_reminder_changed on reminders;
create trigger herald_generate_reminder_changed after update on reminders
  for each row
  when ((new.enabled, new.cancelled_at, new.schedule, new.reminder_type, new.at, new.ends_at, new.local_time,
         new.weekday, new.user_id)
        is distinct from (old.enabled, old.cancelled_at, old.schedule, old.reminder_type, old.at, old.ends_at,
                          old.local_time, old.weekday, old.user_id))
  execute function public.herald_generator_changed('reminders');
drop trigger if exists herald_generate_reminder_deleted on reminders;
create trigger herald_generate_reminder_deleted after delete on reminders
  for each row when (old.enabled and old.cancelled_at is null)
  execute function public.herald_generator_changed('reminders');

-- Prompt settings: added, changed (what a day is planned with), removed.
drop trigger if exists herald_generate_prompt_settings_added on prompt_settings;
create trigger herald_generate_prompt_settings_added after insert or delete on prompt_settings
  for each row execute function public.herald_generator_changed('prompts');
drop trigger if exists herald_generate_prompt_settings_changed on prompt_settings;
create trigger herald_generate_prompt_settings_changed after update on prompt_settings
  for each row
  when ((new.enabled, new.prompts_per_day, new.waking_hour_start, new.waking_hour_end, new.user_id)
        is distinct from (old.enabled, old.prompts_per_day, old.waking_hour_start, old.waking_hour_end, old.user_id))
  execute function public.herald_generator_changed('prompts');

-- Profiles: the columns each generator times by. A new profile may be due a forecast.
drop trigger if exists herald_generate_profile_added on user_profiles;
create trigger herald_generate_profile_added after insert on user_profiles
  for each row execute function public.herald_generator_changed('forecasts');
drop trigger if exists herald_generate_profile_zone on user_profiles;
create trigger herald_generate_profile_zone after update of timezone on user_profiles
  for each row when (new.timezone is distinct from old.timezone)
  execute function public.herald_generator_changed('reminders', 'prompts', 'forecasts');
drop trigger if exists herald_generate_profile_reminder_times on user_profiles;
create trigger herald_generate_profile_reminder_times
  after update of daily_reminder_time, dose_reminder_advance_minutes on user_profiles
  for each row
  when ((new.daily_reminder_time, new.dose_reminder_advance_minutes)
        is distinct from (old.daily_reminder_time, old.dose_reminder_advance_minutes))
  execute function public.herald_generator_changed('reminders');
drop trigger if exists herald_generate_profile_forecast on user_profiles;
create trigger herald_generate_profile_forecast
  after update of forecast_notification_time, latitude, longitude, notify_push on user_profiles
  for each row
  when ((new.forecast_notification_time, new.latitude, new.longitude, new.notify_push)
        is distinct from (old.forecast_notification_time, old.latitude, old.longitude, old.notify_push))
  execute function public.herald_generator_changed('forecasts');

-- The trigger function is the owner's only (sql/008_security.sql).
revoke all on function public.herald_generator_changed() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function public.herald_generator_changed() from %I', app_role);
  end loop;
end $$;

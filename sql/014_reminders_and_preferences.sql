-- The worker's half of reminders: every reminder type, per-type preferences, quiet hours with a
-- critical override, adaptive frequency, and the rate limits counted per notification.

-- ---------------------------------------------------------------------------------------------------
-- Reminders: the type is a closed vocabulary (seed 001 §NotificationService).
--   daily       a daily reminder (scheduleDailyReminder): at `local_time` every local day, or once at `at`
--   dose        a dose reminder tied to a test step (scheduleDoseReminder): `at` (or `local_time` every
--               day) is the DOSE time; the notification goes `dose_reminder_advance_minutes` (the
--               recipient's preference, default 30) before it
--   washout     a washout period (scheduleWashoutNotifications): one notification at its start (`at`)
--               and one at its end (`ends_at`, optional)
--   test_start  a test step starting (scheduleTestStartReminder): at `at`
-- Free text written before this migration is mapped onto the vocabulary; anything unknown was a plain
-- reminder and becomes `daily`.
alter table reminders drop constraint if exists reminders_reminder_type_check;
update reminders set reminder_type = case
    when schedule = 'daily' and reminder_type not in ('daily', 'dose') and reminder_type not like 'dose%' then 'daily'
    when reminder_type in ('daily', 'daily_log', 'daily_reminder') then 'daily'
    when reminder_type like 'dose%' then 'dose'
    when reminder_type like 'washout%' then 'washout'
    when reminder_type like 'test_start%' or reminder_type like 'test-start%' then 'test_start'
    else 'daily' end
 where reminder_type is distinct from 'daily' and reminder_type is distinct from 'dose'
   and reminder_type is distinct from 'washout' and reminder_type is distinct from 'test_start';
alter table reminders alter column reminder_type set default 'daily';
alter table reminders add constraint reminders_reminder_type_check
  check (reminder_type in ('daily', 'dose', 'washout', 'test_start'));
-- Only daily and dose reminders repeat every day; washouts and test starts are instants.
alter table reminders drop constraint if exists reminders_repeating_types_check;
alter table reminders add constraint reminders_repeating_types_check
  check (schedule = 'once' or reminder_type in ('daily', 'dose'));

-- A daily reminder may leave its time to the profile's `daily_reminder_time` (seed 001 dailyReminderTime).
alter table reminders drop constraint if exists reminders_check;
alter table reminders drop constraint if exists reminders_schedule_time_check;
alter table reminders add constraint reminders_schedule_time_check
  check ((schedule = 'daily' and (local_time is not null or reminder_type = 'daily'))
      or (schedule = 'once' and at is not null));

alter table reminders add column if not exists ends_at              timestamptz;   -- washout: its end
alter table reminders add column if not exists end_enqueued_at      timestamptz;   -- washout: end notified
alter table reminders add column if not exists related_entity_type  text;          -- 'test_step', 'washout', …
alter table reminders add column if not exists related_entity_id    text;
-- Cancelling (seed 001 cancelNotification): withdraws the reminder's rows not yet sent, like
-- `enabled = false` or deleting the row.
alter table reminders add column if not exists cancelled_at         timestamptz;
alter table reminders drop constraint if exists reminders_washout_end_check;
alter table reminders add constraint reminders_washout_end_check
  check (ends_at is null or (reminder_type = 'washout' and at is not null and ends_at > at));

-- ---------------------------------------------------------------------------------------------------
-- The queue: what a row is about, which logical notification it belongs to, which reminder made it.
--   related_entity_type / related_entity_id  seed 001's NotificationHistoryEntry (also added by the
--                        app-side migration with the same `if not exists`)
--   notification_group   one logical notification fanned out to several channels shares a group: the
--                        daily cap counts it once. Null: the row is its own group.
--   reminder_id          the reminder that made the row (not a foreign key: deleting a reminder
--                        withdraws its rows through the trigger below, and history keeps the id)
alter table notification_queue add column if not exists related_entity_type text;
alter table notification_queue add column if not exists related_entity_id   text;
alter table notification_queue add column if not exists notification_group  text;
alter table notification_queue add column if not exists reminder_id         uuid;
create index if not exists notification_queue_reminder_waiting
  on notification_queue (reminder_id) where reminder_id is not null and status in ('pending', 'failed');

-- ---------------------------------------------------------------------------------------------------
-- Preferences (seed 001 §NotificationPreferencesState, UserProfile.notificationPreferences), beside
-- seed 000's channel toggles and quiet-hours level.
alter table user_profiles add column if not exists daily_reminder_enabled          boolean not null default true;
alter table user_profiles add column if not exists dose_reminder_enabled           boolean not null default true;
alter table user_profiles add column if not exists washout_notifications_enabled   boolean not null default true;
alter table user_profiles add column if not exists test_start_reminder_enabled     boolean not null default true;
-- Seed 004 lets users opt out of forecasts; seed 002's prompts have their own switch too.
alter table user_profiles add column if not exists forecast_notifications_enabled  boolean not null default true;
alter table user_profiles add column if not exists prompt_notifications_enabled    boolean not null default true;
-- A daily reminder without its own local_time goes at this time.
alter table user_profiles add column if not exists daily_reminder_time             time;
alter table user_profiles add column if not exists dose_reminder_advance_minutes   int not null default 30;
alter table user_profiles drop constraint if exists user_profiles_dose_reminder_advance_minutes_check;
alter table user_profiles add constraint user_profiles_dose_reminder_advance_minutes_check
  check (dose_reminder_advance_minutes between 0 and 720);
-- Seed 001 QuietHoursConfig.allowCritical: a dose reminder whose dose is within the hour goes through
-- quiet hours, whatever the level.
alter table user_profiles add column if not exists quiet_hours_allow_critical      boolean not null default true;
-- Seed 001 adaptive behaviour: the reminders phase writes current_frequency and the score it came from.
alter table user_profiles add column if not exists adaptive_frequency_enabled      boolean not null default false;
alter table user_profiles add column if not exists current_frequency               text not null default 'full';
alter table user_profiles drop constraint if exists user_profiles_current_frequency_check;
alter table user_profiles add constraint user_profiles_current_frequency_check
  check (current_frequency in ('full', 'reduced', 'minimal'));
alter table user_profiles add column if not exists adherence_score                 jsonb;
alter table user_profiles add column if not exists adherence_evaluated_at          timestamptz;

-- ---------------------------------------------------------------------------------------------------
-- What the app writes, and the adherence analyzer reads.
--   daily_logs   one row per local date the person logged (symptoms, diary): log_date is their local date
--   dose_events  one row per dose of a test step: when it was due and when the person took it (null: not
--                taken, or not yet)
create table if not exists daily_logs (
  user_id    uuid not null,
  log_date   date not null,
  logged_at  timestamptz not null default now(),
  primary key (user_id, log_date)
);

create table if not exists dose_events (
  id                 uuid primary key default gen_random_uuid(),
  user_id            uuid not null,
  related_entity_id  text,          -- the test step
  scheduled_at       timestamptz not null,
  taken_at           timestamptz,
  created_at         timestamptz not null default now(),
  unique (user_id, related_entity_id, scheduled_at)
);
create index if not exists dose_events_user_scheduled on dose_events (user_id, scheduled_at);

select herald_restrict_table('daily_logs');
select herald_restrict_table('dose_events');

-- The app's users write and read their own logs and doses (directly, or through PostgREST).
drop policy if exists herald_own_daily_logs_select on daily_logs;
create policy herald_own_daily_logs_select on daily_logs for select using (user_id = (select auth.uid()));
drop policy if exists herald_own_daily_logs_insert on daily_logs;
create policy herald_own_daily_logs_insert on daily_logs for insert with check (user_id = (select auth.uid()));
drop policy if exists herald_own_dose_events_select on dose_events;
create policy herald_own_dose_events_select on dose_events for select using (user_id = (select auth.uid()));
drop policy if exists herald_own_dose_events_insert on dose_events;
create policy herald_own_dose_events_insert on dose_events for insert with check (user_id = (select auth.uid()));

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    return;
  end if;
  grant select, insert on daily_logs, dose_events to authenticated;
  -- The new preferences are the person's to change; current_frequency and the score are herald's.
  grant update (daily_reminder_enabled, dose_reminder_enabled, washout_notifications_enabled,
                test_start_reminder_enabled, forecast_notifications_enabled, prompt_notifications_enabled,
                daily_reminder_time, dose_reminder_advance_minutes, quiet_hours_allow_critical,
                adaptive_frequency_enabled)
    on user_profiles to authenticated;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Cancelling, disabling, deleting or rescheduling a reminder withdraws its rows not yet sent: pending
-- rows and failed rows still to be retried become skipped `cancelled`, with a `cancelled` event. A row a
-- pass holds under a live lease is being sent right now and is left alone (the operator verbs' fence).
-- A trigger, not the reminders phase, so the withdrawal is immediate whoever writes the reminder and
-- whichever phases the next pass runs. A rescheduled one-off reminder (new `at` / `ends_at`) is
-- enqueued again at its new time; a daily one whose row of today was withdrawn may be enqueued again
-- today at its new time.
create or replace function herald_withdraw_reminder_rows(reminder uuid, why text) returns int
language plpgsql security definer set search_path = public, pg_temp
as $$
declare n int;
begin
  with target as (
    select q.id from notification_queue q
     where q.reminder_id = reminder
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
       and not (q.status = 'processing' and q.locked_until >= now())
     for update
  ), u as (
    update notification_queue q
       set status = 'skipped', skip_reason = 'cancelled', permanent = false, updated_at = now()
      from target where q.id = target.id
    returning q.id
  ), e as (
    insert into notification_events (queue_id, event, reason, details)
    select id, 'cancelled', 'cancelled', jsonb_build_object('by', 'reminder', 'reason', why) from u
  )
  select count(*) into n from u;
  return n;
end
$$;

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
     or new.reminder_type is distinct from old.reminder_type then
    n := herald_withdraw_reminder_rows(new.id, 'reminder rescheduled');
    if new.at is distinct from old.at or new.schedule is distinct from old.schedule then
      new.enqueued_at := null;
    end if;
    if new.ends_at is distinct from old.ends_at or new.at is distinct from old.at then
      new.end_enqueued_at := null;
    end if;
    if n > 0 and new.schedule = 'daily' then
      new.last_enqueued_for := null;
    end if;
  end if;
  return new;
end
$$;

drop trigger if exists reminders_withdraw on reminders;
create trigger reminders_withdraw before update or delete on reminders
  for each row execute function herald_reminder_changed();

revoke all on function herald_withdraw_reminder_rows(uuid, text) from public;
revoke all on function herald_reminder_changed() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_withdraw_reminder_rows(uuid, text) from %I', app_role);
    execute format('revoke all on function herald_reminder_changed() from %I', app_role);
  end loop;
end
$$;

-- Reminders may repeat weekly (the reminders design's NotificationTrigger `weekly`, with its weekday).
--
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

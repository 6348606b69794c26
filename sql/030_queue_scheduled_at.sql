-- A row enqueued ahead is not late when it comes due. `--max-age` measures a row's age from its
-- `scheduled_at`, which defaults to the insert's time; a backend that schedules with `run_after` alone
-- (DESIGN §2: "not before") — a reminder two days ahead, seed 003's "expiring in 30 days" — left
-- `scheduled_at` at the insert, so the row was skipped as `expired` the moment it came due. A row's
-- scheduled time is now never before its first `run_after`. The trigger fires only when `run_after`
-- is later (its WHEN clause costs no function call), so herald's own inserts, which set both, pay nothing.
create or replace function herald_queue_scheduled_at() returns trigger
language plpgsql
as $$
begin
  new.scheduled_at := new.run_after;
  return new;
end
$$;

drop trigger if exists herald_queue_scheduled_at on notification_queue;
create trigger herald_queue_scheduled_at before insert on notification_queue
  for each row when (new.run_after > new.scheduled_at) execute function herald_queue_scheduled_at();

-- Rows already waiting that were enqueued that way (never tried yet, so `run_after` is still the
-- backend's own).
update notification_queue set scheduled_at = run_after
 where status = 'pending' and attempts = 0 and run_after > scheduled_at;

revoke all on function herald_queue_scheduled_at() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_queue_scheduled_at() from %I', app_role);
  end loop;
end $$;

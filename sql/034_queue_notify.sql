-- A follower (`herald run --follow`) waits for work with LISTEN herald_queue instead of a cron interval.
-- It is told whenever a row may have become waiting, and asks the queue itself what is due and when
-- (one indexed query for the next due time), so the notification carries no payload.
--
-- Every INSERT tells it, whatever the rows' due time: a row due later than the follower's last look
-- must move its next wake-up forward, and its transaction may commit after that look. One notify per
-- statement (a statement-level trigger, no transition table: nothing is paid per row), and PostgreSQL
-- folds a transaction's identical notifications into one, delivered at commit.
--
-- An UPDATE tells it only when a row becomes waiting or its due time moves: an operator's retry,
-- reschedule or unlock, lease recovery, a pass's deferrals, releases and retries. The WHEN clause is
-- evaluated without a function call, so the claims and the records of sends (status `processing`,
-- `sent`, `skipped`, a permanent failure) pay nothing. Lifting a pause (`herald resume`) tells it too.
create or replace function herald_queue_notify() returns trigger
language plpgsql
as $$
begin
  perform pg_notify('herald_queue', '');
  return null;
end
$$;

drop trigger if exists herald_queue_inserted on notification_queue;
create trigger herald_queue_inserted after insert on notification_queue
  for each statement execute function herald_queue_notify();

drop trigger if exists herald_queue_waiting on notification_queue;
create trigger herald_queue_waiting after update on notification_queue
  for each row
  when ((new.status = 'pending' or (new.status = 'failed' and not new.permanent))
        and (old.status is distinct from new.status or old.run_after is distinct from new.run_after))
  execute function herald_queue_notify();

drop trigger if exists herald_pause_lifted on herald_pauses;
create trigger herald_pause_lifted after delete on herald_pauses
  for each statement execute function herald_queue_notify();

revoke all on function herald_queue_notify() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_queue_notify() from %I', app_role);
  end loop;
end $$;

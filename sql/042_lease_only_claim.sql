-- A claim that only leases. A claimed row stays `pending`: the claim sets its lease (`locked_until`,
-- `locked_by`) and counts the attempt, columns no index holds, so the claim is a HOT update (no index
-- entry, only the changed middle of the row logged) where it used to be a new row version in every
-- index. "Processing" now means pending under a lease; the record still fences on the lease.
--
-- The previous release's passes keep working while this runs and until they end: their claim sets
-- `processing` and their record fences on it, so `processing` stays a status the check accepts, and
-- this release reads a `processing` row with a lease exactly as a pending leased one. What the
-- previous release's statements cannot know is a pending row's live lease, so a trigger honours it for
-- them (below).

-- The strongest lock this migration takes on the queue, taken first: taken later (dropping a trigger
-- needs it), it would be an upgrade from the index build's, and a pass of the previous release
-- between the two would deadlock with it. Passes wait for the migration instead.
lock table notification_queue in access exclusive mode;

-- The recipients of a claim's candidates that another pass holds: the claim's second statement reads
-- their waiting rows by recipient (the status alone no longer tells the leased rows apart). Neither
-- the recipient nor the status changes when a row is claimed, so the claim stays HOT; a sent row
-- leaves the index (its record is a new row version anyway).
create index if not exists notification_queue_waiting_recipient
  on notification_queue (recipient_user_id) where status in ('pending', 'processing');

-- A pending row under a live lease is changed only by the update that ends the lease (its holder's
-- record) or by one that leaves its status, due time and lease as they are. The previous release's
-- claim (to `processing`) and operator verbs (fenced on `processing` only) would otherwise take or
-- withdraw a row another pass is sending: their update of it is skipped, as if another pass had it.
-- The WHEN clause is evaluated without a function call: claims and records of unleased rows pay nothing.
create or replace function herald_queue_lease_held() returns trigger
language plpgsql
as $$
begin
  return null;
end
$$;

drop trigger if exists herald_queue_lease_held on notification_queue;
create trigger herald_queue_lease_held before update on notification_queue
  for each row
  when (old.status = 'pending' and old.locked_until >= now() and new.locked_until is not null
        and (new.status is distinct from old.status or new.run_after is distinct from old.run_after
             or new.locked_by is distinct from old.locked_by))
  execute function herald_queue_lease_held();

-- A follower is told when a row becomes waiting and unleased: made waiting, its due time moved, or its
-- lease ended (a deferral, a release, a retry, lease recovery, an unlock). A claim sets a lease and a
-- sent row is no longer waiting: neither notifies.
drop trigger if exists herald_queue_waiting on notification_queue;
create trigger herald_queue_waiting after update on notification_queue
  for each row
  when ((new.status = 'pending' or (new.status = 'failed' and not new.permanent)) and new.locked_until is null
        and (old.status is distinct from new.status or old.run_after is distinct from new.run_after
             or old.locked_until is not null))
  execute function herald_queue_notify();

-- Withdrawing a reminder's rows leaves the rows a pass holds under a live lease (pending or, from the
-- previous release, processing), and ends an expired lease with the row.
create or replace function herald_withdraw_reminder_rows(reminder uuid, why text) returns int
language plpgsql security definer set search_path = public, pg_temp
as $$
declare n int;
begin
  with target as (
    select q.id from notification_queue q
     where q.reminder_id = reminder
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
       and not coalesce(q.locked_until >= now(), false)
     for update
  ), u as (
    update notification_queue q
       set status = 'skipped', skip_reason = 'cancelled', permanent = false, locked_until = null,
           locked_by = null, updated_at = now()
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

-- Withdrawing a person's prompts when their settings change (sql/040) leaves the rows a pass holds under
-- a live lease alike, and ends an expired lease with the row.
create or replace function herald_withdraw_prompt_rows(person uuid, why text) returns int
language plpgsql security definer set search_path = public, pg_temp
as $$
declare n int;
begin
  with days as (
    select ps.local_date, ps.revision from prompt_schedules ps
     where ps.user_id = person order by ps.local_date desc limit 2
  ), keys as (
    select herald_prompt_keys(person, d.local_date, d.revision) as key from days d
  ), target as (
    select q.id from notification_queue q
     where q.dedupe_key in (select key from keys) and q.recipient_user_id = person
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
       and not coalesce(q.locked_until >= now(), false)
     for update
  ), u as (
    update notification_queue q
       set status = 'skipped', skip_reason = 'cancelled', permanent = false, locked_until = null,
           locked_by = null, updated_at = now()
      from target where q.id = target.id
    returning q.id
  ), e as (
    insert into notification_events (queue_id, event, reason, details)
    select id, 'cancelled', 'cancelled', jsonb_build_object('by', 'prompt_settings', 'reason', why) from u
  )
  select count(*) into n from u;
  return n;
end
$$;

revoke all on function herald_queue_lease_held() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_queue_lease_held() from %I', app_role);
  end loop;
end $$;

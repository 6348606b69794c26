-- Quiet everywhere once read. A notification is one identity across channels and devices: its entry in
-- `inbox` (per recipient and `notification_key`, the queue rows' `coalesce(notification_group, id)`).
-- When the person reads the entry (`mark_notifications_read`, or the `opened` action) or acts on it
-- (`record_notification_action`, any action), one trigger on the entry, in that same transaction:
--
-- * withdraws the notification's copies not yet sent on its other channels: its queue rows still
--   `pending` (or `failed` with tries left) become `skipped` with `skip_reason = 'read_elsewhere'`, an
--   event each. A copy a pass holds under a live lease is left to that pass, whose fenced record
--   decides it, so no copy is handled twice. A snooze's notification sent again (dedupe key
--   `snooze:…`) is what the person asked for and stays;
-- * asks for one badge correction of the person's devices: a queue row of type `badge_sync`, a silent
--   push (data-only: APNs `content-available`, FCM data message, Expo `_contentAvailable`) whose `data`
--   carries the unread count as `badge`, due 5 seconds later. A person has at most one such row waiting
--   that no pass holds: a burst of reads finds it there and sends one; a read while a pass holds it
--   (and may already have counted) asks for a new one. The person's reads take a transaction-level
--   advisory lock of their own for this, so concurrent reads cannot both add one. (Not a unique index:
--   a claimed row stays `pending` under its lease, and the lease's columns are never indexed.)
--
-- A `badge_sync` row has no entry of its own: it is neither listed nor counted.
-- The trigger is its own (`herald_inbox_read_elsewhere`): other triggers on reads of `inbox` coexist.

-- The silent badge correction: no daily cap or spacing of its own, never held back by them.
insert into public.notification_types (type, priority, critical, daily_cap, min_spacing_seconds, rate_exempt)
values ('badge_sync', 'low', false, null, null, true)
on conflict (type) do nothing;

-- The queue rows that are copies of the entry's notification, waiting to be sent: its group's rows
-- (or its one row), not a snooze's notification sent again nor a badge correction, nor a row an
-- earlier attempt already delivered somewhere (a retry to the rest of its devices: it was sent).
create or replace function public.herald_waiting_copies(person uuid, entry_key text, entry_queue_id uuid)
returns setof uuid
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select q.id from public.notification_queue q
   where q.recipient_user_id = person
     and (q.notification_group = entry_key or (q.notification_group is null and q.id = entry_queue_id))
     and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
     and q.kind <> 'badge_sync'
     and coalesce(q.dedupe_key, '') not like 'snooze:%'
     and (q.attempts = 0 or not exists (select 1 from public.notification_deliveries d
                                          where d.queue_id = q.id and d.outcome = 'delivered'))
$$;

-- Fired by an entry's read or action: withdraws the waiting copies no pass holds, and asks for the
-- person's badge correction.
create or replace function public.herald_read_elsewhere() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  with target as (
    select q.id from public.notification_queue q
     where q.id in (select public.herald_waiting_copies(new.user_id, new.notification_key, new.queue_id))
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
       and not coalesce(q.locked_until >= now(), false)
     for update
  ), u as (
    update public.notification_queue q
       set status = 'skipped', skip_reason = 'read_elsewhere', permanent = false, locked_until = null,
           locked_by = null, updated_at = now()
      from target where q.id = target.id
    returning q.id
  )
  insert into public.notification_events (queue_id, event, reason, details)
  select id, 'skipped', 'read_elsewhere',
         jsonb_build_object('rule', 'read_elsewhere', 'entry', new.id,
                            'by', case when new.action is distinct from old.action then new.action else 'read' end)
    from u;
  perform public.herald_ask_badge_sync(new.user_id);
  return null;
end
$$;

-- One badge correction waiting per person, 5 seconds after the read that asked for it, for a person
-- pushed at all (push on, or never set while a device is registered, and an active device).
create or replace function public.herald_ask_badge_sync(person uuid) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select 1 from public.user_profiles p
                  where p.user_id = person and p.notify_push is not false
                    and exists (select 1 from public.device_tokens t where t.user_id = person and t.is_active)) then
    return;
  end if;
  -- Class "hbdg" (herald badge), keyed by the person: their reads add at most one row at a time.
  perform pg_advisory_xact_lock(1751278695, hashtext(person::text));
  if exists (select 1 from public.notification_queue q
              where q.recipient_user_id = person and q.kind = 'badge_sync'
                and q.status in ('pending', 'processing')
                and not coalesce(q.locked_until >= now(), false)) then
    return;
  end if;
  insert into public.notification_queue (recipient_user_id, member_user_id, channel, kind, priority, payload,
                                         scheduled_at, run_after)
  values (person, person, 'push', 'badge_sync', 'low', '{"silent": true, "badge_increment": 0}'::jsonb,
          now() + interval '5 seconds', now() + interval '5 seconds');
end
$$;

-- A badge correction is not a notification the person sees: it gets no entry.
create or replace function public.herald_inbox_no_badge_entry() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  return null;
end
$$;

drop trigger if exists herald_inbox_no_badge_entry on inbox;
create trigger herald_inbox_no_badge_entry before insert on inbox
  for each row when (new.type = 'badge_sync')
  execute function public.herald_inbox_no_badge_entry();

drop trigger if exists herald_inbox_read_elsewhere on inbox;
create trigger herald_inbox_read_elsewhere after update of is_read, action on inbox
  for each row
  when ((new.is_read and not old.is_read) or (new.action is not null and new.action is distinct from old.action))
  execute function public.herald_read_elsewhere();

-- The helpers and trigger functions are the owner's only (sql/008_security.sql).
revoke all on function public.herald_waiting_copies(uuid, text, uuid) from public;
revoke all on function public.herald_read_elsewhere() from public;
revoke all on function public.herald_ask_badge_sync(uuid) from public;
revoke all on function public.herald_inbox_no_badge_entry() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function public.herald_waiting_copies(uuid, text, uuid) from %I', app_role);
    execute format('revoke all on function public.herald_read_elsewhere() from %I', app_role);
    execute format('revoke all on function public.herald_ask_badge_sync(uuid) from %I', app_role);
    execute format('revoke all on function public.herald_inbox_no_badge_entry() from %I', app_role);
  end loop;
end $$;

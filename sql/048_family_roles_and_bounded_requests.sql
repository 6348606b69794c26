-- Families, snoozes and stored links (docs/app-contract.md): who may act on another's alerts, how often
-- a reminder is snoozed, what a request may cost, and what the app's list hands back.

-- ---------------------------------------------------------------------------------------------------
-- Roles in a family. An admin of a family reads, snoozes and dismisses the alerts about its members;
-- a plain member those about themselves only (before, any member read everyone's health deviations
-- and could dismiss an alert about someone else, so the admins never got it). A refusal stays
-- SQLSTATE 42501 (HTTP 403), as for someone outside the family.

-- True when `viewer` may read and act on the alerts about `member`: the member themselves, or an admin
-- of a family the member belongs to (snooze_pattern_alert and dismiss_pattern_alert ask this).
create or replace function herald_can_view_member(viewer uuid, member uuid) returns boolean
language sql stable security definer set search_path = public, pg_temp
as $$
  select viewer is not null and member is not null and (
    viewer = member or exists (
      select 1 from family_members me join family_members them on them.family_id = me.family_id
       where me.user_id = viewer and me.role = 'admin' and them.user_id = member
    )
  )
$$;

-- The family's active alerts, without the snoozed and the dismissed: every member's for an admin of
-- the family, the caller's own for a plain member. Someone outside the family is refused (42501).
create or replace function get_family_pattern_alerts(family_id uuid)
returns table (
  id uuid, member_user_id uuid, metric_type text, pattern_type text, episode_status text,
  active_since date, current_level int, severity text, baseline_value numeric, recent_value numeric,
  deviation_percent numeric, snooze_until date, updated_at timestamptz
)
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  caller_role text;
begin
  select fm.role into caller_role from family_members fm
   where fm.family_id = get_family_pattern_alerts.family_id and fm.user_id = caller;
  if caller is null or caller_role is null then
    raise exception 'Not authorized to read this family''s alerts' using errcode = '42501';
  end if;

  return query
  select pas.id, pas.user_id, pas.metric_type, pas.pattern_type, pas.episode_status, pas.active_since,
         pas.current_level, pas.severity, pas.baseline_value, pas.recent_value, pas.deviation_percent,
         pas.snooze_until, pas.updated_at
    from pattern_alert_state pas
   where pas.user_id in (select fm.user_id from family_members fm
                          where fm.family_id = get_family_pattern_alerts.family_id
                            and (caller_role = 'admin' or fm.user_id = caller))
     and pas.episode_status = 'active'
     and pas.dismissed_at is null
     and (pas.snooze_until is null or pas.snooze_until < herald_local_date(caller))
   order by pas.current_level desc, pas.active_since desc;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- A snooze budget. A snooze's copy could itself be snoozed, without end (15 pushes in 28 minutes,
-- past the 10 a day and one an hour: a copy counts with its original as one notification). Now one
-- reminder notification is snoozed at most 3 times in all, its copies' snoozes included: each copy
-- keeps the count in its payload (`snooze_count`); the third copy's snooze answers `rescheduled` false
-- and `snoozed_until` null.

-- How many snoozes made this notification: 0, 1 for a snooze's copy, … (an older copy: `snoozed_from`).
create or replace function herald_snooze_depth(payload jsonb) returns int
language sql immutable
as $$
  select case when jsonb_typeof(payload -> 'snooze_count') = 'number'
              then least(greatest((payload ->> 'snooze_count')::numeric, 0), 1000)::int
              when payload ? 'snoozed_from' then 1 else 0 end
$$;

create or replace function herald_snooze_reminder(caller uuid, notification uuid, minutes int,
                                                  out rescheduled boolean, out snoozed_until timestamptz)
language plpgsql set search_path = public, pg_temp
as $$
declare
  q notification_queue;
  copy uuid;
  until timestamptz := now() + make_interval(mins => minutes);
  budget constant int := 3;
begin
  rescheduled := false;
  select * into q from notification_queue x
   where x.id = notification and x.recipient_user_id = caller and x.reminder_id is not null;
  if q.id is null or not exists (select 1 from reminders r
                                  where r.id = q.reminder_id and r.user_id = caller and r.enabled and r.cancelled_at is null) then
    return;
  end if;
  -- A snooze already made of this notification answers with its time, whatever the budget.
  select x.scheduled_at into snoozed_until from notification_queue x
   where x.dedupe_key = 'snooze:' || q.id and x.recipient_user_id = caller;
  if snoozed_until is not null or herald_snooze_depth(q.payload) >= budget then
    return;
  end if;
  insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, priority, payload,
                                  scheduled_at, run_after, dedupe_key, notification_group, related_entity_type,
                                  related_entity_id, reminder_id)
  values (q.recipient_user_id, q.member_user_id, q.channel, q.kind, q.severity, q.priority,
          q.payload || jsonb_build_object('snoozed_from', q.id, 'snooze_count', herald_snooze_depth(q.payload) + 1),
          until, until, 'snooze:' || q.id, coalesce(q.notification_group, q.id::text), q.related_entity_type,
          q.related_entity_id, q.reminder_id)
  on conflict do nothing
  returning id into copy;
  if copy is null then
    return;  -- a snooze of the same notification, at the same moment, made it
  end if;
  insert into notification_events (queue_id, event, reason, details)
  values (copy, 'enqueued', 'snoozed', jsonb_build_object('snoozed_from', q.id, 'minutes', minutes,
                                                          'snooze_count', herald_snooze_depth(q.payload) + 1));
  rescheduled := true;
  snoozed_until := until;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Privileges: the helpers above for the owner only (the RPCs keep the grants they had).
do $$
declare fn regprocedure; app_role name;
begin
  for fn in select p.oid::regprocedure from pg_proc p
             where p.pronamespace = 'public'::regnamespace
               and p.proname in ('herald_snooze_depth') loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

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

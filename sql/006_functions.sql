-- The seeds' RPC functions, callable through PostgREST/Supabase. Each checks the caller with auth.uid().
-- SECURITY DEFINER with a fixed search_path, so callers need no rights on the tables themselves.

-- True when `viewer` shares a family with `member` (or is the member).
create or replace function herald_can_view_member(viewer uuid, member uuid) returns boolean
language sql stable security definer set search_path = public, pg_temp
as $$
  select viewer is not null and (
    viewer = member or exists (
      select 1 from family_members me join family_members them on them.family_id = me.family_id
      where me.user_id = viewer and them.user_id = member
    )
  )
$$;

-- The caller's local date: snoozes are counted in the caller's own days.
create or replace function herald_local_date(who uuid) returns date
language sql stable security definer set search_path = public, pg_temp
as $$
  select (now() at time zone coalesce((select timezone from user_profiles where user_id = who), 'UTC'))::date
$$;

create or replace function snooze_pattern_alert(alert_id uuid, snooze_for_days int) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  alert_user_id uuid;
  snooze_until_date date;
begin
  select pas.user_id into alert_user_id from pattern_alert_state pas where pas.id = snooze_pattern_alert.alert_id;
  if alert_user_id is null or not herald_can_view_member(auth.uid(), alert_user_id) then
    raise exception 'Not authorized to snooze this alert' using errcode = '42501';
  end if;
  if snooze_for_days is null or snooze_for_days < 1 or snooze_for_days > 365 then
    raise exception 'snooze_for_days must be between 1 and 365' using errcode = '22023';
  end if;

  snooze_until_date := herald_local_date(auth.uid()) + snooze_for_days;
  update pattern_alert_state
     set snooze_until = snooze_until_date, snooze_days = snooze_for_days, updated_at = now()
   where id = snooze_pattern_alert.alert_id;

  return jsonb_build_object('success', true, 'alert_id', snooze_pattern_alert.alert_id,
                            'snooze_until', snooze_until_date, 'snooze_days', snooze_for_days);
end
$$;

create or replace function dismiss_pattern_alert(alert_id uuid) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  alert_user_id uuid;
  at timestamptz := now();
begin
  select pas.user_id into alert_user_id from pattern_alert_state pas where pas.id = dismiss_pattern_alert.alert_id;
  if alert_user_id is null or not herald_can_view_member(auth.uid(), alert_user_id) then
    raise exception 'Not authorized to dismiss this alert' using errcode = '42501';
  end if;

  update pattern_alert_state set dismissed_at = at, updated_at = at where id = dismiss_pattern_alert.alert_id;

  return jsonb_build_object('success', true, 'alert_id', dismiss_pattern_alert.alert_id, 'dismissed_at', at);
end
$$;

-- The family's active alerts, without the snoozed and the dismissed (seed 000's updated RPC).
create or replace function get_family_pattern_alerts(family_id uuid)
returns table (
  id uuid, member_user_id uuid, metric_type text, pattern_type text, episode_status text,
  active_since date, current_level int, severity text, baseline_value numeric, recent_value numeric,
  deviation_percent numeric, snooze_until date, updated_at timestamptz
)
language plpgsql stable security definer set search_path = public, pg_temp
as $$
begin
  if auth.uid() is null or not exists (
    select 1 from family_members fm
    where fm.family_id = get_family_pattern_alerts.family_id and fm.user_id = auth.uid()
  ) then
    raise exception 'Not authorized to read this family''s alerts' using errcode = '42501';
  end if;

  return query
  select pas.id, pas.user_id, pas.metric_type, pas.pattern_type, pas.episode_status, pas.active_since,
         pas.current_level, pas.severity, pas.baseline_value, pas.recent_value, pas.deviation_percent,
         pas.snooze_until, pas.updated_at
    from pattern_alert_state pas
   where pas.user_id in (select fm.user_id from family_members fm
                          where fm.family_id = get_family_pattern_alerts.family_id)
     and pas.episode_status = 'active'
     and pas.dismissed_at is null
     and (pas.snooze_until is null or pas.snooze_until < herald_local_date(auth.uid()))
   order by pas.current_level desc, pas.active_since desc;
end
$$;

-- Registers (or re-activates) the caller's device token. The provider is inferred when not given:
-- Expo tokens look like ExponentPushToken[…] (seed 003); otherwise iOS → apns, Android → fcm.
create or replace function register_device_token(
  device_token text, platform text, app_version text default null, os_version text default null,
  provider text default null, locale text default null
) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
#variable_conflict use_column
declare
  caller uuid := auth.uid();
  chosen_provider text;
  row device_tokens;
begin
  if caller is null then
    raise exception 'Not authorized: no caller' using errcode = '42501';
  end if;
  if device_token is null or length(trim(device_token)) = 0 or length(device_token) > 4096 then
    raise exception 'invalid_token: a device token is required' using errcode = '22023';
  end if;
  if platform is null or platform not in ('ios', 'android', 'web') then
    raise exception 'validation_error: platform must be ios, android or web' using errcode = '22023';
  end if;

  chosen_provider := coalesce(register_device_token.provider,
    case when device_token like 'ExponentPushToken[%' or device_token like 'ExpoPushToken[%' then 'expo'
         when platform = 'ios' then 'apns'
         else 'fcm' end);
  if chosen_provider = 'expo' and device_token !~ '^Expo(nent)?PushToken\[[a-zA-Z0-9_-]+\]$' then
    raise exception 'invalid_token: malformed Expo push token' using errcode = '22023';
  end if;

  insert into device_tokens as t (user_id, device_token, platform, provider, app_version, os_version, locale,
                                  is_active, last_used_at)
  values (caller, register_device_token.device_token, register_device_token.platform, chosen_provider,
          register_device_token.app_version, register_device_token.os_version, register_device_token.locale,
          true, now())
  on conflict (user_id, device_token) do update
    set platform = excluded.platform, provider = excluded.provider,
        app_version = coalesce(excluded.app_version, t.app_version),
        os_version = coalesce(excluded.os_version, t.os_version),
        locale = coalesce(excluded.locale, t.locale),
        is_active = true, deactivated_at = null, deactivated_reason = null,
        last_used_at = now(), updated_at = now()
  returning * into row;

  return jsonb_build_object('id', row.id, 'user_id', row.user_id, 'device_token', row.device_token,
                            'platform', row.platform, 'provider', row.provider, 'locale', row.locale,
                            'status', 'active');
end
$$;

create or replace function unregister_device_token(device_token text) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  n int;
begin
  if caller is null then
    raise exception 'Not authorized: no caller' using errcode = '42501';
  end if;
  update device_tokens t
     set is_active = false, deactivated_at = now(), deactivated_reason = 'unregistered', updated_at = now()
   where t.user_id = caller and t.device_token = unregister_device_token.device_token and t.is_active;
  get diagnostics n = row_count;
  return jsonb_build_object('device_token', unregister_device_token.device_token,
                            'status', case when n > 0 then 'unregistered' else 'not_found' end,
                            'unregistered_at', now());
end
$$;

-- Marks the caller's own in-app notifications read (seed 003's PATCH). Others' ids are ignored.
create or replace function mark_notifications_read(notification_ids uuid[]) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  ids uuid[];
begin
  if caller is null then
    raise exception 'Not authorized: no caller' using errcode = '42501';
  end if;
  with updated as (
    update inbox set is_read = true, read_at = at
     where id = any(notification_ids) and user_id = caller and not is_read
    returning id
  )
  select coalesce(array_agg(id), '{}') into ids from updated;
  return jsonb_build_object('updated_count', cardinality(ids), 'notification_ids', to_jsonb(ids), 'read_at', at);
end
$$;

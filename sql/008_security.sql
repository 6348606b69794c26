-- App roles and data exposure: what the app's users may see and do, directly or through
-- PostgREST, and nothing more.
--
-- On Supabase every new table, sequence and function in `public` is granted to `anon` and
-- `authenticated` (ALTER DEFAULT PRIVILEGES), and every function is executable by PUBLIC (PostgreSQL's
-- own default). Without this file any signed-in user, or anyone with the anon key, could read every
-- person's profile, metrics and notifications, write to the queue, and call herald's helpers. After it:
--
--   * every herald table has row-level security enabled, and the app roles keep only this:
--       user_profiles   authenticated: select its own row; update its own preferences (not user_id,
--                       email or phone_e164, which the app's backend sets after verifying them, and not
--                       the columns herald owns: the *_disabled_reason columns, created_at, updated_at)
--       device_tokens   authenticated: select its own rows (writes go through the RPCs)
--       inbox           authenticated: select its own rows (marking read goes through
--                       mark_notifications_read, so title, body and data cannot be changed)
--     everything else (the queue, deliveries, events, receipts, metrics, alerts, families, schedules,
--     herald's bookkeeping, schema_migrations) is not granted to anon or authenticated at all;
--   * herald's helper and trigger functions (herald_*) are executable by their owner only;
--   * the seeds' RPCs are executable by `authenticated` (where it exists), not by anon or PUBLIC.
--
-- Only herald's tables are touched, by name: on Supabase, `public` also holds the app's own tables.
-- The role-specific statements run only when the roles exist, so this file applies the same way to
-- plain PostgreSQL. herald connects as the tables' owner, to whom row-level security does not apply
-- (it is not FORCEd); a role that is not the owner needs BYPASSRLS to run herald.
--
-- EVERY TABLE A LATER MIGRATION CREATES must be restricted the same way, in that migration:
--     select herald_restrict_table('new_table');
-- (and then its own policies and grants, if the app is to see any of it). SecurityTests fails when a
-- table in `public` has row-level security off, or a foreign key without an index.

-- Turns on row-level security and takes every privilege on the table and its sequences away from
-- PUBLIC and the app roles. Without a policy and a grant, the app sees nothing of the table.
create or replace function herald_restrict_table(tbl regclass) returns void
language plpgsql
as $$
declare
  app_role name;
  seq regclass;
begin
  execute format('alter table %s enable row level security', tbl);
  execute format('revoke all on table %s from public', tbl);
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on table %s from %I', tbl, app_role);
  end loop;
  -- Identity and serial columns' sequences.
  for seq in
    select d.objid::regclass from pg_depend d join pg_class s on s.oid = d.objid
     where d.classid = 'pg_class'::regclass and d.refclassid = 'pg_class'::regclass
       and d.refobjid = tbl and s.relkind = 'S'
  loop
    execute format('revoke all on sequence %s from public', seq);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on sequence %s from %I', seq, app_role);
    end loop;
  end loop;
end
$$;

select herald_restrict_table(t) from unnest(array[
  'user_profiles', 'family_members', 'device_tokens',
  'wearable_daily_metrics', 'pattern_thresholds', 'pattern_alert_state', 'pattern_evaluations',
  'pattern_scan_state',
  'notification_queue', 'notification_deliveries', 'notification_events', 'herald_passes',
  'push_receipts', 'inbox',
  'daily_forecasts', 'prompt_settings', 'prompt_schedules', 'reminders',
  'schema_migrations'
]::regclass[]) as t;

-- The policies. They name no role: a role sees rows through them only once it has been granted the
-- table (below, `authenticated`); the owner and BYPASSRLS roles (Supabase's service_role) ignore them.
-- `(select auth.uid())` is evaluated once per statement, not once per row.
drop policy if exists herald_own_profile_select on user_profiles;
create policy herald_own_profile_select on user_profiles for select
  using (user_id = (select auth.uid()));
drop policy if exists herald_own_profile_update on user_profiles;
create policy herald_own_profile_update on user_profiles for update
  using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));

drop policy if exists herald_own_device_tokens_select on device_tokens;
create policy herald_own_device_tokens_select on device_tokens for select
  using (user_id = (select auth.uid()));

drop policy if exists herald_own_inbox_select on inbox;
create policy herald_own_inbox_select on inbox for select
  using (user_id = (select auth.uid()));

-- The time zone check. A CHECK constraint runs its function with the writer's privileges, so
-- herald_is_timezone would have to stay executable by everyone who may write user_profiles.timezone;
-- a trigger function needs no EXECUTE privilege, so the check moves into one (same error code and
-- constraint name as before).
create or replace function herald_check_timezone() returns trigger
language plpgsql
as $$
begin
  if new.timezone is not null then
    begin
      perform now() at time zone new.timezone;
    exception when invalid_parameter_value then
      raise exception 'time zone "%" is not known', new.timezone
        using errcode = 'check_violation', constraint = 'user_profiles_timezone_check',
              table = 'user_profiles', column = 'timezone';
    end;
  end if;
  return new;
end
$$;

drop trigger if exists user_profiles_timezone_check on user_profiles;
create trigger user_profiles_timezone_check before insert or update of timezone on user_profiles
  for each row execute function herald_check_timezone();
alter table user_profiles drop constraint if exists user_profiles_timezone_check;

-- Device tokens: a token belongs to one person at a time. When a phone changes hands (shared, sold,
-- another account signed in), the new user's registration deactivates the previous user's row, so the
-- previous user's alerts stop reaching that device. First the tokens already active for several users:
-- the most recently registered keeps it.
update device_tokens t
   set is_active = false, deactivated_at = now(), deactivated_reason = 'reassigned', updated_at = now()
 where t.is_active
   and exists (
     select 1 from device_tokens newer
      where newer.device_token = t.device_token and newer.is_active and newer.id <> t.id
        and (coalesce(newer.last_used_at, newer.created_at), newer.id)
          > (coalesce(t.last_used_at, t.created_at), t.id));
-- At most one active row per token; it also serves the reassignment's lookup.
create unique index if not exists device_tokens_active_token on device_tokens (device_token) where is_active;

-- As in 006, plus: under a lock on the token, any other user's active row for it is deactivated
-- ('reassigned') before the caller's row is inserted or re-activated.
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

  -- Two users registering the same token at once take turns (the key space of the two-int4 form is
  -- separate from herald's bigint advisory locks; 0x68657264 is "herd").
  perform pg_advisory_xact_lock(1751478884, hashtext(register_device_token.device_token));
  update device_tokens t
     set is_active = false, deactivated_at = now(), deactivated_reason = 'reassigned', updated_at = now()
   where t.device_token = register_device_token.device_token and t.user_id <> caller and t.is_active;

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

-- Foreign keys the bulk deletes cascade through: pruning notification_queue looks up each child table
-- by queue_id, and deleting a device token looks up push_receipts by device_token_id. Without an index
-- each deleted row scans the child table. (notification_deliveries, notification_events and inbox
-- already have one; notification_queue.alert_state_id has its partial index.)
create index if not exists push_receipts_queue on push_receipts (queue_id);
create index if not exists push_receipts_device_token on push_receipts (device_token_id);

-- Functions. herald's helpers and trigger functions: owner only (the SECURITY DEFINER RPCs call the
-- helpers as the owner). The RPCs: not PUBLIC, not anon; `authenticated` where it exists.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace and p.proname like 'herald\_%'
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;

  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('snooze_pattern_alert', 'dismiss_pattern_alert', 'get_family_pattern_alerts',
                         'register_device_token', 'unregister_device_token', 'mark_notifications_read')
  loop
    execute format('revoke all on function %s from public', fn);
    if exists (select 1 from pg_roles where rolname = 'anon') then
      execute format('revoke all on function %s from anon', fn);
    end if;
    if exists (select 1 from pg_roles where rolname = 'authenticated') then
      execute format('grant execute on function %s to authenticated', fn);
    end if;
  end loop;
end
$$;

-- What `authenticated` may do directly, where that role exists (Supabase, or a PostgREST set up like
-- it). The policies above narrow it to the caller's own rows.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    return;
  end if;
  grant select on user_profiles, device_tokens, inbox to authenticated;
  grant update (display_name, timezone, locale,
                notify_in_app, notify_push, notify_email, notify_sms, notify_whatsapp,
                champion_notify_email, champion_notify_sms,
                quiet_hours_start, quiet_hours_end, quiet_hours_notification_level, quiet_hours_action,
                forecast_notification_time, latitude, longitude, location_name)
    on user_profiles to authenticated;
  -- The policies call auth.uid() as the caller. Supabase grants its own auth schema; where 001 made
  -- the schema (we own it), grant it here.
  if exists (select 1 from pg_namespace where nspname = 'auth' and nspowner = (select oid from pg_roles where rolname = current_user)) then
    grant usage on schema auth to authenticated;
  end if;
end
$$;

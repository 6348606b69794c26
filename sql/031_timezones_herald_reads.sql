-- A profile's time zone is one herald can read. The check of migration 008 asked PostgreSQL, which also
-- takes spellings no IANA zone has — lower case (`america/new_york`), abbreviations (`CEST`), POSIX
-- offsets (`UTC+3`, `GMT+5`) — and herald then failed every notification of that person, and left out
-- their reminders and forecasts, while the app's save had looked fine. Now only a name of the zone
-- database, written as it is there, and no ad-hoc offset, is taken (what `Zone.named` reads). Rows
-- written before keep their value and are failed as before, with a readable error.

-- The zone database's names, kept in a table: `pg_timezone_names` reads the zone files from disk at
-- each call (tens of milliseconds), too slow for a trigger on a bulk import of profiles. A name the
-- table lacks (one a later tzdata added) is still looked up there, so only a refused write is slow.
create table if not exists herald_time_zones (name text primary key);
insert into herald_time_zones (name)
select name from pg_timezone_names where name !~ '^(GMT|UTC)[+-]'
on conflict do nothing;
select herald_restrict_table('herald_time_zones');

-- Security definer (search_path pinned): the app's roles may not read herald_time_zones themselves.
create or replace function herald_check_timezone() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
  if new.timezone is not null
     and (new.timezone ~ '^(GMT|UTC)[+-]'
          or not (exists (select from herald_time_zones where name = new.timezone)
                  or exists (select from pg_timezone_names where name = new.timezone))) then
    raise exception 'time zone "%" is not known: use a zone database name such as Europe/London', new.timezone
      using errcode = 'check_violation', constraint = 'user_profiles_timezone_check',
            table = 'user_profiles', column = 'timezone';
  end if;
  return new;
end
$$;

revoke all on function herald_check_timezone() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_check_timezone() from %I', app_role);
  end loop;
end $$;

-- Dismissing twice keeps the first dismissal's time (the app may retry the call).
create or replace function dismiss_pattern_alert(alert_id uuid) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  alert_user_id uuid;
  at timestamptz := now();
  stored timestamptz;
begin
  select pas.user_id into alert_user_id from pattern_alert_state pas where pas.id = dismiss_pattern_alert.alert_id;
  if alert_user_id is null or not herald_can_view_member(auth.uid(), alert_user_id) then
    raise exception 'Not authorized to dismiss this alert' using errcode = '42501';
  end if;

  update pattern_alert_state set dismissed_at = coalesce(dismissed_at, at), updated_at = at
   where id = dismiss_pattern_alert.alert_id
  returning dismissed_at into stored;

  return jsonb_build_object('success', true, 'alert_id', dismiss_pattern_alert.alert_id, 'dismissed_at', stored);
end
$$;

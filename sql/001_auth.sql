-- auth.uid(): who is calling, as on Supabase. Where the database already has one (Supabase), it is kept;
-- elsewhere it reads the `request.jwt.claim.sub` setting (or the `sub` of `request.jwt.claims`), which is
-- what PostgREST sets from the caller's JWT.
create schema if not exists auth;

do $$
begin
  if not exists (
    select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'auth' and p.proname = 'uid'
  ) then
    create function auth.uid() returns uuid
    language sql stable
    as $f$
      select nullif(
        coalesce(
          nullif(current_setting('request.jwt.claim.sub', true), ''),
          nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
        ), ''
      )::uuid
    $f$;
  end if;
end
$$;

-- True when PostgreSQL knows the time zone. Used by the checks that keep bad time zones out of the tables.
create or replace function herald_is_timezone(tz text) returns boolean
language plpgsql immutable
as $$
begin
  perform now() at time zone tz;
  return true;
exception when invalid_parameter_value then
  return false;
end
$$;

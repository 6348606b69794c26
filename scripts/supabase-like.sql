-- A local PostgreSQL prepared as Supabase prepares a project's database, to try the app's RPCs
-- (docs/app-contract.md#trying-the-rpcs-locally). Run it as the role that runs `herald migrate`, before
-- migrating (it may be run again at any time):
--
--     psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f scripts/supabase-like.sql
--     herald migrate
--
-- Run after `herald migrate`, it also gives the new roles what herald's migrations give them
-- (herald_grant_app_roles()). herald's tests prepare their Supabase-like databases with this file.

-- The roles PostgREST switches to: `anon` (no JWT), `authenticated` (a signed-in user's JWT),
-- `service_role` (the service role key; it bypasses row-level security), and `authenticator`, the role
-- PostgREST logs in as (to run PostgREST itself: alter role authenticator login password '…').
-- Roles belong to the whole server: one that exists already is left as it is.
do $$
declare
  wanted text[][] := array[['anon', 'nologin noinherit'], ['authenticated', 'nologin noinherit'],
                           ['service_role', 'nologin noinherit bypassrls'], ['authenticator', 'nologin noinherit']];
  i int;
begin
  for i in 1 .. array_length(wanted, 1) loop
    begin
      execute format('create role %I %s', wanted[i][1], wanted[i][2]);
    exception when duplicate_object or unique_violation then
      null;  -- made already, perhaps at this moment by another session
    end;
  end loop;
  begin
    grant anon, authenticated, service_role to authenticator;
  exception when unique_violation then
    null;
  end;
end
$$;

-- What Supabase grants in `public`: the schema to every app role, and everything created in it later
-- by the role running this file (herald's tables and functions among them) by default privileges.
-- herald's migrations take back from `anon` and `authenticated` what they must not hold.
grant usage on schema public to anon, authenticated, service_role;
alter default privileges in schema public grant all on tables to anon, authenticated, service_role;
alter default privileges in schema public grant all on sequences to anon, authenticated, service_role;
alter default privileges in schema public grant all on functions to anon, authenticated, service_role;

-- Roles made after herald was migrated: what the migrations would have given them.
do $$
begin
  if to_regprocedure('public.herald_grant_app_roles()') is not null then
    perform public.herald_grant_app_roles();
  end if;
end
$$;

-- A request as PostgREST runs it, to try an RPC from psql: the role from the JWT's `role`, the whole
-- JWT payload as `request.jwt.claims` (auth.uid() reads its `sub`), both for the transaction only.
--
--     begin;
--     set local role authenticated;
--     select set_config('request.jwt.claims',
--       '{"sub":"6f1c2a34-0b7e-4c55-9d1a-2f3b4c5d6e7f","role":"authenticated","aud":"authenticated"}', true);
--     select get_notifications();
--     commit;

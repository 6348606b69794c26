-- The queue had two BEFORE UPDATE row triggers: the type check of an update of `kind` (sql/035) and the
-- lease guard that keeps a release before lease-only claims off this release's leases (sql/042). For a
-- table with any BEFORE UPDATE row trigger, PostgreSQL locks each row an update changes before the
-- update itself, whatever the trigger's column list or WHEN clause, to hand the trigger the row's
-- current version: every claim and every record paid that lock, a WAL record of 54 B a row each time
-- (108 B a notification) and 0.6–0.9 ms of a lease of 1,000 rows (5.0 against 4.1–4.4 ms). Both checks
-- now run after the write, on the row the update already holds, and the queue has no BEFORE UPDATE
-- row trigger left:
--   * `herald_queue_kind_changed`: an update that changes `kind` to a type that does not exist is
--     refused with the insert's error (23503, "unknown notification type"); to a type with a follow-up
--     policy or quiet once read, the row gets the marks an insert of that type gets. An insert is still
--     checked before it is written (`herald_queue_type`, BEFORE INSERT), which also fills a missing
--     priority from the type; an update must name a priority itself.
--   * `herald_queue_lease_held`: a statement of a release before lease-only claims that would take or
--     change a pending row under a live lease (its claim, to `processing`, or its operator verbs) is
--     refused with its transaction (55P03, "is leased to pass"), where the row used to be skipped and
--     the rest taken. Such a claim meets this release's leases at the head of the queue, so that
--     release's passes end with a database error until they are replaced; this release's passes send
--     the rows. This release's own statements never change a live lease but to end it.

-- The strongest lock this migration takes on the queue (dropping a trigger needs it), taken first so a
-- pass of either release waits for the migration instead of deadlocking with it.
lock table notification_queue in access exclusive mode;

create or replace function public.herald_queue_kind_changed() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  type_follow_up boolean;
  type_quiet boolean;
begin
  select t.follow_up is not null, t.quiet_once_read into type_follow_up, type_quiet
    from public.notification_types t where t.type = new.kind;
  if not found then
    raise exception 'unknown notification type "%"', left(new.kind, 64)
      using errcode = '23503',
            hint = 'add it first: insert into notification_types (type) values (''<type>'')';
  end if;
  if (type_follow_up and new.follow_up_of is null and new.follows_up is not true)
     or (type_quiet and not new.quiet_once_read) then
    update public.notification_queue q
       set follows_up = case when type_follow_up and q.follow_up_of is null then true else q.follows_up end,
           quiet_once_read = q.quiet_once_read or type_quiet
     where q.id = new.id and q.recipient_user_id = new.recipient_user_id;
  end if;
  return null;
end
$$;

-- A lease expired at the lease time a test moved forward (`herald.lease_shift`, sql/060) is taken over
-- as at the database's own time; any other change the trigger's WHEN clause selects is refused.
create or replace function public.herald_queue_lease_refused() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare shift float8 := coalesce(nullif(current_setting('herald.lease_shift', true), '')::float8, 0);
begin
  if shift > 0 and old.locked_until < now() + make_interval(secs => shift) then
    return null;
  end if;
  raise exception 'notification % is leased to pass "%" until %', old.id, left(old.locked_by, 64), old.locked_until
    using errcode = '55P03',
          hint = 'a pass of a release before lease-only claims cannot take or change a row this release '
                 'leases; this release''s passes send it';
end
$$;

drop trigger if exists herald_queue_type on notification_queue;
create trigger herald_queue_type before insert on notification_queue
  for each row execute function public.herald_queue_type();

drop trigger if exists herald_queue_kind_changed on notification_queue;
create trigger herald_queue_kind_changed after update of kind on notification_queue
  for each row when (new.kind is distinct from old.kind)
  execute function public.herald_queue_kind_changed();

drop trigger if exists herald_queue_lease_held on notification_queue;
create trigger herald_queue_lease_held after update on notification_queue
  for each row
  when (old.status = 'pending' and old.locked_until >= now() and new.locked_until is not null
        and (new.status is distinct from old.status or new.run_after is distinct from old.run_after
             or new.locked_by is distinct from old.locked_by))
  execute function public.herald_queue_lease_refused();
drop function if exists public.herald_queue_lease_held();

do $$
declare
  fn text;
  app_role text;
begin
  foreach fn in array array['public.herald_queue_kind_changed()', 'public.herald_queue_lease_refused()'] loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated', 'service_role') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

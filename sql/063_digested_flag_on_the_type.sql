-- The check on every queue write looked a digested type up in `notification_type_digests` beside its
-- row of `notification_types` (sql/062): one more index probe for every row written, digested or not
-- (+8–9 % on a bulk enqueue of 20,000 rows). Whether a type is digested is now kept on its own row
-- (`notification_types.digested`, kept by a trigger on `notification_type_digests`), so the check reads
-- the one row it read before digests existed.
alter table notification_types add column if not exists digested boolean not null default false;
update notification_types t set digested = exists (select 1 from notification_type_digests d where d.type = t.type)
 where digested is distinct from exists (select 1 from notification_type_digests d where d.type = t.type);

-- A type's digest policy written or removed: its type's flag follows.
create or replace function public.herald_type_digested() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    update public.notification_types set digested = false where type = old.type and digested;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    update public.notification_types set digested = true where type = new.type and not digested;
  end if;
  return null;
end
$$;
do $$
declare app_role name;
begin
  revoke all on function public.herald_type_digested() from public;
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function public.herald_type_digested() from %I', app_role);
  end loop;
end $$;

drop trigger if exists herald_type_digested on notification_type_digests;
create trigger herald_type_digested after insert or update of type or delete on notification_type_digests
  for each row execute function public.herald_type_digested();

create or replace function public.herald_queue_type() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  type_priority text;
  type_critical boolean;
  type_follow_up boolean;
  digested boolean;
begin
  select t.priority, t.critical, t.follow_up is not null, t.digested
    into type_priority, type_critical, type_follow_up, digested
    from public.notification_types t where t.type = new.kind;
  if not found then
    raise exception 'unknown notification type "%"', left(new.kind, 64)
      using errcode = '23503',
            hint = 'add it first: insert into notification_types (type) values (''<type>'')';
  end if;
  if new.priority is null then
    new.priority := type_priority;
  end if;
  if type_follow_up and new.follow_up_of is null then
    new.follows_up := true;
  end if;
  if digested and tg_op = 'INSERT' and not type_critical and new.severity is distinct from 'critical'
     and new.status = 'pending' and new.escalated_from is null
     and (new.dedupe_key is null or new.dedupe_key not like 'digest:%') then
    new.status := 'skipped';
    new.skip_reason := 'digested';
  end if;
  return new;
end
$$;

-- The check on every queue write (sql/035) learned two things in two migrations: to mark a row of a
-- type with a follow-up policy (`follows_up`, sql/057) and to collect a new row of a digested type
-- into its digest (`skipped`/`digested`, sql/059). Each replaced the function whole, so the later one
-- dropped the earlier's marking. This is the one function doing both, from the same single lookup of
-- the type's row: a type using neither costs nothing more than before.
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
  select t.priority, t.critical, t.follow_up is not null, d.type is not null
    into type_priority, type_critical, type_follow_up, digested
    from public.notification_types t left join public.notification_type_digests d on d.type = t.type
   where t.type = new.kind;
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

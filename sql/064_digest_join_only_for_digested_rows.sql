-- The digest join (sql/059) is a statement trigger after every insert into the queue. It called its
-- security-definer function for every insert, of any type, to look for digested rows among those the
-- insert made (+6 % on an undigested type's one-row insert). Now the trigger has a WHEN clause the
-- server tests without calling a function:
--   * herald_queue_type, which marks a row of a digested type `skipped`/`digested`, also sets the
--     transaction-local setting `herald.digests_to_join` when it does;
--   * the trigger fires only when that setting is on, and turns it off before it joins.
-- A statement that writes no digested row calls no function. The join stays a statement trigger, with
-- its rows in one order (two inserts lock the same windows in the same order) and on a partitioned
-- queue, which takes no row trigger with a transition table. The setting is local to the transaction
-- and is undone with a rolled-back savepoint; one set by hand only makes the trigger look and find
-- nothing.
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
  -- Each mark is tested first on the type's flag alone, so a type using neither pays for two tests of
  -- a variable.
  if type_follow_up then
    if new.follow_up_of is null then
      new.follows_up := true;
    end if;
  end if;
  if digested then
    if tg_op = 'INSERT' and not type_critical and new.severity is distinct from 'critical'
       and new.status = 'pending' and new.escalated_from is null
       and (new.dedupe_key is null or new.dedupe_key not like 'digest:%') then
      new.status := 'skipped';
      new.skip_reason := 'digested';
      perform set_config('herald.digests_to_join', 'on', true);
    end if;
  end if;
  return new;
end
$$;

create or replace function public.herald_queue_digests() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  item public.notification_queue;
  items uuid[] := '{}';
  digests uuid[] := '{}';
begin
  perform set_config('herald.digests_to_join', '', true);
  for item in
    select * from born b where b.skip_reason = 'digested' and b.status = 'skipped'
     order by b.recipient_user_id, b.kind, b.channel, b.payload ->> 'digest_key', b.scheduled_at, b.id
  loop
    items := items || item.id;
    digests := digests || public.herald_digest_join(item);
  end loop;
  insert into public.notification_events (queue_id, event, reason, details)
  select i, 'skipped', 'digested', jsonb_build_object('digest_id', d) from unnest(items, digests) as j(i, d);
  return null;
end
$$;

drop trigger if exists herald_queue_digests on notification_queue;
create trigger herald_queue_digests after insert on notification_queue
  referencing new table as born for each statement
  when (current_setting('herald.digests_to_join', true) = 'on')
  execute function public.herald_queue_digests();

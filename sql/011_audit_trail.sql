-- The audit trail outlives the queue: notification_events (why a person did or did not get a
-- notification) and notification_deliveries (each attempt to each destination) are kept for
-- HERALD_AUDIT_RETENTION_DAYS (400 by default) whatever happens to the queue rows, which are pruned
-- after HERALD_RETENTION_DAYS (30). Both are partitioned by month, so retention drops whole partitions
-- instead of deleting rows, and their indexes stay the size of a month. They no longer reference
-- notification_queue: pruning a queue row leaves its trail (and writes a `pruned` event with what the
-- row was, without its payload, so `herald explain` still answers).

-- Creates the monthly partitions of `parent` from the month of `from_month` through `months_ahead`
-- months after `until_month`, each under herald's security model. Idempotent.
create or replace function herald_audit_partitions(parent regclass, from_month date, until_month date, months_ahead int)
returns int language plpgsql as $$
declare
  m date := date_trunc('month', from_month)::date;
  last date := (date_trunc('month', until_month) + make_interval(months => months_ahead))::date;
  name text;
  created int := 0;
begin
  while m <= last loop
    name := format('%s_%s', parent::text, to_char(m, 'YYYY_MM'));
    if to_regclass(name) is null then
      execute format('create table %I partition of %s for values from (%L) to (%L)',
                     name, parent, m::timestamptz, (m + interval '1 month')::timestamptz);
      perform herald_restrict_table(name::regclass);
      created := created + 1;
    end if;
    m := (m + interval '1 month')::date;
  end loop;
  return created;
end
$$;

-- Drops the monthly partitions of `parent` that end before `before`. Returns how many.
create or replace function herald_audit_drop_before(parent regclass, before timestamptz)
returns int language plpgsql as $$
declare
  part record;
  dropped int := 0;
begin
  for part in
    select c.oid::regclass as rel, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = parent
  loop
    -- "FOR VALUES FROM ('…') TO ('…')"; the default partition has no upper bound and is kept.
    if part.bound like 'FOR VALUES FROM%' and
       substring(part.bound from 'TO \(''([^'']+)''\)')::timestamptz <= before then
      execute format('drop table %s', part.rel);
      dropped := dropped + 1;
    end if;
  end loop;
  return dropped;
end
$$;

revoke all on function herald_audit_partitions(regclass, date, date, int) from public;
revoke all on function herald_audit_drop_before(regclass, timestamptz) from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_audit_partitions(regclass, date, date, int) from %I', app_role);
    execute format('revoke all on function herald_audit_drop_before(regclass, timestamptz) from %I', app_role);
  end loop;
end $$;

-- Rebuild both tables as partitioned tables with the same columns, defaults, checks and identity,
-- copy what they hold, and swap the names. (Only once: a partitioned table is left alone.)
do $$
declare
  t text;
  oldest date;
begin
  foreach t in array array['notification_events', 'notification_deliveries'] loop
    if (select relkind from pg_class where oid = t::regclass) = 'p' then
      continue;
    end if;
    execute format('create table %I (like %I including defaults including constraints including identity '
                   'including generated including storage including comments) partition by range (at)',
                   t || '_new', t);
    execute format('alter table %I add primary key (id, at)', t || '_new');
    execute format('select coalesce(min(at), now())::date from %I', t) into oldest;
    perform herald_audit_partitions((t || '_new')::regclass, least(oldest, now()::date), now()::date, 3);
    execute format('create table %I partition of %I default', t || '_new_default', t || '_new');
    perform herald_restrict_table((t || '_new_default')::regclass);
    execute format('insert into %I overriding system value select * from %I', t || '_new', t);
    execute format('drop table %I', t);
    execute format('alter table %I rename to %I', t || '_new', t);
    execute format('alter table %I rename to %I', t || '_new_default', t || '_default');
  end loop;
end $$;

-- Partitions, indexes and sequences were named after the temporary parent: give them the parent's name.
do $$
declare rel record;
begin
  for rel in
    select c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = current_schema()
       and (c.relname like 'notification\_events\_new%' or c.relname like 'notification\_deliveries\_new%')
  loop
    execute format('alter %s %I rename to %I',
                   case rel.relkind when 'i' then 'index' when 'I' then 'index' when 'S' then 'sequence' else 'table' end,
                   rel.relname, regexp_replace(rel.relname, '^(notification_(events|deliveries))_new', '\1'));
  end loop;
end $$;

select setval(pg_get_serial_sequence('notification_events', 'id'), coalesce((select max(id) from notification_events), 0) + 1, false);
select setval(pg_get_serial_sequence('notification_deliveries', 'id'), coalesce((select max(id) from notification_deliveries), 0) + 1, false);

create index if not exists notification_events_queue on notification_events (queue_id, id);
create index if not exists notification_deliveries_queue on notification_deliveries (queue_id, destination);

select herald_restrict_table('notification_events');
select herald_restrict_table('notification_deliveries');

-- A pruned queue row leaves a `pruned` event with what it was.
alter table notification_events drop constraint if exists notification_events_event_check;
alter table notification_events add constraint notification_events_event_check check (event in
  ('enqueued', 'claimed', 'sent', 'skipped', 'deferred', 'failed', 'superseded', 'recovered', 'released',
   'retried', 'cancelled', 'rescheduled', 'unlocked', 'pruned'));

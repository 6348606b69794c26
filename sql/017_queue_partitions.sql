-- Hash partitions of notification_queue by recipient: `herald migrate --queue-partitions N`
-- rebuilds the queue as N partitions `notification_queue_p0` … `p{N-1}` (modulus N, remainder K), or
-- back into one plain table with N = 1 (the default: this file alone changes nothing). A pass pinned
-- with `herald run --shard K/N` then claims, reads and records in partition K only.
--
-- The count is the catalog's: `herald_queue_partitions()` reads it, so status, later migrations and
-- `--shard` all see what the database really holds.
--
-- What partitioning changes, because a unique index of a partitioned table must hold its partition key:
--   * the primary key is (id, recipient_user_id); ids stay unique in practice (gen_random_uuid());
--   * a dedupe key is unique per recipient (every key herald makes names its recipient or a row of it;
--     a key given to `herald enqueue --dedupe-key` is unique per recipient, not across the queue);
--   * push_receipts.queue_id and inbox.queue_id cannot be foreign keys to the queue's id: the
--     trigger `herald_queue_deleted` does what their ON DELETE did (receipts deleted, inbox unlinked).
-- The rebuild keeps every row, column default, check, outgoing foreign key, index, trigger, grant and
-- storage setting, and restricts the new tables (herald_restrict_table) like every table.

-- How many partitions the queue has: 1 for the plain table.
create or replace function herald_queue_partitions() returns int
language sql stable
as $$
  select case when c.relkind = 'p'
              then (select count(*)::int from pg_inherits i where i.inhparent = c.oid) else 1 end
    from pg_class c where c.oid = 'notification_queue'::regclass
$$;

-- What the dropped foreign keys to the queue did on delete (only while the queue is partitioned).
create or replace function herald_queue_deleted() returns trigger
language plpgsql
as $$
begin
  delete from push_receipts r using gone g where r.queue_id = g.id;
  update inbox i set queue_id = null from gone g where i.queue_id = g.id;
  return null;
end
$$;

-- Rebuilds notification_queue with `partitions` hash partitions (1: a plain table) under an exclusive
-- lock, keeping its rows. Does nothing when it already has that many. Returns the previous count.
create or replace function herald_partition_queue(partitions int) returns int
language plpgsql
as $$
declare
  previous int := herald_queue_partitions();
  old_oid oid := 'notification_queue'::regclass;
  storage text[];
  columns text;
  indexes text[];
  foreign_keys text[];
  triggers text[];
  grants text[];
  def text;
  k int;
begin
  if partitions is null or partitions < 1 or partitions > 1024 then
    raise exception 'the queue takes 1 to 1024 partitions, not %', partitions;
  end if;
  if partitions = previous then return previous; end if;
  lock table notification_queue in access exclusive mode;

  -- What the current table holds besides its rows, read before it goes.
  select coalesce(c.reloptions, (select p.reloptions from pg_inherits i join pg_class p on p.oid = i.inhrelid
                                  where i.inhparent = c.oid limit 1))
    into storage from pg_class c where c.oid = old_oid;
  select string_agg(quote_ident(attname), ', ' order by attnum) into columns
    from pg_attribute where attrelid = old_oid and attnum > 0 and not attisdropped and attgenerated = '';
  -- A partitioned table's index reads `ON ONLY`: the new one's must reach its partitions.
  select array_agg(replace(indexdef, ' ON ONLY ', ' ON ') order by indexname) into indexes
    from pg_indexes i
   where i.schemaname = current_schema() and i.tablename = 'notification_queue'
     and i.indexname not in ('notification_queue_pkey', 'notification_queue_dedupe');
  select array_agg(format('alter table notification_queue add constraint %I %s', conname, pg_get_constraintdef(oid)))
    into foreign_keys from pg_constraint where conrelid = old_oid and contype = 'f';
  select array_agg(pg_get_triggerdef(oid)) into triggers
    from pg_trigger where tgrelid = old_oid and not tgisinternal and tgname <> 'herald_queue_deleted';
  select array_agg(format('grant %s on notification_queue to %s', a.privilege_type,
                          case when a.grantee = 0 then 'public' else quote_ident(a.grantee::regrole::text) end))
    into grants from pg_class c, aclexplode(c.relacl) a
   where c.oid = old_oid and a.grantee <> c.relowner;

  -- Unique indexes must hold the partition key: only the primary key and the dedupe key have one.
  if exists (select 1 from pg_index x where x.indrelid = old_oid and x.indisunique
               and x.indexrelid::regclass::text not in ('notification_queue_pkey', 'notification_queue_dedupe')) then
    raise exception 'notification_queue has a unique index herald_partition_queue does not know';
  end if;

  alter table if exists push_receipts drop constraint if exists push_receipts_queue_id_fkey;
  alter table if exists inbox drop constraint if exists inbox_queue_id_fkey;

  if partitions = 1 then
    execute 'create table herald_queue_new (like notification_queue including defaults including generated
               including constraints including storage including comments including statistics)';
    if storage is not null then
      execute format('alter table herald_queue_new set (%s)', array_to_string(storage, ', '));
    end if;
  else
    execute 'create table herald_queue_new (like notification_queue including defaults including generated
               including constraints including storage including comments including statistics)
             partition by hash (recipient_user_id)';
    for k in 0 .. partitions - 1 loop
      execute format('create table herald_queue_new_p%s partition of herald_queue_new
                        for values with (modulus %s, remainder %s) %s',
                     k, partitions, k,
                     case when storage is null then '' else format('with (%s)', array_to_string(storage, ', ')) end);
    end loop;
  end if;
  execute format('insert into herald_queue_new (%s) select %s from notification_queue', columns, columns);
  drop table notification_queue;
  alter table herald_queue_new rename to notification_queue;
  for k in 0 .. partitions - 1 loop
    if partitions > 1 then
      execute format('alter table herald_queue_new_p%s rename to notification_queue_p%s', k, k);
    end if;
  end loop;

  if partitions = 1 then
    alter table notification_queue add constraint notification_queue_pkey primary key (id);
    create unique index notification_queue_dedupe on notification_queue (dedupe_key) where dedupe_key is not null;
    if to_regclass('push_receipts') is not null then
      alter table push_receipts add constraint push_receipts_queue_id_fkey
        foreign key (queue_id) references notification_queue (id) on delete cascade;
    end if;
    if to_regclass('inbox') is not null then
      alter table inbox add constraint inbox_queue_id_fkey
        foreign key (queue_id) references notification_queue (id) on delete set null;
    end if;
  else
    alter table notification_queue add constraint notification_queue_pkey primary key (id, recipient_user_id);
    create unique index notification_queue_dedupe on notification_queue (dedupe_key, recipient_user_id)
      where dedupe_key is not null;
    create trigger herald_queue_deleted after delete on notification_queue
      referencing old table as gone for each statement execute function herald_queue_deleted();
  end if;
  foreach def in array coalesce(indexes, '{}') loop execute def; end loop;
  foreach def in array coalesce(foreign_keys, '{}') loop execute def; end loop;
  foreach def in array coalesce(triggers, '{}') loop execute def; end loop;
  foreach def in array coalesce(grants, '{}') loop execute def; end loop;

  perform herald_restrict_table('notification_queue');
  for k in 0 .. partitions - 1 loop
    if partitions > 1 then
      perform herald_restrict_table(format('notification_queue_p%s', k)::regclass);
    end if;
  end loop;
  analyze notification_queue;
  return previous;
end
$$;

revoke all on function herald_queue_partitions() from public;
revoke all on function herald_queue_deleted() from public;
revoke all on function herald_partition_queue(int) from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_queue_partitions() from %I', app_role);
    execute format('revoke all on function herald_queue_deleted() from %I', app_role);
    execute format('revoke all on function herald_partition_queue(int) from %I', app_role);
  end loop;
end $$;

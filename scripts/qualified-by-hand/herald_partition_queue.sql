
declare
  previous int := public.herald_queue_partitions();
  old_oid oid := 'public.notification_queue'::regclass;
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
  lock table public.notification_queue in access exclusive mode;

  -- What the current table holds besides its rows, read before it goes.
  select coalesce(c.reloptions, (select p.reloptions from pg_inherits i join pg_class p on p.oid = i.inhrelid
                                  where i.inhparent = c.oid limit 1))
    into storage from pg_class c where c.oid = old_oid;
  select string_agg(quote_ident(attname), ', ' order by attnum) into columns
    from pg_attribute where attrelid = old_oid and attnum > 0 and not attisdropped and attgenerated = '';
  -- A partitioned table's index reads `ON ONLY`: the new one's must reach its partitions.
  select array_agg(replace(indexdef, ' ON ONLY ', ' ON ') order by indexname) into indexes
    from pg_indexes i
   where i.schemaname = 'public' and i.tablename = 'notification_queue'
     and i.indexname not in ('notification_queue_pkey', 'notification_queue_dedupe');
  select array_agg(format('alter table public.notification_queue add constraint %I %s', conname, pg_get_constraintdef(oid)))
    into foreign_keys from pg_constraint where conrelid = old_oid and contype = 'f';
  select array_agg(pg_get_triggerdef(oid)) into triggers
    from pg_trigger where tgrelid = old_oid and not tgisinternal and tgname <> 'herald_queue_deleted';
  select array_agg(format('grant %s on public.notification_queue to %s', a.privilege_type,
                          case when a.grantee = 0 then 'public' else quote_ident(a.grantee::regrole::text) end))
    into grants from pg_class c, aclexplode(c.relacl) a
   where c.oid = old_oid and a.grantee <> c.relowner;

  -- Unique indexes must hold the partition key: only the primary key and the dedupe key have one.
  if exists (select 1 from pg_index x where x.indrelid = old_oid and x.indisunique
               and x.indexrelid::regclass::text not in ('public.notification_queue_pkey', 'public.notification_queue_dedupe')) then
    raise exception 'notification_queue has a unique index herald_partition_queue does not know';
  end if;

  alter table if exists public.push_receipts drop constraint if exists push_receipts_queue_id_fkey;
  alter table if exists public.inbox drop constraint if exists inbox_queue_id_fkey;

  if partitions = 1 then
    execute 'create table public.herald_queue_new (like public.notification_queue including defaults including generated
               including constraints including storage including comments including statistics)';
    if storage is not null then
      execute format('alter table public.herald_queue_new set (%s)', array_to_string(storage, ', '));
    end if;
  else
    execute 'create table public.herald_queue_new (like public.notification_queue including defaults including generated
               including constraints including storage including comments including statistics)
             partition by hash (recipient_user_id)';
    for k in 0 .. partitions - 1 loop
      execute format('create table public.herald_queue_new_p%s partition of public.herald_queue_new
                        for values with (modulus %s, remainder %s) %s',
                     k, partitions, k,
                     case when storage is null then '' else format('with (%s)', array_to_string(storage, ', ')) end);
    end loop;
  end if;
  execute format('insert into public.herald_queue_new (%s) select %s from public.notification_queue', columns, columns);
  drop table public.notification_queue;
  alter table public.herald_queue_new rename to notification_queue;
  for k in 0 .. partitions - 1 loop
    if partitions > 1 then
      execute format('alter table public.herald_queue_new_p%s rename to notification_queue_p%s', k, k);
    end if;
  end loop;

  if partitions = 1 then
    alter table public.notification_queue add constraint notification_queue_pkey primary key (id);
    create unique index notification_queue_dedupe on public.notification_queue (dedupe_key) where dedupe_key is not null;
    if to_regclass('public.push_receipts') is not null then
      alter table public.push_receipts add constraint push_receipts_queue_id_fkey
        foreign key (queue_id) references public.notification_queue (id) on delete cascade;
    end if;
    if to_regclass('public.inbox') is not null then
      alter table public.inbox add constraint inbox_queue_id_fkey
        foreign key (queue_id) references public.notification_queue (id) on delete set null;
    end if;
  else
    alter table public.notification_queue add constraint notification_queue_pkey primary key (id, recipient_user_id);
    create unique index notification_queue_dedupe on public.notification_queue (dedupe_key, recipient_user_id)
      where dedupe_key is not null;
    create trigger herald_queue_deleted after delete on public.notification_queue
      referencing old table as gone for each statement execute function public.herald_queue_deleted();
  end if;
  foreach def in array coalesce(indexes, '{}') loop execute def; end loop;
  foreach def in array coalesce(foreign_keys, '{}') loop execute def; end loop;
  foreach def in array coalesce(triggers, '{}') loop execute def; end loop;
  foreach def in array coalesce(grants, '{}') loop execute def; end loop;

  perform public.herald_restrict_table('public.notification_queue');
  for k in 0 .. partitions - 1 loop
    if partitions > 1 then
      perform public.herald_restrict_table(format('public.notification_queue_p%s', k)::regclass);
    end if;
  end loop;
  analyze public.notification_queue;
  return previous;
end

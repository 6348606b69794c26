-- Quiet everywhere once read (sql/058) becomes a type's choice, as follow-ups and digests are: a type
-- turns it on with `quiet_once_read`, and a type that does not is read as before 058, its other
-- copies still sent and no badge correction asked for.
--
--     update notification_types set quiet_once_read = true where type = 'pattern_alert';
--
-- Off by default: a deployment that upgrades sends what it sent before, and no silent pushes it did
-- not ask for. The read's trigger looks the entry's type up (one probe of the type's key) before it
-- does anything; the pass's check of its batch (`QueueStore.readElsewhere`) reads the same flag.
alter table notification_types add column if not exists quiet_once_read boolean not null default false;
comment on column notification_types.quiet_once_read is
  'A read or action on the notification withdraws its copies not yet sent and corrects the badge on the person''s devices';

create or replace function public.herald_read_elsewhere() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select 1 from public.notification_types t where t.type = new.type and t.quiet_once_read) then
    return null;
  end if;
  with target as (
    select q.id from public.notification_queue q
     where q.id in (select public.herald_waiting_copies(new.user_id, new.notification_key, new.queue_id))
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
       and not coalesce(q.locked_until >= now(), false)
     for update
  ), u as (
    update public.notification_queue q
       set status = 'skipped', skip_reason = 'read_elsewhere', permanent = false, locked_until = null,
           locked_by = null, updated_at = now()
      from target where q.id = target.id
    returning q.id
  )
  insert into public.notification_events (queue_id, event, reason, details)
  select id, 'skipped', 'read_elsewhere',
         jsonb_build_object('rule', 'read_elsewhere', 'entry', new.id,
                            'by', case when new.action is distinct from old.action then new.action else 'read' end)
    from u;
  perform public.herald_ask_badge_sync(new.user_id);
  return null;
end
$$;

-- A read of a notification whose type uses none of follow-ups, quiet once read and digests still
-- passed three triggers on `inbox`, the follow-up cancel (sql/066), the read-elsewhere withdrawal
-- (sql/066) and the digest's read (sql/059). The server prepares each trigger's WHEN clause again for
-- every statement, and the digest's held a LIKE: +10 % of the backend's CPU on a one-row read.
-- They are now one trigger, `herald_inbox_read`, whose WHEN reads one column:
--   * `inbox.read_effects`: reading the entry does more than mark it — its notification has a
--     follow-up chain or is quiet once read (the entry's `follows_up`, `quiet_once_read`), or it is a
--     digest (its key `digest:…`). It is written with the entry, from the same queue row.
--   * The trigger function tells a read from an action and calls what the entry uses, in the order the
--     three triggers ran: the chain's cancel, the withdrawal of the other copies, the digest's items.
alter table inbox add column if not exists read_effects boolean not null default false;

-- The chain's pending steps cancelled by a read (or an action) of `entry`.
create or replace function public.herald_follow_up_cancel(entry public.inbox, acted boolean) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
  why jsonb := case when acted
                    then jsonb_build_object('satisfied_by', 'acted', 'action', entry.action, 'by', entry.user_id,
                                            'at', entry.actioned_at)
                    else jsonb_build_object('satisfied_by', 'read', 'by', entry.user_id, 'at', entry.read_at) end;
begin
  -- Nothing to cancel while no type has a policy, nor for an entry whose notification has no chain.
  if not exists (select 1 from public.notification_types t where t.follow_up is not null) then
    return;
  end if;
  if not exists (select 1 from public.notification_queue q
                  where q.recipient_user_id = entry.user_id and q.notification_group = entry.notification_key
                    and (q.follows_up or q.follow_up_of is not null))
     and not exists (select 1 from public.notification_queue q where q.id = entry.queue_id and q.follows_up) then
    return;
  end if;
  with sources as (
    -- The chains this entry is part of: those its own notification started, and those that told it.
    select q.id from public.notification_queue q
     where q.recipient_user_id = entry.user_id and q.notification_group = entry.notification_key and q.follows_up
    union
    select q.id from public.notification_queue q where q.id = entry.queue_id and q.follows_up
    union
    select q.follow_up_of from public.notification_queue q
     where q.recipient_user_id = entry.user_id and q.notification_group = entry.notification_key
       and q.follow_up_of is not null
  ), target as (
    select q.id from public.notification_queue q where q.follow_up_of in (select id from sources)
  ), u as (
    update public.notification_queue q
       set status = 'skipped', skip_reason = 'follow_up_satisfied', locked_until = null, locked_by = null,
           updated_at = now()
     where q.id in (select id from target)
       and q.status in ('pending', 'failed') and not q.permanent
       and not coalesce(q.locked_until >= now(), false)
       and (acted or q.payload -> 'follow_up' ->> 'until' in ('read', 'delivered'))
    returning q.id
  )
  insert into public.notification_events (queue_id, event, reason, details)
  select u.id, 'skipped', 'follow_up_satisfied', why from u;
end
$$;

-- The copies of `entry`'s notification not yet sent withdrawn, and a badge correction asked for, when
-- its type is quiet once read; `read_by` is the action, or 'read'.
create or replace function public.herald_withdraw_read_copies(entry public.inbox, read_by text) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select 1 from public.notification_types t where t.type = entry.type and t.quiet_once_read) then
    return;
  end if;
  with target as (
    select q.id from public.notification_queue q
     where q.id in (select public.herald_waiting_copies(entry.user_id, entry.notification_key, entry.queue_id))
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
  select id, 'skipped', 'read_elsewhere', jsonb_build_object('rule', 'read_elsewhere', 'entry', entry.id, 'by', read_by)
    from u;
  perform public.herald_ask_badge_sync(entry.user_id);
end
$$;

-- A digest's entry read: its items' entries are read with it.
create or replace function public.herald_digest_read_items(entry public.inbox) returns void
language sql
set search_path = pg_catalog, pg_temp
as $$
  update public.inbox i set is_read = true, read_at = coalesce(i.read_at, entry.read_at, now())
   where i.user_id = entry.user_id and not i.is_read
     and i.notification_key in (select it.entry_key from public.notification_digests d
                                  join public.notification_digest_items it on it.digest_id = d.id
                                 where d.user_id = entry.user_id and d.notification_group = entry.notification_key);
$$;

create or replace function public.herald_inbox_read() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  was_read boolean := new.is_read and not old.is_read;
  acted boolean := new.action is not null and new.action is distinct from old.action;
begin
  if not (was_read or acted) then
    return null;
  end if;
  if new.follows_up then
    perform public.herald_follow_up_cancel(new, acted);
  end if;
  if new.quiet_once_read then
    perform public.herald_withdraw_read_copies(new, case when new.action is distinct from old.action
                                                         then new.action else 'read' end);
  end if;
  if was_read and new.notification_key like 'digest:%' then
    perform public.herald_digest_read_items(new);
  end if;
  return null;
end
$$;

drop trigger if exists herald_follow_up_read_cancel on inbox;
drop trigger if exists herald_inbox_read_elsewhere on inbox;
drop trigger if exists herald_inbox_digest_read on inbox;
drop function if exists public.herald_follow_up_read_cancel();
drop function if exists public.herald_read_elsewhere();
drop function if exists public.herald_inbox_digest_read();

-- The entry written with what its notification uses, and whether its read does more.
CREATE OR REPLACE FUNCTION public.herald_queue_entries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  insert into public.inbox (id, user_id, queue_id, notification_key, type, priority, title, body, title_en, title_ar,
                     body_en, body_ar, deep_link, data, image_url, scheduled_at, related_entity_id,
                     related_entity_type, created_at, follows_up, quiet_once_read,
                     read_effects)
  select distinct on (b.recipient_user_id, coalesce(b.notification_group, b.id::text))
         b.id, b.recipient_user_id, b.id, coalesce(b.notification_group, b.id::text), b.kind, b.priority,
         /* public.herald_payload_text(b.payload, 'title', u.locale) */ ((case when jsonb_typeof((b.payload)::jsonb) = 'object' then left(coalesce(
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('title')::text || '_' || lower(split_part(replace(coalesce((u.locale)::text, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then (b.payload)::jsonb ->> (('title')::text || '_' || lower(split_part(replace(coalesce((u.locale)::text, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('title')::text || '_en')) = 'string' then (b.payload)::jsonb ->> (('title')::text || '_en') end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> ('title')::text) = 'string' then (b.payload)::jsonb ->> ('title')::text end, '')), 4000) end)::text), /* public.herald_payload_text(b.payload, 'body', u.locale) */ ((case when jsonb_typeof((b.payload)::jsonb) = 'object' then left(coalesce(
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('body')::text || '_' || lower(split_part(replace(coalesce((u.locale)::text, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then (b.payload)::jsonb ->> (('body')::text || '_' || lower(split_part(replace(coalesce((u.locale)::text, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('body')::text || '_en')) = 'string' then (b.payload)::jsonb ->> (('body')::text || '_en') end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> ('body')::text) = 'string' then (b.payload)::jsonb ->> ('body')::text end, '')), 4000) end)::text),
         /* public.herald_payload_text(b.payload, 'title', 'en') */ ((case when jsonb_typeof((b.payload)::jsonb) = 'object' then left(coalesce(
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('title')::text || '_' || lower(split_part(replace(coalesce(('en')::text, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then (b.payload)::jsonb ->> (('title')::text || '_' || lower(split_part(replace(coalesce(('en')::text, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('title')::text || '_en')) = 'string' then (b.payload)::jsonb ->> (('title')::text || '_en') end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> ('title')::text) = 'string' then (b.payload)::jsonb ->> ('title')::text end, '')), 4000) end)::text), /* public.herald_payload_text(b.payload, 'title', 'ar') */ ((case when jsonb_typeof((b.payload)::jsonb) = 'object' then left(coalesce(
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('title')::text || '_' || lower(split_part(replace(coalesce(('ar')::text, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then (b.payload)::jsonb ->> (('title')::text || '_' || lower(split_part(replace(coalesce(('ar')::text, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('title')::text || '_en')) = 'string' then (b.payload)::jsonb ->> (('title')::text || '_en') end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> ('title')::text) = 'string' then (b.payload)::jsonb ->> ('title')::text end, '')), 4000) end)::text),
         /* public.herald_payload_text(b.payload, 'body', 'en') */ ((case when jsonb_typeof((b.payload)::jsonb) = 'object' then left(coalesce(
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('body')::text || '_' || lower(split_part(replace(coalesce(('en')::text, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then (b.payload)::jsonb ->> (('body')::text || '_' || lower(split_part(replace(coalesce(('en')::text, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('body')::text || '_en')) = 'string' then (b.payload)::jsonb ->> (('body')::text || '_en') end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> ('body')::text) = 'string' then (b.payload)::jsonb ->> ('body')::text end, '')), 4000) end)::text), /* public.herald_payload_text(b.payload, 'body', 'ar') */ ((case when jsonb_typeof((b.payload)::jsonb) = 'object' then left(coalesce(
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('body')::text || '_' || lower(split_part(replace(coalesce(('ar')::text, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then (b.payload)::jsonb ->> (('body')::text || '_' || lower(split_part(replace(coalesce(('ar')::text, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> (('body')::text || '_en')) = 'string' then (b.payload)::jsonb ->> (('body')::text || '_en') end, ''),
           nullif(case when jsonb_typeof((b.payload)::jsonb -> ('body')::text) = 'string' then (b.payload)::jsonb ->> ('body')::text end, '')), 4000) end)::text),
         -- A link the app can open: `scheme://…` in printable ASCII, at most 512 bytes (as the sends
         -- check it); anything else is not kept.
         case when jsonb_typeof(b.payload -> 'deep_link') = 'string' and octet_length(b.payload ->> 'deep_link') <= 512
                   and b.payload ->> 'deep_link' ~ '^[A-Za-z][A-Za-z0-9+.-]*://[!-~]*$'
              then b.payload ->> 'deep_link' end,
         case when jsonb_typeof(b.payload -> 'data') = 'object' then b.payload -> 'data' else '{}'::jsonb end,
         case when jsonb_typeof(b.payload -> 'image_url') = 'string' and length(b.payload ->> 'image_url') <= 2048
                   and b.payload ->> 'image_url' ~ '^https?://[^[:space:]/]+[^[:space:]]*$'
              then b.payload ->> 'image_url' end,
         b.scheduled_at, b.related_entity_id, b.related_entity_type, b.created_at,
         coalesce(b.follows_up, false) or b.follow_up_of is not null, b.quiet_once_read,
         coalesce(b.follows_up, false) or b.follow_up_of is not null or b.quiet_once_read
           or coalesce(b.notification_group like 'digest:%', false)
    from born b left join public.user_profiles u on u.user_id = b.recipient_user_id
   order by b.recipient_user_id, coalesce(b.notification_group, b.id::text), b.id
  on conflict do nothing;
  return null;
end
$function$;

-- The entries whose read does more, brought up to date before the trigger reads the column.
update inbox set read_effects = true
 where not read_effects and (follows_up or quiet_once_read or notification_key like 'digest:%');

drop trigger if exists herald_inbox_read on inbox;
create trigger herald_inbox_read after update of is_read, action on inbox
  for each row when (new.read_effects)
  execute function public.herald_inbox_read();

do $$
declare
  fn text;
  app_role text;
begin
  foreach fn in array array['public.herald_follow_up_cancel(public.inbox, boolean)',
                            'public.herald_withdraw_read_copies(public.inbox, text)',
                            'public.herald_digest_read_items(public.inbox)', 'public.herald_inbox_read()']
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated', 'service_role') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

-- A read of a notification whose type uses none of follow-ups and quiet once read called two
-- security-definer functions, the follow-up cancel (sql/057) and the read-elsewhere withdrawal
-- (sql/058, sql/065), each to find it had nothing to do: +35 µs on a read of 62 µs. The entry now
-- carries what its notification uses, and the triggers' WHEN clauses read it, so the server calls
-- neither function for an entry that uses neither:
--   * `inbox.follows_up`: its notification starts a follow-up chain or is one of its steps (the queue
--     row's `follows_up`, or its `follow_up_of`);
--   * `inbox.quiet_once_read`: its type was quiet once read when it was written (the queue row's
--     `quiet_once_read`, which the type check sets from the type's flag, as it sets `follows_up`).
-- Both are written with the entry, from the queue row that writes it; a type's flag turned on or off
-- later holds for the notifications written after. Entries not yet read are brought up to date here.
-- (A step's own time still checks its chain in the claim's transaction: a read the trigger skips
-- cannot send a step whose notification was read.)
alter table notification_queue add column if not exists quiet_once_read boolean not null default false;
alter table inbox add column if not exists follows_up boolean not null default false;
alter table inbox add column if not exists quiet_once_read boolean not null default false;

create or replace function public.herald_queue_type() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  type_priority text;
  type_critical boolean;
  type_follow_up boolean;
  type_quiet boolean;
  digested boolean;
begin
  select t.priority, t.critical, t.follow_up is not null, t.quiet_once_read, t.digested
    into type_priority, type_critical, type_follow_up, type_quiet, digested
    from public.notification_types t where t.type = new.kind;
  if not found then
    raise exception 'unknown notification type "%"', left(new.kind, 64)
      using errcode = '23503',
            hint = 'add it first: insert into notification_types (type) values (''<type>'')';
  end if;
  if new.priority is null then
    new.priority := type_priority;
  end if;
  -- Each mark is tested first on the type's flag alone, so a type using none pays for three tests of
  -- a variable.
  if type_follow_up then
    if new.follow_up_of is null then
      new.follows_up := true;
    end if;
  end if;
  if type_quiet then
    new.quiet_once_read := true;
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

-- The entry written with what its notification uses.
CREATE OR REPLACE FUNCTION public.herald_queue_entries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  insert into public.inbox (id, user_id, queue_id, notification_key, type, priority, title, body, title_en, title_ar,
                     body_en, body_ar, deep_link, data, image_url, scheduled_at, related_entity_id,
                     related_entity_type, created_at, follows_up, quiet_once_read)
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
         coalesce(b.follows_up, false) or b.follow_up_of is not null, b.quiet_once_read
    from born b left join public.user_profiles u on u.user_id = b.recipient_user_id
   order by b.recipient_user_id, coalesce(b.notification_group, b.id::text), b.id
  on conflict do nothing;
  return null;
end
$function$;

-- Entries not yet read, brought up to date: those of a notification with a chain, and those of a type
-- quiet once read now.
update inbox i set follows_up = true
 where not i.is_read and not i.follows_up
   and (exists (select 1 from notification_queue q
                 where q.recipient_user_id = i.user_id and q.notification_group = i.notification_key
                   and (q.follows_up or q.follow_up_of is not null))
        or exists (select 1 from notification_queue q where q.id = i.queue_id and (q.follows_up or q.follow_up_of is not null)));
update inbox i set quiet_once_read = true
 where not i.is_read and not i.quiet_once_read
   and i.type in (select t.type from notification_types t where t.quiet_once_read);
update notification_queue q set quiet_once_read = true
 where q.status = 'pending' and not q.quiet_once_read
   and q.kind in (select t.type from notification_types t where t.quiet_once_read);

drop trigger if exists herald_follow_up_read_cancel on inbox;
create trigger herald_follow_up_read_cancel after update of is_read, action on inbox
  for each row
  when (new.follows_up and ((new.is_read and not old.is_read)
                            or (new.action is not null and new.action is distinct from old.action)))
  execute function public.herald_follow_up_read_cancel();

drop trigger if exists herald_inbox_read_elsewhere on inbox;
create trigger herald_inbox_read_elsewhere after update of is_read, action on inbox
  for each row
  when (new.quiet_once_read and ((new.is_read and not old.is_read)
                                 or (new.action is not null and new.action is distinct from old.action)))
  execute function public.herald_read_elsewhere();

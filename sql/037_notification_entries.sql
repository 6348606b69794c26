-- The user's notifications: one entry per notification, written when it is enqueued.
--
-- The app's list (get_notifications), the history (get_notification_history) and the in-app inbox are
-- one concept: an entry in `inbox` per notification — per `notification_group`, or per queue row when
-- it has none — whatever channels and devices carry it. A trigger on the queue writes the entry in the
-- statement that enqueues the notification, so delivery writes no row for it:
--
--   listed      once any queue row of the notification is `sent` (the entry lists from then on, and
--               counts towards the unread count and the push badge until it is read)
--   delivered   the earliest `sent_at` of those rows and the channel that carried it, read from the
--               queue; pruning a sent row folds both into the entry (`delivered_at`, `channel`)
--   text        the payload's own (`title`/`body`, `title_en`… : an app's or a backend's send); a kind
--               herald renders from its templates has none, and the record that sends it fills the
--               entry's text once, in the recipient's language and in both languages
--   actions     `action`/`actioned_at`, written by record_notification_action
--
-- An entry is kept 30 days after its delivery (the history's retention); one never delivered goes with
-- its queue row. A row written straight into `inbox` (no queue row) is an in-app notification
-- delivered when written.
--
-- `notification_history` is no longer written or read by this release. It stays, restricted, so the
-- previous release's passes can record while this migration runs; its entries are moved here.

alter table inbox alter column title drop not null;
alter table inbox alter column body drop not null;
alter table inbox add column if not exists notification_key text;
alter table inbox add column if not exists scheduled_at timestamptz;
alter table inbox add column if not exists delivered_at timestamptz;
alter table inbox add column if not exists channel text;
alter table inbox add column if not exists action text
  check (action in ('opened', 'dismissed', 'dose_marked_taken', 'symptom_logged', 'snoozed'));
alter table inbox add column if not exists actioned_at timestamptz;
alter table inbox add column if not exists related_entity_id text;
alter table inbox add column if not exists related_entity_type text;

-- The notification an entry stands for, and the queue rows of a notification by recipient and group.
update inbox i set notification_key = coalesce(q.notification_group, q.id::text)
  from notification_queue q where q.id = i.queue_id and i.notification_key is null;
update inbox i set notification_key = coalesce(i.queue_id, i.id)::text,
                   delivered_at = coalesce(i.delivered_at, i.created_at)
 where i.notification_key is null;
-- Before 037 every inbox row was written when its in-app copy was delivered.
update inbox i set delivered_at = i.created_at, channel = coalesce(i.channel, 'in_app')
 where i.delivered_at is null and i.queue_id is not null
   and exists (select 1 from notification_queue q where q.id = i.queue_id and q.status = 'sent');

-- Two in-app copies of one notification (a group fanned out to several in-app rows) become one entry.
delete from inbox i using inbox j
 where i.user_id = j.user_id and i.notification_key = j.notification_key
   and (i.created_at, i.id) > (j.created_at, j.id);
create unique index if not exists inbox_notification on inbox (user_id, notification_key);
create index if not exists inbox_delivered on inbox (delivered_at);
create index if not exists inbox_undelivered on inbox (created_at) where delivered_at is null;
create index if not exists notification_queue_group
  on notification_queue (recipient_user_id, notification_group) where notification_group is not null;

-- The history's entries: one per notification too, the earliest delivery of each.
insert into inbox as i (id, user_id, notification_key, type, title, body, scheduled_at, delivered_at,
                        channel, action, actioned_at, related_entity_id, related_entity_type, created_at)
select distinct on (h.user_id, coalesce(q.notification_group, h.id::text))
       h.id, h.user_id, coalesce(q.notification_group, h.id::text), h.notification_type, h.title, h.body,
       h.scheduled_time, h.delivered_time, h.channel, h.action, h.actioned_time, h.related_entity_id,
       h.related_entity_type, h.created_at
  from notification_history h left join notification_queue q on q.id = h.id
 order by h.user_id, coalesce(q.notification_group, h.id::text), h.delivered_time, h.id
on conflict (user_id, notification_key) do update
   set delivered_at = least(i.delivered_at, excluded.delivered_at),
       channel = coalesce(i.channel, excluded.channel),
       action = coalesce(i.action, excluded.action), actioned_at = coalesce(i.actioned_at, excluded.actioned_at),
       scheduled_at = coalesce(i.scheduled_at, excluded.scheduled_at),
       related_entity_id = coalesce(i.related_entity_id, excluded.related_entity_id),
       related_entity_type = coalesce(i.related_entity_type, excluded.related_entity_type);

-- ---------------------------------------------------------------------------------------------------
-- Writing the entry: one statement per enqueueing statement (a transition table), one entry per
-- recipient and notification, the first row's id as the entry's id (a single-row notification's entry
-- has its queue row's id: send_notification's `notification_id`). A notification that already has its
-- entry (an escalation, a repeated enqueue) adds none.
-- SECURITY DEFINER: whichever role may enqueue (a pass, a backend's own role) gets the entry written.
create or replace function herald_queue_entries() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
  insert into inbox (id, user_id, queue_id, notification_key, type, priority, title, body, title_en, title_ar,
                     body_en, body_ar, deep_link, data, image_url, scheduled_at, related_entity_id,
                     related_entity_type, created_at)
  select distinct on (b.recipient_user_id, coalesce(b.notification_group, b.id::text))
         b.id, b.recipient_user_id, b.id, coalesce(b.notification_group, b.id::text), b.kind, b.priority,
         herald_payload_text(b.payload, 'title', u.locale), herald_payload_text(b.payload, 'body', u.locale),
         herald_payload_text(b.payload, 'title', 'en'), herald_payload_text(b.payload, 'title', 'ar'),
         herald_payload_text(b.payload, 'body', 'en'), herald_payload_text(b.payload, 'body', 'ar'),
         -- A link the app can open: `scheme://…` in printable ASCII, at most 512 bytes (as the sends
         -- check it); anything else is not kept.
         case when jsonb_typeof(b.payload -> 'deep_link') = 'string' and octet_length(b.payload ->> 'deep_link') <= 512
                   and b.payload ->> 'deep_link' ~ '^[A-Za-z][A-Za-z0-9+.-]*://[!-~]*$'
              then b.payload ->> 'deep_link' end,
         case when jsonb_typeof(b.payload -> 'data') = 'object' then b.payload -> 'data' else '{}'::jsonb end,
         case when jsonb_typeof(b.payload -> 'image_url') = 'string' and length(b.payload ->> 'image_url') <= 2048
                   and b.payload ->> 'image_url' ~ '^https?://[^[:space:]/]+[^[:space:]]*$'
              then b.payload ->> 'image_url' end,
         b.scheduled_at, b.related_entity_id, b.related_entity_type, b.created_at
    from born b left join user_profiles u on u.user_id = b.recipient_user_id
   order by b.recipient_user_id, coalesce(b.notification_group, b.id::text), b.id
  on conflict do nothing;
  return null;
end
$$;

-- A payload's own text for `lang` as the renderer picks it: `<key>_<lang>`, else `<key>_en`, else
-- `<key>`; the first non-empty string. Null when the payload has none (a kind rendered from templates).
create or replace function herald_payload_text(payload jsonb, key text, lang text) returns text
language sql immutable
as $$
  select left(coalesce(
           nullif(case when jsonb_typeof(payload -> (key || '_' || lower(split_part(replace(coalesce(lang, 'en'), '_', '-'), '-', 1)))) = 'string'
                       then payload ->> (key || '_' || lower(split_part(replace(coalesce(lang, 'en'), '_', '-'), '-', 1))) end, ''),
           nullif(case when jsonb_typeof(payload -> (key || '_en')) = 'string' then payload ->> (key || '_en') end, ''),
           nullif(case when jsonb_typeof(payload -> key) = 'string' then payload ->> key end, '')), 4000)
   where jsonb_typeof(payload) = 'object'
$$;

drop trigger if exists herald_queue_entries on notification_queue;
create trigger herald_queue_entries after insert on notification_queue
  referencing new table as born for each statement execute function herald_queue_entries();

-- A row written straight into the inbox: its key, and delivered when written unless a queue row
-- stands behind it (the previous release's in-app copies, recorded while this migration runs).
create or replace function herald_inbox_written() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
  if new.notification_key is null then
    select coalesce(q.notification_group, q.id::text) into new.notification_key
      from notification_queue q where q.id = new.queue_id;
    new.notification_key := coalesce(new.notification_key, coalesce(new.queue_id, new.id)::text);
    new.delivered_at := coalesce(new.delivered_at, new.created_at);
    new.channel := coalesce(new.channel, 'in_app');
  end if;
  return new;
end
$$;
drop trigger if exists herald_inbox_written on inbox;
create trigger herald_inbox_written before insert on inbox
  for each row execute function herald_inbox_written();

-- ---------------------------------------------------------------------------------------------------
-- The caller's listed entries: delivered ones, with when and on which channel. Read by the RPCs below
-- and by the pass for the push badge (the unread ones).
create or replace function herald_listed_entries(uid uuid)
returns table (id uuid, user_id uuid, type text, priority text, title text, body text, title_en text,
               title_ar text, body_en text, body_ar text, deep_link text, image_url text, data jsonb,
               is_read boolean, read_at timestamptz, created_at timestamptz, scheduled_at timestamptz,
               delivered_at timestamptz, channel text, action text, actioned_at timestamptz,
               related_entity_id text, related_entity_type text)
language sql stable set search_path = public, pg_temp
as $$
  select i.id, i.user_id, i.type, i.priority, i.title, i.body, i.title_en, i.title_ar, i.body_en, i.body_ar,
         i.deep_link, i.image_url, i.data, i.is_read, i.read_at, i.created_at,
         coalesce(i.scheduled_at, i.created_at), coalesce(i.delivered_at, s.at), coalesce(i.channel, s.channel),
         i.action, i.actioned_at, i.related_entity_id, i.related_entity_type
    from inbox i
    left join lateral (
      select min(coalesce(q.sent_at, q.updated_at)) as at,
             (array_agg(q.channel order by coalesce(q.sent_at, q.updated_at), q.id))[1] as channel
        from notification_queue q
       where i.delivered_at is null and q.status = 'sent' and q.recipient_user_id = i.user_id
         and (q.id = i.queue_id or q.notification_group = i.notification_key)) s on true
   where i.user_id = uid and (i.delivered_at is not null or s.at is not null)
$$;

-- The unread listed entries of each of `users` (the push badge counts them).
create or replace function herald_unread_entries(users uuid[])
returns table (user_id uuid, unread int)
language sql stable set search_path = public, pg_temp
as $$
  select i.user_id, count(*)::int
    from inbox i
   where i.user_id = any(users) and not i.is_read
     and (i.delivered_at is not null
          or exists (select 1 from notification_queue q
                      where q.status = 'sent' and q.recipient_user_id = i.user_id
                        and (q.id = i.queue_id or q.notification_group = i.notification_key)))
   group by i.user_id
$$;

-- The entry a notification id names for `uid`: an entry's own id, or the id of any queue row of its
-- notification (a push payload's `notification_id`/`queue_id`).
create or replace function herald_entry_of(uid uuid, notification_id uuid) returns uuid
language sql stable set search_path = public, pg_temp
as $$
  select coalesce(
    (select i.id from inbox i where i.id = notification_id and i.user_id = uid),
    (select i.id from notification_queue q
       join inbox i on i.user_id = uid and i.notification_key = coalesce(q.notification_group, q.id::text)
      where q.id = notification_id and q.recipient_user_id = uid))
$$;

-- ---------------------------------------------------------------------------------------------------
-- The push API's list: the caller's notifications, newest first, each once whatever carried it. The
-- parameters, errors and answer are as before (docs/app-contract.md#the-notification-list);
-- `unread_count` is what the next push's badge starts from; `created_at` is when it was delivered.
create or replace function get_notifications(
  "limit" int default 20, "offset" int default 0, type text default null, unread_only boolean default false
) returns jsonb
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  page_limit int := get_notifications."limit";
  page_offset int := get_notifications."offset";
  only_unread boolean := coalesce(get_notifications.unread_only, false);
  types text[];
  result jsonb;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if page_limit is null or page_limit < 1 or page_limit > 100 then
    perform herald_raise('validation_error', 'limit must be between 1 and 100');
  end if;
  if page_offset is null or page_offset < 0 then
    perform herald_raise('validation_error', 'offset must be 0 or more');
  end if;
  if get_notifications.type is not null then
    select array_agg(distinct btrim(t)) into types
      from unnest(string_to_array(get_notifications.type, ',')) as t where btrim(t) <> '';
    if types is null then
      perform herald_raise('validation_error', 'type must name one or more notification types, comma-separated');
    end if;
  end if;

  with listed as materialized (select * from herald_listed_entries(caller)),
       chosen as (select * from listed l
                   where (types is null or l.type = any(types)) and (not only_unread or not l.is_read))
  select jsonb_build_object(
           'notifications', coalesce((
             select jsonb_agg(jsonb_build_object(
                      'id', p.id, 'user_id', p.user_id, 'notification_type', p.type, 'priority', p.priority,
                      'title_en', coalesce(p.title_en, p.title), 'title_ar', coalesce(p.title_ar, p.title),
                      'body_en', coalesce(p.body_en, p.body), 'body_ar', coalesce(p.body_ar, p.body),
                      'deep_link', p.deep_link, 'image_url', p.image_url, 'is_read', p.is_read,
                      'read_at', herald_ms(p.read_at), 'created_at', herald_ms(p.delivered_at))
                      order by p.delivered_at desc, p.id desc)
               from (select * from chosen c order by c.delivered_at desc, c.id desc
                      limit page_limit offset page_offset) p), '[]'::jsonb),
           'total_count', (select count(*) from chosen),
           'unread_count', (select count(*) from listed l where not l.is_read),
           'limit', page_limit, 'offset', page_offset)
    into result;
  return result;
end
$$;

-- The history: every notification the caller was sent in the last `days` days (1–30), newest first,
-- one entry each, in its shape of before: `channel` is the one that carried it first.
create or replace function get_notification_history(days int default 30) returns jsonb
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if days is null or days < 1 or days > 30 then
    perform herald_raise('validation_error', 'days must be between 1 and 30 (history is kept 30 days)');
  end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object(
             'id', h.id, 'user_id', h.user_id, 'notification_type', h.type, 'channel', h.channel,
             'title', h.title, 'body', h.body, 'scheduled_time', herald_ms(h.scheduled_at),
             'delivered_time', herald_ms(h.delivered_at), 'actioned_time', herald_ms(h.actioned_at),
             'action', h.action, 'related_entity_id', h.related_entity_id,
             'related_entity_type', h.related_entity_type, 'created_at', herald_ms(h.created_at))
             order by h.delivered_at desc, h.id)
      from herald_listed_entries(caller) h
     where h.delivered_at >= now() - make_interval(days => get_notification_history.days)
  ), '[]'::jsonb);
end
$$;

-- Marks the caller's notifications read, named by the entry's id or any of its queue rows' ids.
create or replace function mark_notifications_read(notification_ids uuid[]) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  ids uuid[];
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if notification_ids is null then
    perform herald_raise('validation_error', 'notification_ids is required');
  end if;
  with named as (
    select herald_entry_of(caller, n) as id from unnest(notification_ids[1:1000]) n
  ), updated as (
    update inbox i set is_read = true, read_at = at
     where i.id in (select id from named) and i.user_id = caller and not i.is_read
    returning i.id
  )
  select coalesce(array_agg(id), '{}') into ids from updated;
  return jsonb_build_object('updated_count', cardinality(ids), 'notification_ids', to_jsonb(ids),
                            'read_at', herald_ms(at));
end
$$;

-- What the person did with a notification (the actions and their effects as before: opened reads
-- it, dose_marked_taken records the dose, symptom_logged today's log), on its entry. The id is the
-- entry's or one of its queue rows' (a push payload's `notification_id`/`queue_id`).
create or replace function record_notification_action(notification_id uuid, action text) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  entry inbox;
  marked int := 0;
  queued notification_queue;
  dose_at timestamptz;
  step text;
  zone text;
  dose_done boolean := false;
  log_done boolean := false;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if record_notification_action.action is null or record_notification_action.action not in
       ('opened', 'dismissed', 'dose_marked_taken', 'symptom_logged', 'snoozed') then
    perform herald_raise('validation_error',
      'action must be one of opened, dismissed, dose_marked_taken, symptom_logged, snoozed');
  end if;
  if record_notification_action.notification_id is null then
    perform herald_raise('validation_error', 'notification_id is required');
  end if;

  select * into entry from inbox i
   where i.id = herald_entry_of(caller, record_notification_action.notification_id) and i.user_id = caller
     and (i.delivered_at is not null or exists (
           select 1 from notification_queue q
            where q.status = 'sent' and q.recipient_user_id = caller
              and (q.id = i.queue_id or q.notification_group = i.notification_key)))
  for update;
  if entry.id is null then
    perform herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;
  if record_notification_action.action = 'opened' and not entry.is_read then
    marked := 1;
  end if;
  update inbox i
     set action = record_notification_action.action, actioned_at = at,
         is_read = i.is_read or marked > 0, read_at = case when marked > 0 then at else i.read_at end
   where i.id = entry.id
  returning i.* into entry;

  -- The queue row behind the entry, while the queue keeps it: its payload names the dose.
  select * into queued from notification_queue q
   where q.recipient_user_id = caller
     and q.id in (record_notification_action.notification_id, entry.queue_id)
   order by q.id = record_notification_action.notification_id desc limit 1;

  if record_notification_action.action = 'dose_marked_taken' then
    step := coalesce(queued.related_entity_id, entry.related_entity_id);
    dose_at := herald_try_timestamptz(queued.payload ->> 'dose_at');
    if dose_at is null and queued.id is null and entry.type = 'reminder' then
      select coalesce(entry.scheduled_at, entry.created_at) + make_interval(mins => p.dose_reminder_advance_minutes)
        into dose_at from user_profiles p where p.user_id = caller;
    end if;
    if step is not null and dose_at is not null then
      insert into dose_events as d (user_id, related_entity_id, scheduled_at, taken_at)
      values (caller, step, dose_at, at)
      on conflict (user_id, related_entity_id, scheduled_at)
        do update set taken_at = coalesce(d.taken_at, excluded.taken_at);
      dose_done := true;
    end if;

  elsif record_notification_action.action = 'symptom_logged' then
    select p.timezone into zone from user_profiles p where p.user_id = caller;
    insert into daily_logs (user_id, log_date, logged_at)
    values (caller, (at at time zone coalesce(zone, 'UTC'))::date, at)
    on conflict (user_id, log_date) do nothing;
    log_done := true;
  end if;

  return jsonb_build_object('id', entry.id, 'notification_id', record_notification_action.notification_id,
                            'action', entry.action, 'actioned_time', herald_ms(entry.actioned_at),
                            'marked_read', marked > 0, 'dose_recorded', dose_done, 'log_recorded', log_done);
end
$$;

-- Helpers for their callers only; the RPCs keep their grants (authenticated, not anon or PUBLIC).
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_queue_entries', 'herald_payload_text', 'herald_inbox_written',
                         'herald_listed_entries', 'herald_unread_entries', 'herald_entry_of')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

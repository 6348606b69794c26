-- Digests: a notification type may be collected, per person, into one notification sent at the end of
-- a window or once it holds its maximum number of items. A type is digested by one row beside its row
-- in notification_types; a type without one is sent as before.
--
--     insert into notification_type_digests (type, window_kind, window_seconds, max_items)
--     values ('message', 'fixed', 900, 20);            -- at most one message push every 15 minutes
--     insert into notification_type_digests (type, window_kind, send_at)
--     values ('calendar', 'local_time', '19:00');      -- the day's calendar rows at 19:00, the person's time
--
-- The windows (an item's time is its queue row's scheduled_at):
--   fixed       window_seconds after the first item
--   sliding     window_seconds after the latest item, at most max_wait_seconds after the first
--   local_time  the next send_at (a local time of day) in the person's zone after the first item
-- and, whatever the window, at once when it holds max_items items.
--
-- How a row joins (the statement trigger herald_queue_digests, after every insert into the queue):
--   * herald_queue_type marks each new row of a digested type, unless the type or the row is critical,
--     `skipped` with skip_reason `digested`: the row itself is never sent;
--   * each such row joins the open window of its person, type, channel and key (payload.digest_key, or
--     none) with ONE insert-or-update of notification_digests under the unique partial index of open
--     windows: concurrent enqueues meet in that index, so they never open two windows. The trigger sees
--     only rows the insert made, so a retried row (its dedupe key already in the queue) joins once;
--   * the window that opens enqueues the digest's own queue row, due at the window's end; each join
--     rewrites that row's texts (the count and the first items, in en, ar and pt, times in the person's
--     zone) and the list entry's, while the row has never been claimed. A row a pass has claimed takes
--     no more items: the join closes its window and opens the next (the queue row's lock orders the
--     join and the claim, which skips locked rows), so what a pass sends is what the window holds.
-- The digest's row goes through the pass as any other row: claimed once, held by quiet hours, counted
-- once by the rate limits. The list shows it as one entry with its items (get_notifications' `digest`);
-- reading it reads its items; its window and items go with that entry.

-- ---------------------------------------------------------------------------------------------------
-- The policies. The limits, refused with a readable message when the type is written:
--   window_seconds    1 s – 7 days (fixed, sliding)        max_wait_seconds  window_seconds – 7 days (sliding)
--   send_at           a local time of day (local_time)     max_items         1 – 100
--   shown_items       1 – 10, at most max_items            templates         {"en": …, "ar": …, "pt": …}: en
--                     required, each 1–200 characters; title_template names {count}, item_template
--                     may name {time} and {title}, more_template {more}
create table if not exists notification_type_digests (
  type              text primary key references notification_types (type) on delete cascade,
  window_kind       text not null,
  window_seconds    int,
  max_wait_seconds  int,
  send_at           time,
  max_items         int not null default 20,
  shown_items       int not null default 3,
  title_template    jsonb not null default '{"en": "{count} new notifications", "ar": "{count} إشعارات جديدة", "pt": "{count} novas notificações"}',
  item_template     jsonb not null default '{"en": "{time} {title}", "ar": "{time} {title}", "pt": "{time} {title}"}',
  more_template     jsonb not null default '{"en": "and {more} more", "ar": "و{more} غيرها", "pt": "e mais {more}"}',
  created_at        timestamptz not null default now(),
  constraint notification_type_digests_window_kind check (window_kind in ('fixed', 'sliding', 'local_time')),
  constraint notification_type_digests_window check (
    case window_kind when 'local_time' then send_at is not null
                     else window_seconds between 1 and 604800 end),
  constraint notification_type_digests_max_wait check (
    window_kind <> 'sliding' or max_wait_seconds between window_seconds and 604800),
  constraint notification_type_digests_max_items check (max_items between 1 and 100),
  constraint notification_type_digests_shown_items check (shown_items between 1 and least(max_items, 10))
);
select public.herald_restrict_table('notification_type_digests');

-- The readable refusals (a constraint's own message names only the constraint).
create or replace function public.herald_digest_policy_check() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  t text;
  template jsonb;
begin
  if new.window_kind is null or new.window_kind not in ('fixed', 'sliding', 'local_time') then
    raise exception 'digest of "%": window_kind must be fixed, sliding or local_time, not "%"',
      new.type, left(coalesce(new.window_kind, 'null'), 32) using errcode = '23514';
  end if;
  if new.window_kind = 'local_time' and new.send_at is null then
    raise exception 'digest of "%": a local_time window needs send_at, the local time it is sent at (e.g. 19:00)',
      new.type using errcode = '23514';
  end if;
  if new.window_kind <> 'local_time' and (new.window_seconds is null or new.window_seconds not between 1 and 604800) then
    raise exception 'digest of "%": window_seconds must be from 1 to 604800 (7 days), not %',
      new.type, coalesce(new.window_seconds::text, 'null') using errcode = '23514';
  end if;
  if new.window_kind = 'sliding' and (new.max_wait_seconds is null or new.max_wait_seconds not between new.window_seconds and 604800) then
    raise exception 'digest of "%": a sliding window needs max_wait_seconds from window_seconds (%) to 604800 (7 days), not %',
      new.type, new.window_seconds, coalesce(new.max_wait_seconds::text, 'null') using errcode = '23514';
  end if;
  if new.max_items is null or new.max_items not between 1 and 100 then
    raise exception 'digest of "%": max_items must be from 1 to 100, not %', new.type, coalesce(new.max_items::text, 'null')
      using errcode = '23514';
  end if;
  if new.shown_items is null or new.shown_items not between 1 and least(new.max_items, 10) then
    raise exception 'digest of "%": shown_items must be from 1 to % (at most max_items and 10), not %',
      new.type, least(new.max_items, 10), coalesce(new.shown_items::text, 'null') using errcode = '23514';
  end if;
  if (select n.critical from public.notification_types n where n.type = new.type) then
    raise exception 'digest of "%": a critical type is never digested', new.type using errcode = '23514';
  end if;
  foreach t in array array['title_template', 'item_template', 'more_template'] loop
    template := to_jsonb(new) -> t;
    if jsonb_typeof(template) is distinct from 'object' or jsonb_typeof(template -> 'en') is distinct from 'string'
       or exists (select 1 from jsonb_each(template) e
                   where e.key not in ('en', 'ar', 'pt') or jsonb_typeof(e.value) <> 'string'
                      or char_length(e.value #>> '{}') not between 1 and 200) then
      raise exception 'digest of "%": % must be an object of en (required), ar and pt texts of 1–200 characters', new.type, t
        using errcode = '23514';
    end if;
  end loop;
  return new;
end
$$;
drop trigger if exists notification_type_digests_check on notification_type_digests;
create trigger notification_type_digests_check before insert or update on notification_type_digests
  for each row execute function public.herald_digest_policy_check();

-- ---------------------------------------------------------------------------------------------------
-- The windows: one open (closed_at null) per person, type, channel and key. `queue_id` is the
-- digest's own queue row, `notification_group` its list entry's key.
create table if not exists notification_digests (
  id                  uuid primary key default gen_random_uuid(),
  user_id             uuid not null,
  type                text not null,
  channel             text not null,
  digest_key          text not null default '' check (char_length(digest_key) <= 128),
  notification_group  text not null,
  queue_id            uuid,
  opened_at           timestamptz not null,
  closes_at           timestamptz not null,
  deadline            timestamptz not null,
  item_count          int not null default 1,
  max_items           int not null,
  closed_at           timestamptz
);
select public.herald_restrict_table('notification_digests');
create unique index if not exists notification_digests_open
  on notification_digests (user_id, type, channel, digest_key) where closed_at is null;
create index if not exists notification_digests_group on notification_digests (user_id, notification_group);
create index if not exists notification_digests_queue on notification_digests (queue_id);

-- Each window's items, in the order they joined; `entry_key` is the item's list entry's key, `lines`
-- the first items' lines in the digest, by language.
create table if not exists notification_digest_items (
  digest_id  uuid not null references notification_digests (id) on delete cascade,
  item_id    uuid not null,
  position   int not null,
  entry_key  text not null,
  at         timestamptz not null,
  lines      jsonb,
  primary key (digest_id, item_id)
);
select public.herald_restrict_table('notification_digest_items');

-- ---------------------------------------------------------------------------------------------------
-- The check on every queue write (sql/035), which also marks a new row of a digested type: not when
-- the type or the row is critical, nor a digest's own row, nor a row written already decided.
create or replace function public.herald_queue_type() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  type_priority text;
  type_critical boolean;
  digested boolean;
begin
  select t.priority, t.critical, d.type is not null into type_priority, type_critical, digested
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
  if digested and tg_op = 'INSERT' and not type_critical and new.severity is distinct from 'critical'
     and new.status = 'pending' and new.escalated_from is null
     and (new.dedupe_key is null or new.dedupe_key not like 'digest:%') then
    new.status := 'skipped';
    new.skip_reason := 'digested';
  end if;
  return new;
end
$$;

-- When a window opened at `at` for `policy` ends, in `zone`: (its end, the latest it may move to).
create or replace function public.herald_digest_window(policy public.notification_type_digests, at timestamptz,
                                                       zone text, out closes_at timestamptz, out deadline timestamptz)
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  day date := (at at time zone zone)::date;
begin
  if policy.window_kind = 'local_time' then
    closes_at := (day + policy.send_at) at time zone zone;
    if closes_at <= at then
      closes_at := ((day + 1) + policy.send_at) at time zone zone;
    end if;
    deadline := closes_at;
  else
    closes_at := at + make_interval(secs => policy.window_seconds);
    deadline := at + make_interval(secs => case policy.window_kind when 'sliding' then policy.max_wait_seconds
                                                                   else policy.window_seconds end);
  end if;
end
$$;

-- An item's line in each language, written once when it joins among the first shown: its time in the
-- person's zone (8:30 PM in English, 20:30 in Arabic and Portuguese) and its title in the language.
create or replace function public.herald_digest_line(policy public.notification_type_digests, payload jsonb,
                                                     at timestamptz, zone text) returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  lang text;
  lines jsonb := '{}';
begin
  foreach lang in array array['en', 'ar', 'pt'] loop
    -- {time} first: the title, put in last, is never read for braces of its own.
    lines := lines || jsonb_build_object(lang, replace(replace(
               coalesce(policy.item_template ->> lang, policy.item_template ->> 'en'),
               '{time}', to_char(at at time zone zone, case lang when 'en' then 'FMHH12:MI AM' else 'HH24:MI' end)),
               '{title}', left(coalesce(nullif(payload ->> ('title_' || lang), ''), nullif(payload ->> 'title_en', ''),
                                        nullif(payload ->> 'title', ''), ''), 200)));
  end loop;
  return lines;
end
$$;

-- A digest's texts in each language (`title`/`body` in English, `title_ar`, `body_pt`, …): the title
-- with the count, the body with the first items' lines and how many more; and `digest` (its id, count
-- and first items' ids) for the app.
create or replace function public.herald_digest_texts(digest public.notification_digests,
                                                      policy public.notification_type_digests)
returns jsonb
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  lang text;
  texts jsonb := '{}';
  lines jsonb[];
  ids jsonb;
  body text;
begin
  select array_agg(i.lines order by i.position), jsonb_agg(i.item_id order by i.position) into lines, ids
    from public.notification_digest_items i
   where i.digest_id = digest.id and i.position <= policy.shown_items;
  foreach lang in array array['en', 'ar', 'pt'] loop
    select string_agg(l ->> lang, chr(10) order by n) into body from unnest(lines) with ordinality as u(l, n);
    if digest.item_count > policy.shown_items then
      body := concat_ws(chr(10), body, replace(coalesce(policy.more_template ->> lang, policy.more_template ->> 'en'),
                                               '{more}', (digest.item_count - policy.shown_items)::text));
    end if;
    texts := texts || jsonb_build_object(
      'title_' || lang, replace(coalesce(policy.title_template ->> lang, policy.title_template ->> 'en'),
                                '{count}', digest.item_count::text),
      'body_' || lang, left(coalesce(body, ''), 2000));
  end loop;
  return texts || jsonb_build_object('title', texts ->> 'title_en', 'body', texts ->> 'body_en',
                                     'digest', jsonb_build_object('id', digest.id, 'count', digest.item_count,
                                                                  'items', coalesce(ids, '[]')));
end
$$;

-- One item joins its window: one insert-or-update under notification_digests_open. The window that
-- opens enqueues the digest's row; a join rewrites its texts while no pass has claimed it, else closes
-- the window it found (taking its count back) and joins the next. `item` is a queue row, taken as a
-- record so that herald_partition_queue may replace the table.
create or replace function public.herald_digest_join(item record) returns uuid
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  policy public.notification_type_digests;
  zone text;
  lang text;
  item_at timestamptz := item.scheduled_at;
  item_key text := coalesce(left(case when jsonb_typeof(item.payload -> 'digest_key') = 'string'
                                      then item.payload ->> 'digest_key' end, 128), '');
  w record;
  d public.notification_digests;
  texts jsonb;
  taken int;
  opening uuid;
begin
  select * into policy from public.notification_type_digests p where p.type = item.kind;
  select coalesce(u.timezone, 'UTC'), case when u.locale ilike 'ar%' then 'ar' when u.locale ilike 'pt%' then 'pt' else 'en' end
    into zone, lang
    from public.user_profiles u where u.user_id = item.recipient_user_id;
  zone := coalesce(zone, 'UTC');
  select * into w from public.herald_digest_window(policy, item_at, zone);
  -- Each turn round this loop follows a window that ended, or one a pass took meanwhile.
  for attempt in 1..20 loop
    opening := gen_random_uuid();
    insert into public.notification_digests as o
           (id, user_id, type, channel, digest_key, notification_group, opened_at, closes_at, deadline, max_items, closed_at)
    values (opening, item.recipient_user_id, item.kind, item.channel, item_key, 'digest:' || opening, item_at,
            case when policy.max_items <= 1 then item_at else w.closes_at end, w.deadline, policy.max_items,
            case when policy.max_items <= 1 then now() end)
    on conflict (user_id, type, channel, digest_key) where closed_at is null do update
       set item_count = o.item_count + 1,
           closes_at = case when o.item_count + 1 >= o.max_items then least(o.closes_at, greatest(item_at, o.opened_at))
                            when policy.window_kind = 'sliding'
                              then greatest(o.closes_at, least(item_at + make_interval(secs => policy.window_seconds), o.deadline))
                            else o.closes_at end,
           closed_at = case when o.item_count + 1 >= o.max_items then now() end
     where o.closes_at > item_at
    returning o.* into d;
    if d.id is null then
      -- The open window ended before this item's time: it takes no more.
      update public.notification_digests o set closed_at = now()
       where o.user_id = item.recipient_user_id and o.type = item.kind and o.channel = item.channel
         and o.digest_key = item_key and o.closed_at is null and o.closes_at <= item_at;
      continue;
    end if;
    insert into public.notification_digest_items (digest_id, item_id, position, entry_key, at, lines)
    values (d.id, item.id, d.item_count, coalesce(item.notification_group, item.id::text), item_at,
            case when d.item_count <= policy.shown_items then public.herald_digest_line(policy, item.payload, item_at, zone) end);
    texts := public.herald_digest_texts(d, policy);
    if d.item_count = 1 then
      insert into public.notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at,
                                             run_after, dedupe_key, notification_group, related_entity_type, related_entity_id)
      values (item.recipient_user_id, item.recipient_user_id, item.channel, item.kind, texts, d.closes_at, d.closes_at,
              'digest:' || d.id, d.notification_group, 'digest', d.id::text)
      returning id into d.queue_id;
      update public.notification_digests o set queue_id = d.queue_id where o.id = d.id;
      return d.id;
    end if;
    taken := public.herald_digest_rewrite(d, texts, lang);
    if taken = 1 then
      return d.id;
    end if;
    -- A pass has claimed the digest: it goes as it was; this item opens the next window.
    delete from public.notification_digest_items i where i.digest_id = d.id and i.item_id = item.id;
    update public.notification_digests o set item_count = o.item_count - 1, closed_at = coalesce(o.closed_at, now())
     where o.id = d.id;
    d := null;
  end loop;
  raise exception 'digest of "%": no window took the item %', item.kind, item.id;
end
$$;

-- The digest's queue row and list entry take its new texts (the entry's own in the person's language:
-- en, ar or pt) and end, unless a pass has claimed the row (claimed once, it keeps `attempts` > 0): 1 if
-- they did.
create or replace function public.herald_digest_rewrite(d public.notification_digests, texts jsonb, lang text)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  taken int;
begin
  with q as (
    update public.notification_queue q
       set payload = q.payload || texts, run_after = d.closes_at
     where q.id = d.queue_id and q.recipient_user_id = d.user_id
       and q.status = 'pending' and q.attempts = 0 and q.locked_until is null
    returning q.id
  ), e as (
    update public.inbox i
       set title = texts ->> ('title_' || coalesce(lang, 'en')), body = texts ->> ('body_' || coalesce(lang, 'en')),
           title_en = texts ->> 'title_en', title_ar = texts ->> 'title_ar',
           body_en = texts ->> 'body_en', body_ar = texts ->> 'body_ar'
     where i.user_id = d.user_id and i.notification_key = d.notification_group and exists (select 1 from q)
    returning 1
  )
  select count(*) into taken from q;
  return taken;
end
$$;

-- After each insert into the queue: the rows herald_queue_type marked join their windows, a window's
-- rows in one order (so two inserts lock the same windows in the same order), each with its trail.
create or replace function public.herald_queue_digests() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  item public.notification_queue;
  items uuid[] := '{}';
  digests uuid[] := '{}';
begin
  if not exists (select 1 from born b where b.skip_reason = 'digested') then
    return null;
  end if;
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
  referencing new table as born for each statement execute function public.herald_queue_digests();

-- ---------------------------------------------------------------------------------------------------
-- The list. A digest's entry (its key `digest:…`) read reads its items' entries.
create or replace function public.herald_inbox_digest_read() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  update public.inbox i set is_read = true, read_at = coalesce(i.read_at, new.read_at, now())
   where i.user_id = new.user_id and not i.is_read
     and i.notification_key in (select it.entry_key from public.notification_digests d
                                  join public.notification_digest_items it on it.digest_id = d.id
                                 where d.user_id = new.user_id and d.notification_group = new.notification_key);
  return null;
end
$$;
drop trigger if exists herald_inbox_digest_read on inbox;
create trigger herald_inbox_digest_read after update of is_read on inbox
  for each row when (new.is_read and not old.is_read and new.notification_key like 'digest:%')
  execute function public.herald_inbox_digest_read();

-- A digest's window and items go with its entry (kept 30 days after delivery, as every entry).
create or replace function public.herald_inbox_digest_gone() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  delete from public.notification_digests d
   using gone g
   where g.notification_key like 'digest:%' and d.user_id = g.user_id
     and d.notification_group = g.notification_key and (d.closed_at is not null or d.closes_at < now());
  return null;
end
$$;
drop trigger if exists herald_inbox_digest_gone on inbox;
create trigger herald_inbox_digest_gone after delete on inbox
  referencing old table as gone for each statement execute function public.herald_inbox_digest_gone();

-- A listed entry's digest, or null when it is not one: its count and its items (oldest first), each
-- as the list shows an entry.
create or replace function public.herald_digest_json(entry_id uuid) returns jsonb
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'count', (select count(distinct it.entry_key) from public.notification_digests d
                       join public.notification_digest_items it on it.digest_id = d.id
                      where d.user_id = e.user_id and d.notification_group = e.notification_key),
           'items', coalesce((
             select jsonb_agg(jsonb_build_object(
                      'id', x.id, 'notification_type', x.type,
                      'title_en', coalesce(x.title_en, x.title), 'title_ar', coalesce(x.title_ar, x.title),
                      'body_en', coalesce(x.body_en, x.body), 'body_ar', coalesce(x.body_ar, x.body),
                      'is_read', x.is_read, 'created_at', (extract(epoch from x.at) * 1000)::bigint)
                      order by x.at, x.id)
               from (select distinct on (i.id) i.*, it.at
                       from public.notification_digests d
                       join public.notification_digest_items it on it.digest_id = d.id
                       join public.inbox i on i.user_id = d.user_id and i.notification_key = it.entry_key
                      where d.user_id = e.user_id and d.notification_group = e.notification_key
                      order by i.id, it.at) x), '[]'::jsonb))
    from public.inbox e
   where e.id = entry_id and e.notification_key like 'digest:%'
$$;

-- The push API's list (sql/048): a digest's entry carries `digest` (its count and items).
create or replace function public.get_notifications(
  "limit" int default 20, "offset" int default 0, type text default null, unread_only boolean default false
) returns jsonb
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  caller uuid := auth.uid();
  page_limit int := get_notifications."limit";
  page_offset int := get_notifications."offset";
  only_unread boolean := coalesce(get_notifications.unread_only, false);
  types text[];
  scheme text := coalesce((select a.deep_link_scheme from public.herald_app_links a), 'herald');
  result jsonb;
begin
  if caller is null then
    perform public.herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if page_limit is null or page_limit < 1 or page_limit > 100 then
    perform public.herald_raise('validation_error', 'limit must be between 1 and 100');
  end if;
  if page_offset is null or page_offset < 0 then
    perform public.herald_raise('validation_error', 'offset must be 0 or more');
  end if;
  types := public.herald_notification_type_filter(get_notifications.type);

  with listed as materialized (select * from public.herald_listed_entries(caller)),
       chosen as (select * from listed l
                   where (types is null or l.type = any(types)) and (not only_unread or not l.is_read))
  select jsonb_build_object(
           'notifications', coalesce((
             select jsonb_agg(jsonb_build_object(
                      'id', p.id, 'user_id', p.user_id, 'notification_type', p.type, 'priority', p.priority,
                      'title_en', coalesce(p.title_en, p.title), 'title_ar', coalesce(p.title_ar, p.title),
                      'body_en', coalesce(p.body_en, p.body), 'body_ar', coalesce(p.body_ar, p.body),
                      'deep_link', public.herald_app_link(p.deep_link, scheme),
                      'image_url', case when public.herald_image_url_refusal(p.image_url) is null then p.image_url end,
                      'is_read', p.is_read, 'read_at', (extract(epoch from p.read_at) * 1000)::bigint,
                      'created_at', (extract(epoch from p.delivered_at) * 1000)::bigint)
                      || case when p.digest is not null then jsonb_build_object('digest', p.digest) else '{}'::jsonb end
                      order by p.delivered_at desc, p.id desc)
               from (select c.*, case when c.related_entity_type = 'digest' then public.herald_digest_json(c.id) end as digest
                       from chosen c order by c.delivered_at desc, c.id desc
                      limit page_limit offset page_offset) p), '[]'::jsonb),
           'total_count', (select count(*) from chosen),
           'unread_count', (select count(*) from listed l where not l.is_read),
           'limit', page_limit, 'offset', page_offset)
    into result;
  return result;
end
$$;

-- The helpers are for their callers only; the RPCs keep their grants.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_digest_policy_check', 'herald_queue_type', 'herald_digest_window', 'herald_digest_line',
                         'herald_digest_texts', 'herald_digest_join', 'herald_digest_rewrite', 'herald_queue_digests',
                         'herald_inbox_digest_read', 'herald_inbox_digest_gone', 'herald_digest_json')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

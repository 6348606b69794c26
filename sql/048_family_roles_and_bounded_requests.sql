-- Families, snoozes and stored links (docs/app-contract.md): who may act on another's alerts, how often
-- a reminder is snoozed, what a request may cost, and what the app's list hands back.

-- ---------------------------------------------------------------------------------------------------
-- Roles in a family. An admin of a family reads, snoozes and dismisses the alerts about its members;
-- a plain member those about themselves only (before, any member read everyone's health deviations
-- and could dismiss an alert about someone else, so the admins never got it). A refusal stays
-- SQLSTATE 42501 (HTTP 403), as for someone outside the family.

-- True when `viewer` may read and act on the alerts about `member`: the member themselves, or an admin
-- of a family the member belongs to (snooze_pattern_alert and dismiss_pattern_alert ask this).
create or replace function herald_can_view_member(viewer uuid, member uuid) returns boolean
language sql stable security definer set search_path = public, pg_temp
as $$
  select viewer is not null and member is not null and (
    viewer = member or exists (
      select 1 from family_members me join family_members them on them.family_id = me.family_id
       where me.user_id = viewer and me.role = 'admin' and them.user_id = member
    )
  )
$$;

-- The family's active alerts, without the snoozed and the dismissed: every member's for an admin of
-- the family, the caller's own for a plain member. Someone outside the family is refused (42501).
create or replace function get_family_pattern_alerts(family_id uuid)
returns table (
  id uuid, member_user_id uuid, metric_type text, pattern_type text, episode_status text,
  active_since date, current_level int, severity text, baseline_value numeric, recent_value numeric,
  deviation_percent numeric, snooze_until date, updated_at timestamptz
)
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  caller_role text;
begin
  select fm.role into caller_role from family_members fm
   where fm.family_id = get_family_pattern_alerts.family_id and fm.user_id = caller;
  if caller is null or caller_role is null then
    raise exception 'Not authorized to read this family''s alerts' using errcode = '42501';
  end if;

  return query
  select pas.id, pas.user_id, pas.metric_type, pas.pattern_type, pas.episode_status, pas.active_since,
         pas.current_level, pas.severity, pas.baseline_value, pas.recent_value, pas.deviation_percent,
         pas.snooze_until, pas.updated_at
    from pattern_alert_state pas
   where pas.user_id in (select fm.user_id from family_members fm
                          where fm.family_id = get_family_pattern_alerts.family_id
                            and (caller_role = 'admin' or fm.user_id = caller))
     and pas.episode_status = 'active'
     and pas.dismissed_at is null
     and (pas.snooze_until is null or pas.snooze_until < herald_local_date(caller))
   order by pas.current_level desc, pas.active_since desc;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- A snooze budget. A snooze's copy could itself be snoozed, without end (15 pushes in 28 minutes,
-- past the 10 a day and one an hour: a copy counts with its original as one notification). Now one
-- reminder notification is snoozed at most 3 times in all, its copies' snoozes included: each copy
-- keeps the count in its payload (`snooze_count`); the third copy's snooze answers `rescheduled` false
-- and `snoozed_until` null.

-- How many snoozes made this notification: 0, 1 for a snooze's copy, … (an older copy: `snoozed_from`).
create or replace function herald_snooze_depth(payload jsonb) returns int
language sql immutable
as $$
  select case when jsonb_typeof(payload -> 'snooze_count') = 'number'
              then least(greatest((payload ->> 'snooze_count')::numeric, 0), 1000)::int
              when payload ? 'snoozed_from' then 1 else 0 end
$$;

create or replace function herald_snooze_reminder(caller uuid, notification uuid, minutes int,
                                                  out rescheduled boolean, out snoozed_until timestamptz)
language plpgsql set search_path = public, pg_temp
as $$
declare
  q notification_queue;
  copy uuid;
  until timestamptz := now() + make_interval(mins => minutes);
  budget constant int := 3;
begin
  rescheduled := false;
  select * into q from notification_queue x
   where x.id = notification and x.recipient_user_id = caller and x.reminder_id is not null;
  if q.id is null or not exists (select 1 from reminders r
                                  where r.id = q.reminder_id and r.user_id = caller and r.enabled and r.cancelled_at is null) then
    return;
  end if;
  -- A snooze already made of this notification answers with its time, whatever the budget.
  select x.scheduled_at into snoozed_until from notification_queue x
   where x.dedupe_key = 'snooze:' || q.id and x.recipient_user_id = caller;
  if snoozed_until is not null or herald_snooze_depth(q.payload) >= budget then
    return;
  end if;
  insert into notification_queue (recipient_user_id, member_user_id, channel, kind, severity, priority, payload,
                                  scheduled_at, run_after, dedupe_key, notification_group, related_entity_type,
                                  related_entity_id, reminder_id)
  values (q.recipient_user_id, q.member_user_id, q.channel, q.kind, q.severity, q.priority,
          q.payload || jsonb_build_object('snoozed_from', q.id, 'snooze_count', herald_snooze_depth(q.payload) + 1),
          until, until, 'snooze:' || q.id, coalesce(q.notification_group, q.id::text), q.related_entity_type,
          q.related_entity_id, q.reminder_id)
  on conflict do nothing
  returning id into copy;
  if copy is null then
    return;  -- a snooze of the same notification, at the same moment, made it
  end if;
  insert into notification_events (queue_id, event, reason, details)
  values (copy, 'enqueued', 'snoozed', jsonb_build_object('snoozed_from', q.id, 'minutes', minutes,
                                                          'snooze_count', herald_snooze_depth(q.payload) + 1));
  rescheduled := true;
  snoozed_until := until;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Cheap requests stay cheap. A time zone is refused from herald's own table of zone names (sql/031),
-- never by scanning `pg_timezone_names`, which reads every zone file from disk (22 ms a refused write
-- against 0.18 ms an accepted one). The table is filled again here from PostgreSQL's zone database.
insert into herald_time_zones (name)
select name from pg_timezone_names where name !~ '^(GMT|UTC)[+-]'
on conflict do nothing;

create or replace function herald_check_timezone() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
  if new.timezone is not null
     and (new.timezone ~ '^(GMT|UTC)[+-]' or not exists (select from herald_time_zones where name = new.timezone)) then
    raise exception 'time zone "%" is not known: use a zone database name such as Europe/London', left(new.timezone, 64)
      using errcode = 'check_violation', constraint = 'user_profiles_timezone_check',
            table = 'user_profiles', column = 'timezone';
  end if;
  return new;
end
$$;

-- get_notifications' `type`, bounded before it is split (a 10 MB list took 1.7 s): at most 1,024
-- characters and 20 names, each in notification_types, else validation_error (not an empty list).
create or replace function herald_notification_type_filter(list text) returns text[]
language plpgsql stable set search_path = public, pg_temp
as $$
declare
  types text[];
  unknown text;
begin
  if list is null then return null; end if;
  if length(list) > 1024 then
    perform herald_raise('validation_error', 'type must be at most 1024 characters: at most 20 notification types, comma-separated');
  end if;
  select array_agg(distinct btrim(t)) into types
    from unnest(string_to_array(list, ',')) as t where btrim(t) <> '';
  if types is null then
    perform herald_raise('validation_error', 'type must name one or more notification types, comma-separated');
  end if;
  if cardinality(types) > 20 then
    perform herald_raise('validation_error', 'type must name at most 20 notification types');
  end if;
  select t into unknown from unnest(types) t
   where not exists (select 1 from notification_types n where n.type = t) order by t limit 1;
  if unknown is not null then
    perform herald_raise('validation_error', format('type names %s, which is not a notification type', left(quote_literal(unknown), 66)));
  end if;
  return types;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Stored links. The push keeps a deep link only in the app's scheme (HERALD_DEEP_LINK_SCHEME, else the
-- inbox's link) and an image only over https; the list handed back whatever was stored
-- (`javascript://…`, `https://169.254.169.254/…`). Now the list applies the push's rule, and an image
-- must name a public host (herald_image_url_refusal), which send_notification checks too.

-- HERALD_DEEP_LINK_SCHEME as the passes have it, written by their housekeeping (none yet: `herald`).
create table if not exists herald_app_links (
  only_row          boolean primary key default true check (only_row),
  deep_link_scheme  text not null check (octet_length(deep_link_scheme) between 1 and 64),
  updated_at        timestamptz not null default now()
);
select herald_restrict_table('herald_app_links');

-- A stored deep link as the push carries it: kept in the app's scheme, printable ASCII, at most 512
-- bytes; any other link becomes the inbox's (`<scheme>://inbox`). Null stays null.
create or replace function herald_app_link(link text, scheme text) returns text
language sql immutable
as $$
  select case when link is null then null
              when starts_with(link, scheme || '://') and octet_length(link) <= 512 and link ~ '^[!-~]+$' then link
              else scheme || '://inbox' end
$$;

-- Why an image URL is refused (null when it is fine): https in printable ASCII, a public host.
create or replace function herald_image_url_refusal(url text) returns text
language plpgsql immutable
as $$
declare
  authority text;
  host text;
  addr inet;
  public_only constant text := 'a public host: not loopback, link-local, private or reserved';
begin
  if url is null then return null; end if;
  if octet_length(url) > 2048 or url !~ '^[!-~]+$' or lower(left(url, 8)) <> 'https://' then
    return 'an https URL in printable ASCII';
  end if;
  authority := substring(lower(substring(url from 9 for 300)) from '^[^/?#]*');
  if authority ~ '[@\\%]' then
    return 'a host without user info, backslashes or percent-encoding';
  end if;
  if left(authority, 1) = '[' then
    host := substring(authority from '^\[([0-9a-f:.]+)\](:[0-9]{1,5})?$');
    begin addr := host::inet; exception when invalid_text_representation then addr := null; end;
    if addr is null or family(addr) <> 6 then
      return 'a valid IPv6 address';
    end if;
    -- Global unicast only, less the ranges that embed an IPv4 address or are documentation's.
    if not addr <<= '2000::/3' or addr <<= any ('{2001::/32,2001:db8::/32,2002::/16}'::inet[]) then
      return public_only;
    end if;
    return null;
  end if;
  host := rtrim(regexp_replace(authority, ':[0-9]{0,5}$', ''), '.');
  if host !~ '^[a-z0-9.-]+$' then
    return 'a host name of letters, digits, dots and hyphens';
  end if;
  -- A host whose last label is a number is an IPv4 address to a URL parser, in decimal, octal (0…)
  -- or hex (0x…), in one to four parts: only the dotted decimal form is taken, and then only public.
  if host ~ '(^|\.)(0x[0-9a-f]*|[0-9]+)$' then
    if host !~ '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$' then
      return 'an IPv4 address in dotted decimal (no integer, octal or hex form)';
    end if;
    addr := host::inet;
    if addr <<= any ('{0.0.0.0/8,10.0.0.0/8,100.64.0.0/10,127.0.0.0/8,169.254.0.0/16,172.16.0.0/12,192.0.0.0/24,192.0.2.0/24,192.168.0.0/16,198.18.0.0/15,198.51.100.0/24,203.0.113.0/24,224.0.0.0/3}'::inet[]) then
      return public_only;
    end if;
    return null;
  end if;
  if host = 'localhost' or host !~ '\.' or host ~ '\.(localhost|local|localdomain|internal|home\.arpa)$' then
    return public_only;
  end if;
  return null;
end
$$;

-- send_notification's optional fields: sql/036's checks (renamed), then the image's host.
do $$
begin
  if to_regprocedure('herald_send_check_fields(jsonb)') is null then
    alter function herald_send_check_extras(jsonb) rename to herald_send_check_fields;
  end if;
end
$$;
create or replace function herald_send_check_extras(request jsonb) returns void
language plpgsql stable
as $$
begin
  perform herald_send_check_fields(request);
  if herald_image_url_refusal(request ->> 'image_url') is not null then
    perform herald_raise('invalid_request', 'image_url must name ' || herald_image_url_refusal(request ->> 'image_url'));
  end if;
end
$$;

-- The push API's list (sql/037), `type` bounded, the links as the push carries them: a deep link in
-- the app's scheme (else the inbox's), an image over https from a public host (else null).
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
  scheme text := coalesce((select a.deep_link_scheme from herald_app_links a), 'herald');
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
  types := herald_notification_type_filter(get_notifications.type);

  with listed as materialized (select * from herald_listed_entries(caller)),
       chosen as (select * from listed l
                   where (types is null or l.type = any(types)) and (not only_unread or not l.is_read))
  select jsonb_build_object(
           'notifications', coalesce((
             select jsonb_agg(jsonb_build_object(
                      'id', p.id, 'user_id', p.user_id, 'notification_type', p.type, 'priority', p.priority,
                      'title_en', coalesce(p.title_en, p.title), 'title_ar', coalesce(p.title_ar, p.title),
                      'body_en', coalesce(p.body_en, p.body), 'body_ar', coalesce(p.body_ar, p.body),
                      'deep_link', herald_app_link(p.deep_link, scheme), 'image_url', case when herald_image_url_refusal(p.image_url) is null then p.image_url end,
                      'is_read', p.is_read, 'read_at', herald_ms(p.read_at), 'created_at', herald_ms(p.delivered_at))
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

-- ---------------------------------------------------------------------------------------------------
-- Reminders that are over. A loop that made and cancelled reminders left 2,000 an account, read by
-- the reminders phase at every pass. Now the cap of 200 also counts every reminder made in the last 24
-- hours; the pass deletes reminders cancelled, and one-off reminders finished, more than
-- HERALD_RETENTION_DAYS ago; the phase reads the active ones through a partial index whose predicate
-- its query repeats word for word.
create index if not exists reminders_active on reminders (user_id)
  where enabled and cancelled_at is null
    and (schedule <> 'once' or enqueued_at is null or (ends_at is not null and end_enqueued_at is null));
create index if not exists reminders_over on reminders (coalesce(cancelled_at, end_enqueued_at, enqueued_at))
  where cancelled_at is not null or (schedule = 'once' and enqueued_at is not null);

-- Deletes up to `most` reminders cancelled, or one-off and finished, more than `retention_days` ago
-- (a row locked elsewhere is left for the next pass); returns how many.
create or replace function herald_prune_reminders(retention_days int, most int default 5000) returns int
language sql
set search_path = public, pg_temp
as $$
  with gone as (
    delete from reminders where id in (
      select r.id from reminders r
       where (r.cancelled_at is not null or (r.schedule = 'once' and r.enqueued_at is not null))
         and coalesce(r.cancelled_at, r.end_enqueued_at, r.enqueued_at) < now() - make_interval(days => retention_days)
         and (r.cancelled_at is not null or not herald_reminder_pending(r))
       limit most
       for update skip locked)
    returning 1)
  select count(*)::int from gone
$$;

-- schedule_reminder as in sql/038, the cap also counting the reminders made in the last 24 hours.
create or replace function schedule_reminder(
  reminder_type text default null, trigger text default null, local_time text default null,
  weekday int default null, at text default null,
  title_en text default null, body_en text default null, title_ar text default null, body_ar text default null,
  related_entity_type text default null, related_entity_id text default null, ends_at text default null
) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := herald_reminder_caller(true);
  kind text := herald_reminder_type(schedule_reminder.reminder_type, true);
  timing reminders;
  r reminders;
  advance int;
begin
  timing := herald_reminder_timing(kind, schedule_reminder.trigger, schedule_reminder.local_time,
                                   schedule_reminder.weekday, schedule_reminder.at, schedule_reminder.ends_at);
  perform herald_reminder_texts(schedule_reminder.title_en, schedule_reminder.body_en,
                                schedule_reminder.title_ar, schedule_reminder.body_ar);
  perform herald_reminder_entity(schedule_reminder.related_entity_type, schedule_reminder.related_entity_id);

  -- One caller's schedules take turns, so the limit holds against concurrent calls.
  perform pg_advisory_xact_lock(1751478885, hashtext(caller::text));
  if (select count(*) from reminders x
       where x.user_id = caller and (x.created_at > now() - interval '24 hours' or herald_reminder_pending(x))) >= 200 then
    perform herald_raise('validation_error',
      'at most 200 reminders may be scheduled at once, counting every one made in the last 24 hours: cancel some, or wait');
  end if;

  insert into reminders as x (user_id, schedule, reminder_type, title, body, title_ar, body_ar, local_time, weekday,
                              at, ends_at, related_entity_type, related_entity_id)
  values (caller, timing.schedule, kind, schedule_reminder.title_en, schedule_reminder.body_en,
          schedule_reminder.title_ar, schedule_reminder.body_ar, timing.local_time, timing.weekday, timing.at,
          timing.ends_at, schedule_reminder.related_entity_type, schedule_reminder.related_entity_id)
  returning * into r;
  select p.dose_reminder_advance_minutes into advance from user_profiles p where p.user_id = caller;
  return herald_reminder_json(r, advance);
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Privileges: the helpers above for the owner only (the RPCs keep the grants they had).
do $$
declare fn regprocedure; app_role name;
begin
  for fn in select p.oid::regprocedure from pg_proc p
             where p.pronamespace = 'public'::regnamespace
               and p.proname in ('herald_snooze_depth', 'herald_notification_type_filter', 'herald_app_link',
                                 'herald_image_url_refusal', 'herald_prune_reminders',
                                 'herald_send_check_fields', 'herald_send_check_extras') loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

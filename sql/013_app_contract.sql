-- The app's side of the contract (docs/app-contract.md): the notification list, actions and history,
-- the push contract's request and response shapes, and errors a PostgREST client can read.
--
-- ERRORS. Every RPC below raises seed 003's error codes the same way (herald_raise):
--
--     SQLSTATE   HTTP (PostgREST)   message            when
--     PT400      400                invalid_token      a malformed push token
--     PT401      401                unauthorized       no caller (auth.uid() is null)
--     PT404      404                user_not_found     reserved for a caller herald does not know
--     PT422      422                validation_error   a missing or bad argument
--
-- PostgREST answers an error whose SQLSTATE is `PTxyz` with HTTP status xyz and the JSON body
-- {"code":"PTxyz","message":<message>,"details":<detail>,"hint":<hint>}, so the seed's code is the
-- `message` (and the HTTP status is the seed's), the human explanation is `details`. Outside
-- PostgREST (psql, a backend on a plain connection) the same error reads naturally: SQLSTATE PT422,
-- message "validation_error", detail "limit must be between 1 and 100". The alternative, SQLSTATE
-- 'PGRST' with a JSON object as the message, would put the seed's code in `code` but turns every
-- message into JSON text for any other client; P0001 would answer every error with HTTP 400.
--
-- Times in the answers are Unix milliseconds (seed 003), nulls where the seed's field is optional.

-- Seed 003's code → the SQLSTATE and message above. The explanation goes to DETAIL.
create or replace function herald_raise(code text, explanation text default null) returns void
language plpgsql
as $$
begin
  raise exception using
    errcode = case code when 'invalid_token' then 'PT400' when 'unauthorized' then 'PT401'
                        when 'user_not_found' then 'PT404' else 'PT422' end,
    message = code,
    detail = coalesce(explanation, code);
end
$$;

-- Unix milliseconds, null for null.
create or replace function herald_ms(t timestamptz) returns bigint
language sql immutable
as $$ select (extract(epoch from t) * 1000)::bigint $$;

-- ---------------------------------------------------------------------------------------------------
-- Schema.

-- The in-app copy keeps its text in both languages (seed 003's NotificationRecord). `title`/`body`
-- stay: the recipient's own language, as before.
alter table inbox add column if not exists title_en text;
alter table inbox add column if not exists title_ar text;
alter table inbox add column if not exists body_en text;
alter table inbox add column if not exists body_ar text;
alter table inbox add column if not exists image_url text;

-- What a notification is about (seed 001: a test step, a washout, …). Filled by the generators.
alter table notification_queue add column if not exists related_entity_type text;
alter table notification_queue add column if not exists related_entity_id text;

-- Seed 003's device_name.
alter table device_tokens add column if not exists device_name text;

-- Seed 001's NotificationHistoryEntry: one row per notification sent, on any channel, written by the
-- record that marks its queue row sent (id = the queue row's id, which is also the push payload's
-- `queue_id` and the in-app copy's id). Kept 30 days (seed 001 §Storage) whatever becomes of the queue
-- row: no foreign key, pruned by the pass's housekeeping on `delivered_time`.
create table if not exists notification_history (
  id                   uuid primary key,
  user_id              uuid not null,
  channel              text not null,
  notification_type    text not null,
  title                text,
  body                 text,
  scheduled_time       timestamptz not null,
  delivered_time       timestamptz not null,
  actioned_time        timestamptz,
  action               text check (action in ('opened', 'dismissed', 'dose_marked_taken', 'symptom_logged', 'snoozed')),
  related_entity_id    text,
  related_entity_type  text,
  created_at           timestamptz not null default now()
);
create index if not exists notification_history_user on notification_history (user_id, delivered_time desc);
create index if not exists notification_history_delivered on notification_history (delivered_time);
select herald_restrict_table('notification_history');

-- ---------------------------------------------------------------------------------------------------
-- Seed 003 §4: the caller's in-app notifications, newest first.
--
-- The parameters are the seed's query parameters. Through PostgREST, call it with POST and a JSON body
-- ({"limit":50,"offset":0,"type":"reminder,prompt","unread_only":true}): PostgREST keeps `limit` and
-- `offset` in a query string for itself (they page its own result), so a GET passes only `type` and
-- `unread_only` to the function.
--
-- total_count counts the notifications the filters select (for paging); unread_count counts all the
-- caller's unread notifications, whatever the filters (the badge).
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
  total bigint;
  unread bigint;
  page jsonb;
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

  select count(*) into total from inbox i
   where i.user_id = caller and (types is null or i.type = any(types)) and (not only_unread or not i.is_read);
  select count(*) into unread from inbox i where i.user_id = caller and not i.is_read;

  select coalesce(jsonb_agg(jsonb_build_object(
           'id', p.id, 'user_id', p.user_id, 'notification_type', p.type, 'priority', p.priority,
           'title_en', coalesce(p.title_en, p.title), 'title_ar', coalesce(p.title_ar, p.title),
           'body_en', coalesce(p.body_en, p.body), 'body_ar', coalesce(p.body_ar, p.body),
           'deep_link', p.deep_link, 'image_url', p.image_url, 'is_read', p.is_read,
           'read_at', herald_ms(p.read_at), 'created_at', herald_ms(p.created_at))
           order by p.created_at desc, p.id desc), '[]'::jsonb)
    into page
    from (select * from inbox i
           where i.user_id = caller and (types is null or i.type = any(types)) and (not only_unread or not i.is_read)
           order by i.created_at desc, i.id desc
           limit page_limit offset page_offset) p;

  return jsonb_build_object('notifications', page, 'total_count', total, 'unread_count', unread,
                            'limit', page_limit, 'offset', page_offset);
end
$$;

-- Seed 001's markNotificationAsActioned: records what the caller did with one of their notifications.
-- `notification_id` is the history id (the push payload's `queue_id`) or the in-app copy's id.
-- `opened` also marks the in-app copy read. The latest action wins. Another user's id, or an unknown
-- one, is a validation_error (the same answer for both: ids are not probed).
create or replace function record_notification_action(notification_id uuid, action text) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  hid uuid;
  marked int := 0;
  entry notification_history;
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

  select h.id into hid from notification_history h
   where h.id = record_notification_action.notification_id and h.user_id = caller;
  if hid is null then
    -- An in-app copy by its own id (copies written before this migration have an id of their own).
    -- Its history row, if it has none (written before this migration, or pruned), is made from it.
    insert into notification_history as h (id, user_id, channel, notification_type, title, body,
                                           scheduled_time, delivered_time)
    select coalesce(i.queue_id, i.id), i.user_id, 'in_app', i.type, i.title, i.body, i.created_at, i.created_at
      from inbox i
     where i.id = record_notification_action.notification_id and i.user_id = caller
    on conflict (id) do update set user_id = h.user_id
    returning h.id into hid;
  end if;
  if hid is null then
    perform herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;

  update notification_history h
     set action = record_notification_action.action, actioned_time = at
   where h.id = hid and h.user_id = caller
  returning * into entry;
  if entry.id is null then
    perform herald_raise('validation_error', 'notification_id does not name one of your notifications');
  end if;

  if record_notification_action.action = 'opened' then
    update inbox i set is_read = true, read_at = at
     where i.user_id = caller and not i.is_read
       and (i.id = hid or i.queue_id = hid or i.id = record_notification_action.notification_id);
    get diagnostics marked = row_count;
  end if;

  return jsonb_build_object('id', entry.id, 'notification_id', record_notification_action.notification_id,
                            'action', entry.action, 'actioned_time', herald_ms(entry.actioned_time),
                            'marked_read', marked > 0);
end
$$;

-- Seed 001's getNotificationHistory(days): every notification the caller was sent, on any channel, in
-- the last `days` days (1–30: history is kept 30 days), newest first.
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
             'id', h.id, 'user_id', h.user_id, 'notification_type', h.notification_type, 'channel', h.channel,
             'title', h.title, 'body', h.body, 'scheduled_time', herald_ms(h.scheduled_time),
             'delivered_time', herald_ms(h.delivered_time), 'actioned_time', herald_ms(h.actioned_time),
             'action', h.action, 'related_entity_id', h.related_entity_id,
             'related_entity_type', h.related_entity_type, 'created_at', herald_ms(h.created_at))
             order by h.delivered_time desc, h.id)
      from notification_history h
     where h.user_id = caller and h.delivered_time >= now() - make_interval(days => get_notification_history.days)
  ), '[]'::jsonb);
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Device tokens: one function that takes both the original names (device_token, platform, os_version,
-- provider) and seed 003's (push_token, device_type, device_name). A second overload would make the
-- positional call register_device_token('…', 'ios') ambiguous, so the 006/008 function is replaced by
-- one whose first parameters are the old ones, in the old order. PostgREST matches the JSON keys to the
-- parameter names, so either request body reaches it. The answer carries both sets of names: seed
-- 003's (id, user_id, push_token, device_type, locale, registered_at in ms, status) and the old ones
-- (device_token, platform, provider). 008's rule is kept: under a lock on the token, another user's
-- active row for it is deactivated ('reassigned') first.
drop function if exists register_device_token(text, text, text, text, text, text);
create or replace function register_device_token(
  device_token text default null, platform text default null, app_version text default null,
  os_version text default null, provider text default null, locale text default null,
  push_token text default null, device_type text default null, device_name text default null
) returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
#variable_conflict use_column
declare
  caller uuid := auth.uid();
  token text := coalesce(register_device_token.device_token, register_device_token.push_token);
  kind text := coalesce(register_device_token.platform, register_device_token.device_type);
  chosen_provider text;
  row device_tokens;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if register_device_token.device_token is not null and register_device_token.push_token is not null
     and register_device_token.device_token <> register_device_token.push_token then
    perform herald_raise('validation_error', 'device_token and push_token name different tokens');
  end if;
  if register_device_token.platform is not null and register_device_token.device_type is not null
     and register_device_token.platform <> register_device_token.device_type then
    perform herald_raise('validation_error', 'platform and device_type differ');
  end if;
  if token is null or length(trim(token)) = 0 then
    perform herald_raise('validation_error', 'push_token is required');
  end if;
  if length(token) > 4096 then
    perform herald_raise('invalid_token', 'the push token is longer than 4096 characters');
  end if;
  if kind is null or kind not in ('ios', 'android', 'web') then
    perform herald_raise('validation_error', 'device_type must be ios or android (or web)');
  end if;
  if register_device_token.provider is not null and register_device_token.provider not in ('apns', 'fcm', 'expo') then
    perform herald_raise('validation_error', 'provider must be apns, fcm or expo');
  end if;
  if register_device_token.locale is not null and register_device_token.locale !~ '^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$' then
    perform herald_raise('validation_error', 'locale must be a language tag such as en, ar or pt-BR');
  end if;

  -- Seed 003's request (push_token, no provider) is an Expo token, checked by the seed's pattern.
  chosen_provider := coalesce(register_device_token.provider,
    case when token like 'ExponentPushToken[%' or token like 'ExpoPushToken[%' then 'expo'
         when register_device_token.push_token is not null then 'expo'
         when kind = 'ios' then 'apns'
         else 'fcm' end);
  if chosen_provider = 'expo' and token !~ '^Expo(nent)?PushToken\[[a-zA-Z0-9_-]+\]$' then
    perform herald_raise('invalid_token', 'malformed Expo push token: expected ExponentPushToken[…]');
  end if;

  -- Two users registering the same token at once take turns (as in 008).
  perform pg_advisory_xact_lock(1751478884, hashtext(token));
  update device_tokens t
     set is_active = false, deactivated_at = now(), deactivated_reason = 'reassigned', updated_at = now()
   where t.device_token = token and t.user_id <> caller and t.is_active;

  insert into device_tokens as t (user_id, device_token, platform, provider, app_version, os_version, locale,
                                  device_name, is_active, last_used_at)
  values (caller, token, kind, chosen_provider, register_device_token.app_version,
          register_device_token.os_version, register_device_token.locale, register_device_token.device_name,
          true, now())
  on conflict (user_id, device_token) do update
    set platform = excluded.platform, provider = excluded.provider,
        app_version = coalesce(excluded.app_version, t.app_version),
        os_version = coalesce(excluded.os_version, t.os_version),
        locale = coalesce(excluded.locale, t.locale),
        device_name = coalesce(excluded.device_name, t.device_name),
        is_active = true, deactivated_at = null, deactivated_reason = null,
        last_used_at = now(), updated_at = now()
  returning * into row;

  return jsonb_build_object(
    'id', row.id, 'user_id', row.user_id, 'push_token', row.device_token, 'device_type', row.platform,
    'locale', row.locale, 'registered_at', herald_ms(row.last_used_at), 'status', 'active',
    'device_name', row.device_name, 'app_version', row.app_version,
    'device_token', row.device_token, 'platform', row.platform, 'provider', row.provider);
end
$$;

-- Seed 003's DELETE: {push_token, status, unregistered_at (ms)}. `status` is 'unregistered', or
-- 'not_found' when the caller had no active row for the token (another user's token is not touched).
drop function if exists unregister_device_token(text);
create or replace function unregister_device_token(device_token text default null, push_token text default null)
returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  token text := coalesce(unregister_device_token.device_token, unregister_device_token.push_token);
  at timestamptz := now();
  n int;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if token is null or length(trim(token)) = 0 then
    perform herald_raise('validation_error', 'push_token is required');
  end if;
  update device_tokens t
     set is_active = false, deactivated_at = at, deactivated_reason = 'unregistered', updated_at = at
   where t.user_id = caller and t.device_token = token and t.is_active;
  get diagnostics n = row_count;
  return jsonb_build_object('push_token', token, 'device_token', token,
                            'status', case when n > 0 then 'unregistered' else 'not_found' end,
                            'unregistered_at', herald_ms(at));
end
$$;

-- Seed 003 §5, as in 006, with read_at in ms and the error convention above.
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
  with updated as (
    update inbox set is_read = true, read_at = at
     where id = any(notification_ids) and user_id = caller and not is_read
    returning id
  )
  select coalesce(array_agg(id), '{}') into ids from updated;
  return jsonb_build_object('updated_count', cardinality(ids), 'notification_ids', to_jsonb(ids),
                            'read_at', herald_ms(at));
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Privileges, as 008 sets them: helpers for the owner only; the RPCs for `authenticated` (where it
-- exists), not anon or PUBLIC. On Supabase, default privileges granted every function above to anon.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace and p.proname in ('herald_raise', 'herald_ms')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;

  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('get_notifications', 'record_notification_action', 'get_notification_history',
                         'register_device_token', 'unregister_device_token', 'mark_notifications_read')
  loop
    execute format('revoke all on function %s from public', fn);
    if exists (select 1 from pg_roles where rolname = 'anon') then
      execute format('revoke all on function %s from anon', fn);
    end if;
    if exists (select 1 from pg_roles where rolname = 'authenticated') then
      execute format('grant execute on function %s to authenticated', fn);
    end if;
  end loop;
end
$$;

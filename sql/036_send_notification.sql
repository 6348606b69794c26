-- The push API contract's server-side send (docs/app-contract.md#the-server-side-send): a backend asks
-- herald to push one notification to one person, and herald's passes send it.
--
--     select send_notification('{"user_id":"…","notification_type":"assignment","priority":"high",
--       "title_en":"New Assignment","title_ar":"تكليف جديد","body_en":"…","body_ar":"…",
--       "deep_link":"intldossier://dossiers/660e…","data":{"dossier_id":"660e…"}}');
--     -- {"notification_id":"…","user_id":"…","push_token":"ExponentPushToken[…]","status":"scheduled",
--     --  "sent_at":null,"scheduled_at":1697562000000,…}
--
-- One request is one queue row on the push channel (kind = the request's notification_type), which
-- every active device token of the person receives. The function validates the whole request before it
-- writes anything, so a refused request leaves nothing behind; a row it writes is one the pass can
-- send: its type exists, the person has a profile and an active token, and what the push must carry
-- beside its title and body (data, deep link, image) fits in the providers' 4 KB with room to spare.
--
-- ERRORS, as the other RPCs raise them (sql/013_app_contract.sql: SQLSTATE PTxyz, the contract's code
-- as the message, the explanation as DETAIL):
--     PT400  invalid_request      a missing, malformed or unknown field; a limit below exceeded
--     PT403  forbidden            a caller whose request (JWT) role is not service_role
--     PT404  user_not_found       no user_profiles row, or no active device token
--     PT422  invalid_token        no active token, and a provider reported the person's last ones dead
--     PT429  rate_limit_exceeded  100 requests in the last minute for this recipient; DETAIL is JSON:
--                                 {"retry_after": <seconds>, "message": "…"}
--
-- PRIVILEGES. Executable by its owner and Supabase's service_role only (not PUBLIC, anon or
-- authenticated): PostgREST answers anyone else's call 401/403 before the function runs. A caller that
-- reaches it through some other SECURITY DEFINER function is refused by its own check (`forbidden`).

-- The request's role as PostgREST sets it (the JWT's `role`): nil outside PostgREST (herald, psql, a
-- backend on its own connection); 'invalid' when the claims cannot be read.
create or replace function herald_request_role() returns text
language plpgsql stable
as $$
declare
  claims text := nullif(current_setting('request.jwt.claims', true), '');
begin
  return coalesce(nullif(current_setting('request.jwt.claim.role', true), ''), claims::jsonb ->> 'role');
exception when others then
  return 'invalid';
end
$$;

-- herald_raise (013) learns the send's codes; the others keep theirs.
create or replace function herald_raise(code text, explanation text default null) returns void
language plpgsql
as $$
begin
  raise exception using
    errcode = case code when 'invalid_token' then 'PT400' when 'invalid_request' then 'PT400'
                        when 'unauthorized' then 'PT401' when 'forbidden' then 'PT403'
                        when 'user_not_found' then 'PT404' when 'rate_limit_exceeded' then 'PT429'
                        when 'internal_error' then 'PT500' else 'PT422' end,
    message = code,
    detail = coalesce(explanation, code);
end
$$;

-- A push's `data` as FCM carries it (every value a string; nulls left out), in bytes: at least what
-- Expo and APNs carry, which keep numbers and objects as they are. jsonb's text has a space after each
-- colon and comma, so this counts a little more than the adapters write.
create or replace function herald_push_data_bytes(data jsonb) returns int
language sql immutable
as $$
  select 2 + coalesce(sum(octet_length(to_jsonb(e.key)::text) + 2
                          + octet_length(case jsonb_typeof(e.value) when 'string' then e.value::text
                                                                    else to_jsonb(e.value::text)::text end)), 0)::int
    from jsonb_each(data) e
   where jsonb_typeof(e.value) <> 'null'
$$;

-- The request's fields, checked in the order a reader fixes them; raises invalid_request naming the
-- first field that is wrong. The limits are the contract's (docs/app-contract.md):
--   title_*  1–256 characters      body_*  1–2,048 characters
--   deep_link   at most 512 bytes of printable ASCII, scheme://…
--   image_url   https, at most 512 bytes of printable ASCII
--   data        an object of at most 2,048 bytes (as the push carries it), keys of 1–64 characters that
--               are not herald's own nor FCM's reserved ones
--   data + deep_link + image_url (which FCM carries three times) at most 3,072 bytes: with herald's own
--               keys and a device token, the push still fits in 4,096 bytes with its title and body
--   badge_increment  a whole number 0–100 (default 1)      sound  'default' (default), 'custom' or null
--   scheduled_at     Unix milliseconds, at most a day ago (then: at once) and at most 366 days ahead
create or replace function herald_send_check(request jsonb) returns void
language plpgsql stable
as $$
declare
  field text;
  unknown text;
begin
  if request is null or jsonb_typeof(request) <> 'object' then
    perform herald_raise('invalid_request', 'the request must be a JSON object');
  end if;
  select string_agg(k, ', ' order by k) into unknown from jsonb_object_keys(request) k
   where k not in ('user_id', 'notification_type', 'priority', 'title_en', 'title_ar', 'body_en', 'body_ar',
                   'deep_link', 'image_url', 'data', 'badge_increment', 'sound', 'scheduled_at');
  if unknown is not null then
    perform herald_raise('invalid_request', 'unknown field(s): ' || left(unknown, 200));
  end if;
  foreach field in array array['user_id', 'notification_type', 'priority', 'title_en', 'title_ar', 'body_en', 'body_ar'] loop
    if jsonb_typeof(request -> field) is distinct from 'string' or btrim(request ->> field) = '' then
      perform herald_raise('invalid_request', field || ' is required (a non-empty string)');
    end if;
  end loop;
  if request ->> 'user_id' !~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' then
    perform herald_raise('invalid_request', 'user_id must be a UUID');
  end if;
  if request ->> 'notification_type' !~ '^[a-z][a-z0-9_]{0,62}$' then
    perform herald_raise('invalid_request', 'notification_type must be a lowercase slug (a letter, then letters, digits and _)');
  end if;
  if not exists (select 1 from notification_types t where t.type = request ->> 'notification_type') then
    perform herald_raise('invalid_request', format('notification_type "%s" is not a notification type', request ->> 'notification_type'));
  end if;
  if request ->> 'priority' not in ('high', 'normal', 'low') then
    perform herald_raise('invalid_request', 'priority must be high, normal or low');
  end if;
  foreach field in array array['title_en', 'title_ar'] loop
    if char_length(request ->> field) > 256 then
      perform herald_raise('invalid_request', field || ' must be at most 256 characters');
    end if;
  end loop;
  foreach field in array array['body_en', 'body_ar'] loop
    if char_length(request ->> field) > 2048 then
      perform herald_raise('invalid_request', field || ' must be at most 2048 characters');
    end if;
  end loop;
  perform herald_send_check_extras(request);
end
$$;

-- The optional fields (deep_link, image_url, data, badge_increment, sound, scheduled_at).
create or replace function herald_send_check_extras(request jsonb) returns void
language plpgsql stable
as $$
declare
  link text := request ->> 'deep_link';
  image text := request ->> 'image_url';
  data jsonb := request -> 'data';
  reserved text;
  fixed int;
  ms numeric;
begin
  if jsonb_typeof(request -> 'deep_link') not in ('string', 'null') then
    perform herald_raise('invalid_request', 'deep_link must be a string');
  end if;
  if link is not null and (octet_length(link) > 512 or link !~ '^[a-z][a-z0-9+.-]{0,31}://[!-~]*$') then
    perform herald_raise('invalid_request', 'deep_link must be scheme://… in printable ASCII, at most 512 bytes (e.g. intldossier://dossiers/123)');
  end if;
  if jsonb_typeof(request -> 'image_url') not in ('string', 'null') then
    perform herald_raise('invalid_request', 'image_url must be a string');
  end if;
  if image is not null and (octet_length(image) > 512 or image !~ '^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?([/?#][!-~]*)?$') then
    perform herald_raise('invalid_request', 'image_url must be an https URL in printable ASCII, at most 512 bytes');
  end if;
  if jsonb_typeof(data) not in ('object', 'null') then
    perform herald_raise('invalid_request', 'data must be a JSON object');
  end if;
  if jsonb_typeof(data) = 'object' then
    select string_agg(k, ', ' order by k) into reserved from jsonb_object_keys(data) k
     where char_length(k) not between 1 and 64
        or k in ('kind', 'type', 'queue_id', 'notification_id', 'notification_type', 'deep_link', 'image_url',
                 'actions', 'aps', 'from', 'message_type', 'notification', 'collapse_key')
        or k like 'google%' or k like 'gcm%';
    if reserved is not null then
      perform herald_raise('invalid_request', 'data keys must be 1–64 characters and not herald''s or the providers'' own: '
                                              || left(reserved, 200));
    end if;
    if herald_push_data_bytes(data) > 2048 then
      perform herald_raise('invalid_request', format('data is %s bytes as a push carries it; at most 2048', herald_push_data_bytes(data)));
    end if;
  end if;
  fixed := coalesce(herald_push_data_bytes(case jsonb_typeof(data) when 'object' then data end), 0)
           + coalesce(octet_length(link), 0) + 3 * coalesce(octet_length(image), 0);
  if fixed > 3072 then
    perform herald_raise('invalid_request', format('data, deep_link and image_url take %s bytes of the push; at most 3072 (a push is 4096 bytes in all)', fixed));
  end if;
  -- Nested: SQL does not promise to test the type before the cast.
  if jsonb_typeof(request -> 'badge_increment') not in ('number', 'null') then
    perform herald_raise('invalid_request', 'badge_increment must be a whole number from 0 to 100');
  elsif jsonb_typeof(request -> 'badge_increment') = 'number' then
    ms := (request ->> 'badge_increment')::numeric;
    if ms not between 0 and 100 or ms % 1 <> 0 then
      perform herald_raise('invalid_request', 'badge_increment must be a whole number from 0 to 100');
    end if;
  end if;
  if jsonb_typeof(request -> 'sound') not in ('string', 'null') or request ->> 'sound' not in ('default', 'custom') then
    perform herald_raise('invalid_request', 'sound must be "default", "custom" or null');
  end if;
  if jsonb_typeof(request -> 'scheduled_at') not in ('number', 'null') then
    perform herald_raise('invalid_request', 'scheduled_at must be a number (Unix milliseconds)');
  end if;
  ms := (request ->> 'scheduled_at')::numeric;
  if ms is not null and (ms < herald_ms(now() - interval '1 day') or ms > herald_ms(now() + interval '366 days')) then
    perform herald_raise('invalid_request', 'scheduled_at must be Unix milliseconds from a day ago to 366 days ahead');
  end if;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- The rate limit: at most 100 sends a minute to one recipient (a sliding minute), exact however many
-- backends send at once. One row per recipient holds the times of its sends in the last minute (at most
-- 100: a refused request adds none), changed only under the recipient's advisory lock, which is held
-- until the sending transaction ends. Under PostgREST's READ COMMITTED each statement after the lock
-- sees every earlier send; a caller in REPEATABLE READ or SERIALIZABLE gets a serialization failure
-- (40001) instead of a send past the limit.
create table if not exists notification_send_windows (
  user_id   uuid primary key,
  sent_at   timestamptz[] not null default '{}'
);
select herald_restrict_table('notification_send_windows');

-- Admits one more send to `recipient`, or raises rate_limit_exceeded with, in DETAIL, the seconds until
-- the oldest send of the minute leaves it: {"retry_after": 12, "message": "…"}.
create or replace function herald_send_admit(recipient uuid, per_minute int default 100) returns void
language plpgsql
as $$
declare
  at timestamptz;
  recent timestamptz[];
  wait int;
begin
  -- The two-int4 key space, apart from herald's bigint locks (0x73656e64 is "send").
  perform pg_advisory_xact_lock(1936027236, hashtext(recipient::text));
  at := clock_timestamp();
  select coalesce(array_agg(t order by t), '{}') into recent
    from notification_send_windows w, unnest(w.sent_at) t
   where w.user_id = recipient and t > at - interval '1 minute';
  if cardinality(recent) >= per_minute then
    wait := greatest(1, ceil(extract(epoch from recent[cardinality(recent) - per_minute + 1] + interval '1 minute' - at)))::int;
    perform herald_raise('rate_limit_exceeded', jsonb_build_object(
      'retry_after', wait,
      'message', format('Too many notifications sent to this user (%s a minute). Retry after %s seconds.', per_minute, wait))::text);
  end if;
  insert into notification_send_windows as w (user_id, sent_at) values (recipient, recent || at)
  on conflict (user_id) do update set sent_at = excluded.sent_at;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- The send. The row's payload holds what the pass renders (docs/app-contract.md#the-push-contract):
-- the four texts, `data`, `deep_link`, `image_url`, `badge_increment` (default 1), `sound` (default
-- 'default'; null: none) and, for priority low, `silent` (a data-only push). `push_token` in the answer
-- is the person's most recently registered active token; every active token gets the push.
create or replace function send_notification(request jsonb) returns jsonb
language plpgsql volatile security definer set search_path = public, pg_temp
as $$
declare
  caller_role text := herald_request_role();
  recipient uuid;
  token text;
  last_reason text;
  at timestamptz := now();
  payload jsonb;
  id uuid;
begin
  if caller_role is not null and caller_role <> 'service_role' then
    perform herald_raise('forbidden', 'sending notifications needs the service role');
  end if;
  perform herald_send_check(request);
  recipient := (request ->> 'user_id')::uuid;
  if not exists (select 1 from user_profiles p where p.user_id = recipient) then
    perform herald_raise('user_not_found', 'no user has this user_id (no user_profiles row)');
  end if;
  select t.device_token into token from device_tokens t
   where t.user_id = recipient and t.is_active
   order by t.last_used_at desc nulls last, t.created_at desc, t.id limit 1;
  if token is null then
    select t.deactivated_reason into last_reason from device_tokens t
     where t.user_id = recipient order by t.deactivated_at desc nulls last limit 1;
    if last_reason is not null and last_reason not in ('unregistered', 'reassigned') then
      raise exception using errcode = 'PT422', message = 'invalid_token',
        detail = 'the push provider reported the user''s device tokens invalid or expired: the app must register a new one';
    end if;
    perform herald_raise('user_not_found', 'the user has no registered device tokens');
  end if;

  payload := jsonb_build_object('title_en', request -> 'title_en', 'title_ar', request -> 'title_ar',
                                'body_en', request -> 'body_en', 'body_ar', request -> 'body_ar',
                                'badge_increment', coalesce(request ->> 'badge_increment', '1')::int,
                                'sound', case when request ? 'sound' then request -> 'sound' else '"default"' end)
             || jsonb_strip_nulls(jsonb_build_object('deep_link', request -> 'deep_link', 'image_url', request -> 'image_url',
                                                     'data', request -> 'data'))
             || case when request ->> 'priority' = 'low' then '{"silent": true}'::jsonb else '{}' end;
  if jsonb_typeof(request -> 'scheduled_at') = 'number' then
    at := greatest(at, to_timestamp((request ->> 'scheduled_at')::numeric / 1000));
  end if;

  perform herald_send_admit(recipient);
  insert into notification_queue (recipient_user_id, member_user_id, channel, kind, priority, payload,
                                  scheduled_at, run_after)
  values (recipient, recipient, 'push', request ->> 'notification_type', request ->> 'priority', payload, at, at)
  returning notification_queue.id into id;

  return jsonb_build_object('notification_id', id, 'user_id', recipient, 'push_token', token,
                            'status', 'scheduled', 'sent_at', null, 'scheduled_at', herald_ms(at),
                            'notification_type', request ->> 'notification_type', 'priority', request ->> 'priority');
end
$$;

-- What became of a sent notification, for the edge function that waits briefly for the push:
-- `status` 'sent' (with `sent_at` and, when Expo carried it, `expo_receipt_id`: Expo's ticket id),
-- 'failed' (with `error`: the provider's refusal, or why the pass skipped it) or 'scheduled' (waiting
-- for its time or a pass, or retrying). `push_token` is the token it reached, else as the send said.
create or replace function send_notification_status(notification_id uuid) returns jsonb
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller_role text := herald_request_role();
  q record;
  reached record;
  token text;
begin
  if caller_role is not null and caller_role <> 'service_role' then
    perform herald_raise('forbidden', 'reading sends needs the service role');
  end if;
  select n.id, n.recipient_user_id, n.status, n.permanent, n.last_error, n.skip_reason, n.sent_at
    into q from notification_queue n where n.id = send_notification_status.notification_id;
  if not found then
    perform herald_raise('invalid_request', 'notification_id does not name a queued notification');
  end if;
  select coalesce(t.device_token, d.destination) as token, d.provider, d.provider_message_id into reached
    from notification_deliveries d left join device_tokens t on t.id = d.device_token_id
   where d.queue_id = q.id and d.outcome = 'delivered'
   order by d.provider = 'expo' desc, d.id limit 1;
  token := reached.token;
  if token is null then
    select t.device_token into token from device_tokens t
     where t.user_id = q.recipient_user_id and t.is_active
     order by t.last_used_at desc nulls last, t.created_at desc, t.id limit 1;
  end if;
  return jsonb_build_object(
    'notification_id', q.id, 'user_id', q.recipient_user_id, 'push_token', token,
    'status', case when q.status = 'sent' then 'sent'
                   when q.status = 'skipped' or (q.status = 'failed' and q.permanent) then 'failed'
                   else 'scheduled' end,
    'sent_at', herald_ms(q.sent_at),
    'expo_receipt_id', case when q.status = 'sent' and reached.provider = 'expo' then reached.provider_message_id end,
    'error', case when q.status = 'skipped' then 'skipped: ' || coalesce(q.skip_reason, 'unknown')
                  when q.status = 'failed' and q.permanent then coalesce(q.last_error, 'failed') end);
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Privileges: the helpers for the owner only; the two functions for the owner and service_role (where
-- it exists), not PUBLIC, anon or authenticated — which Supabase's default privileges granted them.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_request_role', 'herald_raise', 'herald_push_data_bytes', 'herald_send_check',
                         'herald_send_check_extras', 'herald_send_admit',
                         'send_notification', 'send_notification_status')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant execute on function send_notification(jsonb), send_notification_status(uuid) to service_role;
  end if;
end
$$;

-- Consent to push, the app roles' grants, and refusals that say what is wrong (docs/app-contract.md).

-- ---------------------------------------------------------------------------------------------------
-- A registered device is consent to push. `notify_push` defaulted to false and nothing turned it on,
-- so a person who registered a phone was never pushed. Now the column tells three states apart:
--   true   the person switched push on
--   false  the person switched push off: it stays off, whatever they register later
--   null   never set: push is on while the person has an active device token
-- An upgrade keeps every value a row holds. A `false` written before this migration cannot be told
-- from the former default, so it reads as the person's own "off" (an operator whose app never offered
-- the switch may set those rows to null: docs/app-contract.md#consent-to-push).
alter table user_profiles alter column notify_push drop not null;
alter table user_profiles alter column notify_push set default null;
comment on column user_profiles.notify_push is
  'Push on (true), off (false), or never set (null: on while the person has an active device token)';
-- The passes read it so (HeraldWorker's PushConsent), in one expression that a scan of every profile
-- answers with one hashed look at device_tokens:
--     notify_push or (notify_push is null and exists (an active device_tokens row of the person))

-- The server-side send as in sql/036, refusing at once a person who switched push off
-- (`push_disabled`, PT422) instead of answering `scheduled` for a row the pass would skip.
create or replace function send_notification(request jsonb) returns jsonb
language plpgsql volatile security definer set search_path = public, pg_temp
as $$
declare
  caller_role text := herald_request_role();
  recipient uuid;
  choice boolean;
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
  select p.notify_push into choice from user_profiles p where p.user_id = recipient;
  if not found then
    perform herald_raise('user_not_found', 'no user has this user_id (no user_profiles row)');
  end if;
  if choice is false then
    perform herald_raise('push_disabled', 'the user switched push notifications off (user_profiles.notify_push is false)');
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

-- ---------------------------------------------------------------------------------------------------
-- No silent refusal. send_notification's required fields as in sql/036, a field of the wrong type
-- named as such ("title_en must be a string, not a number") rather than as missing.
create or replace function herald_send_check(request jsonb) returns void
language plpgsql stable set search_path = public, pg_temp
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
    if coalesce(jsonb_typeof(request -> field), 'null') not in ('string', 'null') then
      perform herald_raise('invalid_request', format('%s must be a string, not %s', field,
                                                     case jsonb_typeof(request -> field) when 'array' then 'an array'
                                                          when 'object' then 'an object' else 'a ' || jsonb_typeof(request -> field) end));
    end if;
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

-- mark_notifications_read as in sql/037, at most 1,000 ids: more is a validation_error, and nothing
-- is marked (it used to mark the first 1,000 and say nothing of the rest).
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
  if cardinality(notification_ids) > 1000 then
    perform herald_raise('validation_error', format('notification_ids names %s notifications; at most 1000 a call',
                                                    cardinality(notification_ids)));
  end if;
  with named as (
    select herald_entry_of(caller, n) as id from unnest(notification_ids) n
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

-- ---------------------------------------------------------------------------------------------------
-- The app roles' grants, whenever the roles appear. Each migration grants the app roles that exist
-- when it runs; roles made after `herald migrate` (a local database prepared after the fact) held
-- nothing, and a second `herald migrate` had nothing to apply. The operator calls this function
-- (scripts/supabase-like.sql does) to give them what the migrations give: `authenticated` the RPCs
-- and its own rows' columns (row-level security narrows them), `service_role` the server-side send
-- and notification_types, `anon` nothing. Returns the app roles it found. Re-runnable.
--
--     select herald_grant_app_roles();   -- {anon,authenticated,service_role}
create or replace function herald_grant_app_roles() returns text[]
language plpgsql volatile set search_path = public, pg_temp
as $$
declare
  fn regprocedure;
  fn_name text;
  found text[];
  rpcs text[] := array['snooze_pattern_alert', 'dismiss_pattern_alert', 'get_family_pattern_alerts',
                       'register_device_token', 'unregister_device_token', 'mark_notifications_read',
                       'get_notifications', 'record_notification_action', 'get_notification_history',
                       'schedule_reminder', 'reschedule_reminder', 'cancel_reminder', 'cancel_reminders_by_type',
                       'get_scheduled_reminders', 'get_daily_forecast'];
  sends text[] := array['send_notification', 'send_notification_status'];
begin
  select coalesce(array_agg(rolname::text order by rolname), '{}') into found
    from pg_roles where rolname in ('anon', 'authenticated', 'service_role');
  -- By name, not by fn::text: that reads `public.name(…)` where `public` is not on the path.
  for fn, fn_name in select p.oid::regprocedure, p.proname::text from pg_proc p
             where p.pronamespace = 'public'::regnamespace and p.proname = any(rpcs || sends) loop
    execute format('revoke all on function %s from public', fn);
    if 'anon' = any(found) then execute format('revoke all on function %s from anon', fn); end if;
    if 'authenticated' = any(found) then
      execute format(case when fn_name = any(sends) then 'revoke all on function %s from authenticated'
                          else 'grant execute on function %s to authenticated' end, fn);
    end if;
    if 'service_role' = any(found) and fn_name = any(sends) then
      execute format('grant execute on function %s to service_role', fn);
    end if;
  end loop;
  if 'authenticated' = any(found) then
    grant select on user_profiles, device_tokens, inbox to authenticated;
    grant select, insert on daily_logs, dose_events to authenticated;
    grant update (display_name, timezone, locale,
                  notify_in_app, notify_push, notify_email, notify_sms, notify_whatsapp,
                  champion_notify_email, champion_notify_sms,
                  quiet_hours_start, quiet_hours_end, quiet_hours_notification_level, quiet_hours_action,
                  forecast_notification_time, latitude, longitude, location_name,
                  daily_reminder_enabled, dose_reminder_enabled, washout_notifications_enabled,
                  test_start_reminder_enabled, forecast_notifications_enabled, prompt_notifications_enabled,
                  daily_reminder_time, dose_reminder_advance_minutes, quiet_hours_allow_critical,
                  adaptive_frequency_enabled)
      on user_profiles to authenticated;
    -- The policies call auth.uid() as the caller; where sql/001 made the schema, grant it.
    if exists (select 1 from pg_namespace where nspname = 'auth' and nspowner = (select oid from pg_roles where rolname = current_user)) then
      grant usage on schema auth to authenticated;
    end if;
  end if;
  if 'service_role' = any(found) then
    grant select, insert, update, delete on notification_types to service_role;
  end if;
  return found;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Privileges: the helpers above for the owner only; the two RPCs keep the grants they had. Then the
-- app roles that exist now get what the migrations give them.
do $$
declare fn regprocedure; app_role name;
begin
  for fn in select p.oid::regprocedure from pg_proc p
             where p.pronamespace = 'public'::regnamespace
               and p.proname in ('herald_send_check', 'herald_grant_app_roles') loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;
select herald_grant_app_roles();

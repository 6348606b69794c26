-- Consent to push (docs/app-contract.md#consent-to-push).

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

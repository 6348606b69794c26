-- A push token has one stored form, a phone that left an account leaves no readable token behind, and a
-- person holds at most a set number of active devices.
--
-- One form. The adapters trim a token before sending, so "<token>\n" and "<token>" reach the same phone;
-- stored apart, they were two active rows, and the unique index on active tokens let a second account
-- keep the phone. Now every writer's token is put in its canonical form by a trigger (surrounding
-- whitespace and control characters gone; APNs hex and Expo's uuid form in lower case) and a CHECK
-- holds the provider's own shape: APNs lower-case hex, Expo `ExponentPushToken[…]` (or its uuid form),
-- any other provider printable ASCII without spaces, at most 4,096 characters. The unique indexes
-- compare that form.
--
-- Gone when it leaves. When a phone moves to another account ('reassigned') or the app unregisters it
-- ('unregistered'), the row keeps `sha256:<hex>` of the token instead of the token: the former account
-- still sees that the device left (its row, name and reason), but can no longer read or use its token.
-- Registering the same token again revives that row.
--
-- At most N active. `herald_device_limits.max_active_per_person` (10) bounds a person's active tokens:
-- registering one more deactivates the least recently used ('device_limit'), and a pass sends a row to
-- at most that many of a person's devices, the most recently used. At most `max_kept_per_person` (50)
-- inactive rows are kept per person; the oldest go.

create table if not exists herald_device_limits (
  singleton              boolean primary key default true check (singleton),
  max_active_per_person  int not null default 10 check (max_active_per_person between 1 and 1000),
  max_kept_per_person    int not null default 50 check (max_kept_per_person between 0 and 10000)
);
insert into herald_device_limits default values on conflict do nothing;
select herald_restrict_table('herald_device_limits');

-- The token as stored: no surrounding whitespace or control characters; APNs hex and Expo's uuid form in
-- lower case (their providers read them without regard to case). Anything else is kept as written, and
-- herald_device_token_is_canonical judges it.
create or replace function herald_canonical_device_token(provider text, token text) returns text
language sql immutable parallel safe
as $$
  select case when provider = 'apns' then lower(t)
              when provider = 'expo' and t ~* '^[a-z0-9]{8}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{12}$' then lower(t)
              else t end
    from (select regexp_replace(token, '^[\x01-\x20\x7f]+|[\x01-\x20\x7f]+$', '', 'g') as t) s
$$;

-- Whether `token` is in its canonical form and has its provider's shape.
create or replace function herald_device_token_is_canonical(provider text, token text) returns boolean
language sql immutable parallel safe
as $$
  select token is not null and length(token) <= 4096
     and token = herald_canonical_device_token(provider, token)
     and case provider
           when 'apns' then token ~ '^([0-9a-f]{2})+$'
           when 'expo' then token ~ '^Expo(nent)?PushToken\[[A-Za-z0-9_-]+\]$'
                         or token ~ '^[a-z0-9]{8}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{12}$'
           else token ~ '^[!-~]+$' end
$$;

-- What a row keeps of a token once the phone has left the account.
create or replace function herald_departed_device_token(token text) returns text
language sql immutable parallel safe
as $$ select 'sha256:' || encode(sha256(convert_to(token, 'UTF8')), 'hex') $$;

create or replace function herald_device_token_written() returns trigger
language plpgsql
as $$
begin
  if new.device_token !~ '^sha256:[0-9a-f]{64}$' then
    new.device_token := herald_canonical_device_token(new.provider, new.device_token);
  end if;
  return new;
end
$$;

-- Rows already stored: settle them before the constraint and the trigger.
create temporary table herald_token_forms on commit drop as
  select t.id, t.user_id, t.is_active, t.device_token as stored,
         herald_canonical_device_token(t.provider, t.device_token) as canonical,
         herald_device_token_is_canonical(t.provider, herald_canonical_device_token(t.provider, t.device_token)) as usable,
         row_number() over (partition by t.user_id, herald_canonical_device_token(t.provider, t.device_token)
                            order by t.is_active desc, t.last_used_at desc nulls last, t.updated_at desc, t.id) as rank_in_user
    from device_tokens t
   where t.device_token !~ '^sha256:[0-9a-f]{64}$';

-- A person's copies of one token are one device: the deliveries point at the row kept, the rest go.
update notification_deliveries d
   set device_token_id = k.id
  from herald_token_forms dup
  join herald_token_forms k on k.user_id = dup.user_id and k.canonical = dup.canonical and k.rank_in_user = 1
 where dup.rank_in_user > 1 and d.device_token_id = dup.id;
delete from device_tokens t using herald_token_forms dup where dup.rank_in_user > 1 and t.id = dup.id;

-- A token no provider could take was never a destination: it is kept as a hash, inactive.
update device_tokens t
   set device_token = herald_departed_device_token(f.stored), is_active = false,
       deactivated_at = coalesce(t.deactivated_at, now()), deactivated_reason = coalesce(t.deactivated_reason, 'invalid_token'),
       updated_at = now()
  from herald_token_forms f
 where f.rank_in_user = 1 and not f.usable and t.id = f.id;

-- One active owner per phone: the most recently used keeps it; the others' rows are reassigned.
update device_tokens t
   set is_active = false, deactivated_at = now(), deactivated_reason = 'reassigned', updated_at = now()
  from (select f.id, row_number() over (partition by f.canonical order by d.last_used_at desc nulls last, d.updated_at desc, d.id) as n
          from herald_token_forms f join device_tokens d on d.id = f.id
         where f.rank_in_user = 1 and f.usable and f.is_active) o
 where o.n > 1 and t.id = o.id;

drop index if exists device_tokens_active_token;
update device_tokens t set device_token = f.canonical, updated_at = now()
  from herald_token_forms f
 where f.rank_in_user = 1 and f.usable and f.canonical <> f.stored and t.id = f.id;
create unique index if not exists device_tokens_active_token on device_tokens (device_token) where is_active;

-- Phones that already left an account keep only their hash there.
update device_tokens t
   set device_token = herald_departed_device_token(t.device_token), updated_at = now()
 where not t.is_active and t.deactivated_reason in ('reassigned', 'unregistered')
   and t.device_token !~ '^sha256:[0-9a-f]{64}$';

-- People over the limit keep their most recently used devices.
update device_tokens t
   set is_active = false, deactivated_at = now(), deactivated_reason = 'device_limit', updated_at = now()
  from (select d.id, row_number() over (partition by d.user_id order by d.last_used_at desc nulls last, d.created_at desc, d.id) as n
          from device_tokens d where d.is_active) o
 where o.n > (select max_active_per_person from herald_device_limits) and t.id = o.id;

alter table device_tokens drop constraint if exists device_tokens_canonical_token;
alter table device_tokens add constraint device_tokens_canonical_token check (
  herald_device_token_is_canonical(provider, device_token)
  or (not is_active and device_token ~ '^sha256:[0-9a-f]{64}$'));

drop trigger if exists herald_device_token_written on device_tokens;
create trigger herald_device_token_written before insert or update of device_token, provider on device_tokens
  for each row execute function herald_device_token_written();

-- A person's inactive rows beyond the newest `max_kept_per_person` go (their deliveries keep their
-- destination text; only the link to the row is cleared).
create or replace function herald_prune_departed_devices(person uuid) returns void
language sql
as $$
  delete from device_tokens t
   where t.id in (select d.id from device_tokens d
                   where d.user_id = person and not d.is_active
                   order by d.deactivated_at desc nulls last, d.updated_at desc, d.id
                  offset (select max_kept_per_person from herald_device_limits))
$$;

-- As in 013 (the same parameters and answer), with the token's canonical form, the departed account
-- keeping only its hash, the caller's own departed row revived, and the limit on active devices.
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
  sent text := coalesce(register_device_token.device_token, register_device_token.push_token);
  kind text := coalesce(register_device_token.platform, register_device_token.device_type);
  chosen_provider text;
  token text;
  departed text;
  row device_tokens;
begin
  perform herald_check_registration(caller, register_device_token.device_token, register_device_token.push_token,
                                    register_device_token.platform, register_device_token.device_type,
                                    register_device_token.provider, register_device_token.locale);
  -- Seed 003's request (push_token, no provider) is an Expo token, checked by the seed's pattern.
  chosen_provider := coalesce(register_device_token.provider,
    case when btrim(sent) like 'ExponentPushToken[%' or btrim(sent) like 'ExpoPushToken[%' then 'expo'
         when register_device_token.push_token is not null then 'expo'
         when kind = 'ios' then 'apns'
         else 'fcm' end);
  token := herald_canonical_device_token(chosen_provider, sent);
  if not herald_device_token_is_canonical(chosen_provider, token) then
    perform herald_raise('invalid_token', case chosen_provider
      when 'expo' then 'malformed Expo push token: expected ExponentPushToken[…]'
      when 'apns' then 'malformed APNs device token: expected hexadecimal digits'
      else 'malformed FCM registration token: expected printable characters without spaces' end);
  end if;
  departed := herald_departed_device_token(token);

  -- One registration per person at a time (the device limit counts), then per token (two people
  -- registering one phone take turns, as in 008).
  perform pg_advisory_xact_lock(1751478885, hashtext(caller::text));
  perform pg_advisory_xact_lock(1751478884, hashtext(token));

  -- The phone leaves every other account, which keeps only the token's hash.
  delete from device_tokens t
   where t.device_token = departed and t.user_id <> caller
     and exists (select 1 from device_tokens p where p.user_id = t.user_id and p.device_token = token);
  update device_tokens t
     set is_active = false, deactivated_at = case when t.is_active then now() else t.deactivated_at end,
         deactivated_reason = 'reassigned', device_token = departed, updated_at = now()
   where t.device_token = token and t.user_id <> caller;
  -- The caller's own row for this phone, kept as a hash since the phone last left, comes back.
  update device_tokens t set device_token = token, updated_at = now()
   where t.user_id = caller and t.device_token = departed
     and not exists (select 1 from device_tokens p where p.user_id = caller and p.device_token = token);

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

  perform herald_keep_device_limit(caller, row.id);
  return jsonb_build_object(
    'id', row.id, 'user_id', row.user_id, 'push_token', row.device_token, 'device_type', row.platform,
    'locale', row.locale, 'registered_at', herald_ms(row.last_used_at), 'status', 'active',
    'device_name', row.device_name, 'app_version', row.app_version,
    'device_token', row.device_token, 'platform', row.platform, 'provider', row.provider);
end
$$;

-- register_device_token's refusals of its arguments, as in 013.
create or replace function herald_check_registration(caller uuid, device_token text, push_token text, platform text,
                                                     device_type text, provider text, locale text) returns void
language plpgsql
as $$
declare
  token text := coalesce(device_token, push_token);
  kind text := coalesce(platform, device_type);
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if device_token is not null and push_token is not null and device_token <> push_token then
    perform herald_raise('validation_error', 'device_token and push_token name different tokens');
  end if;
  if platform is not null and device_type is not null and platform <> device_type then
    perform herald_raise('validation_error', 'platform and device_type differ');
  end if;
  if token is null or length(btrim(token)) = 0 then
    perform herald_raise('validation_error', 'push_token is required');
  end if;
  if length(token) > 4096 then
    perform herald_raise('invalid_token', 'the push token is longer than 4096 characters');
  end if;
  if kind is null or kind not in ('ios', 'android', 'web') then
    perform herald_raise('validation_error', 'device_type must be ios or android (or web)');
  end if;
  if provider is not null and provider not in ('apns', 'fcm', 'expo') then
    perform herald_raise('validation_error', 'provider must be apns, fcm or expo');
  end if;
  if locale is not null and locale !~ '^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$' then
    perform herald_raise('validation_error', 'locale must be a language tag such as en, ar or pt-BR');
  end if;
end
$$;

-- A person's active devices beyond the limit, least recently used first, are deactivated
-- ('device_limit'); `kept` (the one just registered) stays. Then the inactive rows are pruned.
create or replace function herald_keep_device_limit(person uuid, kept uuid) returns void
language sql
as $$
  update device_tokens t
     set is_active = false, deactivated_at = now(), deactivated_reason = 'device_limit', updated_at = now()
   where t.id in (select d.id from device_tokens d
                   where d.user_id = person and d.is_active and d.id <> kept
                   order by d.last_used_at desc nulls last, d.created_at desc, d.id
                  offset (select max_active_per_person - 1 from herald_device_limits));
  select herald_prune_departed_devices(person);
$$;

-- As in 013, with the row keeping only the token's hash.
create or replace function unregister_device_token(device_token text default null, push_token text default null)
returns jsonb
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  sent text := coalesce(unregister_device_token.device_token, unregister_device_token.push_token);
  at timestamptz := now();
  token text;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if sent is null or length(btrim(sent)) = 0 then
    perform herald_raise('validation_error', 'push_token is required');
  end if;
  if length(sent) > 4096 then
    perform herald_raise('invalid_token', 'the push token is longer than 4096 characters');
  end if;
  perform pg_advisory_xact_lock(1751478885, hashtext(caller::text));
  select t.device_token into token from device_tokens t
   where t.user_id = caller and t.is_active and t.device_token = herald_canonical_device_token(t.provider, sent)
   limit 1;
  if token is not null then
    delete from device_tokens t where t.user_id = caller and t.device_token = herald_departed_device_token(token);
    update device_tokens t
       set is_active = false, deactivated_at = at, deactivated_reason = 'unregistered',
           device_token = herald_departed_device_token(token), updated_at = at
     where t.user_id = caller and t.device_token = token and t.is_active;
  end if;
  return jsonb_build_object('push_token', sent, 'device_token', sent,
                            'status', case when token is not null then 'unregistered' else 'not_found' end,
                            'unregistered_at', herald_ms(at));
end
$$;

-- Privileges, as 008 sets them: helpers for the owner only (the two the table's CHECK calls stay
-- executable by whoever may write the table, Supabase's service_role among them).
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_canonical_device_token', 'herald_device_token_is_canonical',
                         'herald_departed_device_token', 'herald_device_token_written',
                         'herald_prune_departed_devices', 'herald_check_registration', 'herald_keep_device_limit')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end
$$;

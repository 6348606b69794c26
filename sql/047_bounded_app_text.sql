-- Bounded text, and dose events at a person's pace.
--
-- Every text column an app or a backend writes has a length CHECK, so no row can make a pass hold more
-- than a few kilobytes of it: a pass reads a profile's locale, a token's locale, a queue row's payload,
-- and a stored value of 80 MB once made every pass that delivered to its person run out of memory.
--
--   user_profiles      display_name 200, locale 35 (BCP 47's longest tag), location_name 200,
--                      timezone 64, email 254 (RFC 5321)
--   device_tokens      locale 35, device_name 200, app_version 100, os_version 100
--   reminders          title, title_ar 256; body, body_ar 2,048 (what schedule_reminder takes);
--                      related_entity_type 64, related_entity_id 256; channel 32
--   dose_events        related_entity_id 256
--   notification_queue payload 65,536 bytes; dedupe_key 512; notification_group 256;
--                      related_entity_type 64, related_entity_id 256
--   inbox              title, body and their _en/_ar 4,000 (as the entry's text is cut when written);
--                      deep_link, image_url 2,048; related_entity_type 64, related_entity_id 256
--   daily_forecasts    location_name 200, forecast_locale 35, forecast_summary, why_explanation,
--                      comfort_tip 4,000
--   wearable_daily_metrics source 100
--
-- (prompt_settings holds no text.) Each CHECK is added NOT VALID, the rows over it are put right (cut to
-- the limit where a prefix keeps the meaning: a name, a text, a locale's language; emptied where it
-- would not: an address, a key, a link; a time zone becomes UTC and a reminder's channel push), then it
-- is validated: a database that holds such rows upgrades.
-- The functions the app calls refuse a value over its limit first, with `validation_error` naming the
-- field (the triggers below, which run before the CHECKs and before the time zone's own check); the
-- CHECK is what holds every other writer.
--
-- The app's own dose events (`dose_events`, which the adherence score reads) are held to 300 in any 24
-- hours per person, each dose's time within two days of now.

-- The strongest lock this migration takes on the queue (its CHECKs), taken first: a pass's record holds
-- the queue before the other tables it writes, so taken after those it could deadlock with one. Passes
-- wait for the migration instead (1 s for a queue and an inbox of 200,000 rows each).
lock table notification_queue in access exclusive mode;

-- ---------------------------------------------------------------------------------------------------
-- What an app's write is refused with first: `validation_error` (SQLSTATE PT422) naming the field, the
-- value never repeated back. The profile's trigger runs before user_profiles_timezone_check (triggers
-- run in the order of their names), whose message would repeat the zone.
create or replace function herald_profile_text_lengths() returns trigger
language plpgsql
as $$
begin
  if char_length(new.display_name) > 200 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'display_name must be at most 200 characters';
  elsif char_length(new.locale) > 35 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'locale must be at most 35 characters';
  elsif char_length(new.location_name) > 200 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'location_name must be at most 200 characters';
  elsif char_length(new.timezone) > 64 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'timezone must be at most 64 characters';
  elsif char_length(new.email) > 254 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'email must be at most 254 characters';
  end if;
  return new;
end
$$;
drop trigger if exists user_profiles_text_lengths on user_profiles;
create trigger user_profiles_text_lengths
  before insert or update of display_name, locale, location_name, timezone, email on user_profiles
  for each row execute function herald_profile_text_lengths();

-- register_device_token's values, named as its parameters name them.
create or replace function herald_device_token_text_lengths() returns trigger
language plpgsql
as $$
begin
  if char_length(new.locale) > 35 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'locale must be at most 35 characters';
  elsif char_length(new.device_name) > 200 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'device_name must be at most 200 characters';
  elsif char_length(new.app_version) > 100 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'app_version must be at most 100 characters';
  elsif char_length(new.os_version) > 100 then
    raise exception using errcode = 'PT422', message = 'validation_error', detail = 'os_version must be at most 100 characters';
  end if;
  return new;
end
$$;
drop trigger if exists device_tokens_text_lengths on device_tokens;
create trigger device_tokens_text_lengths
  before insert or update of locale, device_name, app_version, os_version on device_tokens
  for each row execute function herald_device_token_text_lengths();

-- ---------------------------------------------------------------------------------------------------
-- The CHECKs: `<table>_<column>_length`, char_length(column) <= limit. `fix` says what a longer value
-- becomes: cut to the limit, null, or the column's default.
do $$
declare
  b record;
  t record;
  fixes text;
  over text;
begin
  create temporary table herald_text_bounds (tbl text, col text, most int, fix text) on commit drop;
  insert into herald_text_bounds values
    ('user_profiles', 'display_name', 200, 'cut'), ('user_profiles', 'locale', 35, 'cut'),
    ('user_profiles', 'location_name', 200, 'cut'), ('user_profiles', 'timezone', 64, '''UTC'''),
    ('user_profiles', 'email', 254, 'null'),
    ('device_tokens', 'locale', 35, 'cut'), ('device_tokens', 'device_name', 200, 'cut'),
    ('device_tokens', 'app_version', 100, 'cut'), ('device_tokens', 'os_version', 100, 'cut'),
    ('reminders', 'title', 256, 'cut'), ('reminders', 'title_ar', 256, 'cut'),
    ('reminders', 'body', 2048, 'cut'), ('reminders', 'body_ar', 2048, 'cut'),
    ('reminders', 'related_entity_type', 64, 'cut'), ('reminders', 'related_entity_id', 256, 'cut'),
    ('reminders', 'channel', 32, '''push'''),
    -- Part of a unique key: a cut value could meet another row's.
    ('dose_events', 'related_entity_id', 256, 'null'),
    ('notification_queue', 'dedupe_key', 512, 'null'), ('notification_queue', 'notification_group', 256, 'null'),
    ('notification_queue', 'related_entity_type', 64, 'cut'), ('notification_queue', 'related_entity_id', 256, 'cut'),
    ('inbox', 'title', 4000, 'cut'), ('inbox', 'body', 4000, 'cut'),
    ('inbox', 'title_en', 4000, 'cut'), ('inbox', 'title_ar', 4000, 'cut'),
    ('inbox', 'body_en', 4000, 'cut'), ('inbox', 'body_ar', 4000, 'cut'),
    ('inbox', 'deep_link', 2048, 'null'), ('inbox', 'image_url', 2048, 'null'),
    ('inbox', 'related_entity_type', 64, 'cut'), ('inbox', 'related_entity_id', 256, 'cut'),
    ('daily_forecasts', 'location_name', 200, 'cut'), ('daily_forecasts', 'forecast_locale', 35, 'cut'),
    ('daily_forecasts', 'forecast_summary', 4000, 'cut'), ('daily_forecasts', 'why_explanation', 4000, 'cut'),
    ('daily_forecasts', 'comfort_tip', 4000, 'cut'),
    ('wearable_daily_metrics', 'source', 100, 'cut');

  for b in select * from herald_text_bounds loop
    if not exists (select 1 from pg_constraint
                    where conrelid = b.tbl::regclass and conname = b.tbl || '_' || b.col || '_length') then
      execute format('alter table %I add constraint %I check (char_length(%I) <= %s) not valid',
                     b.tbl, b.tbl || '_' || b.col || '_length', b.col, b.most);
    end if;
  end loop;
  if not exists (select 1 from pg_constraint
                  where conrelid = 'notification_queue'::regclass and conname = 'notification_queue_payload_size') then
    -- The payload's size as written (a CHECK sees the value before it is compressed).
    alter table notification_queue add constraint notification_queue_payload_size
      check (pg_column_size(payload) <= 65536) not valid;
  end if;

  -- One pass over each table, every column put right in the same update.
  for t in select tbl, string_agg(format('%I = case when char_length(%I) > %s then %s else %I end', col, col, most,
                                         case fix when 'cut' then format('left(%I, %s)', col, most) else fix end, col),
                                  ', ') as sets,
                  string_agg(format('char_length(%I) > %s', col, most), ' or ') as cond
             from herald_text_bounds group by tbl loop
    execute format('update %I set %s where %s', t.tbl, t.sets, t.cond);
  end loop;
  -- A payload over the limit is emptied; a row still waiting to be sent is failed for good instead
  -- (a row a pass holds under a live lease is that pass's to record). Only a compressed value can be
  -- larger than it is stored, and only that one is measured again as written.
  update notification_queue q
     set payload = '{}'::jsonb,
         status = case when w.waiting then 'failed' else q.status end,
         permanent = q.permanent or w.waiting,
         last_error = case when w.waiting then 'payload over 65536 bytes: not sent' else q.last_error end,
         locked_until = case when w.waiting then null else q.locked_until end,
         locked_by = case when w.waiting then null else q.locked_by end
    from (select o.id, o.recipient_user_id,
                 (o.status = 'pending' or (o.status = 'failed' and not o.permanent))
                 and not coalesce(o.locked_until >= now(), false) as waiting
            from notification_queue o
           where case when pg_column_compression(o.payload) is null then pg_column_size(o.payload) > 65536
                      else pg_column_size(o.payload::text::jsonb) > 65536 end) w
   where q.id = w.id and q.recipient_user_id = w.recipient_user_id;

  for b in select * from herald_text_bounds loop
    execute format('alter table %I validate constraint %I', b.tbl, b.tbl || '_' || b.col || '_length');
  end loop;
  alter table notification_queue validate constraint notification_queue_payload_size;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Dose events the app inserts itself (row-level security lets it insert its own): at most 300 in any 24
-- hours per person, each dose's time (`scheduled_at`) and, when given, `taken_at` within two days of now.
-- herald (the owner), the service role (BYPASSRLS) and record_notification_action (which runs as the
-- owner) are not held to it: the limits are the app's roles'.
create index if not exists dose_events_user_created on dose_events (user_id, created_at);

create or replace function herald_dose_event_admitted() returns trigger
language plpgsql
as $$
declare
  recent int;
begin
  if exists (select 1 from pg_roles r where r.rolname = current_user and (r.rolsuper or r.rolbypassrls))
     or pg_has_role(current_user, (select c.relowner from pg_class c where c.oid = tg_relid), 'member') then
    return new;
  end if;
  new.created_at := now();  -- what the count below reads: not the app's to set
  if new.scheduled_at is null or new.scheduled_at not between now() - interval '2 days' and now() + interval '2 days' then
    raise exception using errcode = 'PT422', message = 'validation_error',
      detail = 'scheduled_at must be within 2 days of now';
  end if;
  if new.taken_at is not null and new.taken_at not between now() - interval '2 days' and now() + interval '2 days' then
    raise exception using errcode = 'PT422', message = 'validation_error',
      detail = 'taken_at must be within 2 days of now';
  end if;
  -- One person's inserts take turns, so two at once cannot both take the 300th place.
  perform pg_advisory_xact_lock(1751478886, hashtext(new.user_id::text));
  select count(*) into recent from (
    select 1 from dose_events e
     where e.user_id = new.user_id and e.created_at > now() - interval '24 hours'
     limit 300) r;
  if recent >= 300 then
    raise exception using errcode = 'PT429', message = 'rate_limit_exceeded',
      detail = 'at most 300 dose events may be recorded in 24 hours';
  end if;
  return new;
end
$$;
drop trigger if exists dose_events_admitted on dose_events;
create trigger dose_events_admitted before insert on dose_events
  for each row execute function herald_dose_event_admitted();

-- Trigger functions: their owner's only (a trigger runs them whoever writes the row).
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_profile_text_lengths', 'herald_device_token_text_lengths', 'herald_dose_event_admitted')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end
$$;

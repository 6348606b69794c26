-- The forecast the app opens (the daily flare forecast: "user taps notification → app opens → instant
-- display of forecast"), the language of its words, and the forecasts that missed their time.

-- The language of forecast_summary, why_explanation, comfort_tip and daily_insight when herald wrote
-- them (en, ar, pt-BR): the push uses the summary where it is the recipient's language.
alter table daily_forecasts add column if not exists forecast_locale text;

-- A forecast that could not be made by its notification time (no weather, no forecast row), noted once
-- per person and date: the pass counts it (`generated.forecasts_missed`, `herald_pass_forecasts_missed`)
-- and logs it the first time. Kept a week.
create table if not exists forecast_misses (
  user_id        uuid not null,
  forecast_date  date not null,
  noted_at       timestamptz not null default now(),
  primary key (user_id, forecast_date)
);
select herald_restrict_table('forecast_misses');

-- herald_raise (sql/013, sql/036) learns `not_found`: HTTP 404, for an id or a date that names nothing
-- of the caller's; the other codes keep theirs. Replaced only where it does not know the code yet, so
-- that a migration before this one that taught it other codes too keeps them.
do $outer$
declare state text;
begin
  begin
    perform herald_raise('not_found');
  exception when others then
    get stacked diagnostics state = returned_sqlstate;
  end;
  if state is distinct from 'PT404' then
    create or replace function herald_raise(code text, explanation text default null) returns void
    language plpgsql
    as $$
    begin
      raise exception using
        errcode = case code when 'invalid_token' then 'PT400' when 'invalid_request' then 'PT400'
                            when 'unauthorized' then 'PT401' when 'forbidden' then 'PT403'
                            when 'user_not_found' then 'PT404' when 'not_found' then 'PT404'
                            when 'rate_limit_exceeded' then 'PT429'
                            when 'internal_error' then 'PT500' else 'PT422' end,
        message = code,
        detail = coalesce(explanation, code);
    end
    $$;
  end if;
end
$outer$;

-- Open-Meteo's hourly object ({"time":[…],"pressure_msl":[…],…}) as the design's list of hours
-- ([{"time":…,"pressure_msl":…,…}, …]); anything else as it is.
create or replace function herald_hourly_list(hourly jsonb) returns jsonb
language sql immutable
as $$
  select case
    when jsonb_typeof(hourly) = 'object' and jsonb_typeof(hourly -> 'time') = 'array' then (
      select coalesce(jsonb_agg((
               select coalesce(jsonb_object_agg(k.key, k.value -> (t.i - 1)::int), '{}'::jsonb)
                 from jsonb_each(hourly) as k
                where jsonb_typeof(k.value) = 'array') order by t.i), '[]'::jsonb)
        from jsonb_array_elements(hourly -> 'time') with ordinality as t(value, i))
    else hourly
  end
$$;

-- The daily flare forecast design's GET /user/daily-forecast/{date}: the caller's own forecast for
-- `forecast_date`, with its weather and words. Another person's forecast, or none yet: not_found.
--
--   {"date":"2026-01-25","weather":{"current":…,"hourly":[{"time":"2026-01-25T00:00","pressure_msl":1013.2,…},…],
--    "daily":…},
--    "flare_forecast":{"risk":"LOW","forecast":"…","why":"…","comfort_tip":"…","daily_insight":{…},
--                      "pressure_change_hpa":-1.2},
--    "location":{"latitude":51.5,"longitude":-0.1,"name":"London"},"locale":"en",
--    "notification_sent":true,"fetched_at":"2026-01-25T07:00:04Z"}
create or replace function get_daily_forecast(forecast_date date) returns jsonb
language plpgsql stable security definer set search_path = public, pg_temp
as $$
declare
  caller uuid := auth.uid();
  f daily_forecasts;
begin
  if caller is null then
    perform herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if get_daily_forecast.forecast_date is null then
    perform herald_raise('validation_error', 'forecast_date is required (YYYY-MM-DD)');
  end if;
  select * into f from daily_forecasts d
   where d.user_id = caller and d.forecast_date = get_daily_forecast.forecast_date;
  if not found then
    perform herald_raise('not_found', 'no forecast of yours for ' || get_daily_forecast.forecast_date::text);
  end if;
  return jsonb_build_object(
    'date', f.forecast_date::text,
    'weather', jsonb_build_object('current', f.current_weather, 'hourly', herald_hourly_list(f.hourly_forecast),
                                  'daily', f.daily_forecast),
    'flare_forecast', jsonb_build_object(
      'risk', f.risk_level, 'forecast', f.forecast_summary, 'why', f.why_explanation,
      'comfort_tip', f.comfort_tip, 'daily_insight', f.daily_insight,
      'pressure_change_hpa', f.pressure_change_hpa),
    'location', jsonb_build_object('latitude', f.location_latitude, 'longitude', f.location_longitude,
                                   'name', f.location_name),
    'locale', f.forecast_locale,
    'notification_sent', f.notification_sent,
    'fetched_at', to_char(f.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
end
$$;

-- Privileges, as 008 sets them: helpers for the owner only; the RPC for `authenticated` (where it
-- exists), not anon or PUBLIC.
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace and p.proname in ('herald_raise', 'herald_hourly_list')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;

  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace and p.proname = 'get_daily_forecast'
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

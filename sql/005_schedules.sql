-- What a pass evaluates besides pattern alerts: forecasts (seed 004), prompts (seed 002), reminders (seed 001).

create table if not exists daily_forecasts (
  id                    uuid primary key default gen_random_uuid(),
  user_id               uuid not null,
  forecast_date         date not null,
  location_latitude     double precision,
  location_longitude    double precision,
  location_name         text,
  current_weather       jsonb,
  hourly_forecast       jsonb,
  daily_forecast        jsonb,
  risk_level            text check (risk_level in ('LOW', 'MODERATE', 'HIGH')),
  forecast_summary      text,
  why_explanation       text,
  daily_insight         jsonb,
  comfort_tip           text,
  pressure_change_hpa   numeric,
  notification_sent     boolean not null default false,
  notification_sent_at  timestamptz,
  created_at            timestamptz not null default now(),
  updated_at            timestamptz not null default now(),
  unique (user_id, forecast_date)
);
create index if not exists daily_forecasts_date on daily_forecasts (forecast_date);
create index if not exists daily_forecasts_notification on daily_forecasts (notification_sent, forecast_date);

create table if not exists prompt_settings (
  user_id            uuid primary key,
  prompts_per_day    int not null default 4 check (prompts_per_day between 1 and 100),
  waking_hour_start  int not null default 7 check (waking_hour_start between 0 and 23),
  waking_hour_end    int not null default 22 check (waking_hour_end between 0 and 23),
  enabled            boolean not null default true,
  updated_at         timestamptz not null default now()
);

-- A user's prompt schedule for one local date exists once it has been enqueued.
create table if not exists prompt_schedules (
  user_id     uuid not null,
  local_date  date not null,
  prompts     int not null,
  created_at  timestamptz not null default now(),
  primary key (user_id, local_date)
);

create table if not exists reminders (
  id                 uuid primary key default gen_random_uuid(),
  user_id            uuid not null,
  schedule           text not null check (schedule in ('daily', 'once')),
  reminder_type      text not null default 'daily_log', -- seed 001: daily_log, dose, washout, test_start, …
  title              text,
  body               text,
  title_ar           text,
  body_ar            text,
  local_time         time,          -- daily: the recipient's wall-clock time
  at                 timestamptz,   -- once: the instant
  critical           boolean not null default false,
  channel            text not null default 'push',
  enabled            boolean not null default true,
  last_enqueued_for  date,          -- daily: the local date last enqueued
  enqueued_at        timestamptz,   -- once: when it was enqueued
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now(),
  check ((schedule = 'daily' and local_time is not null) or (schedule = 'once' and at is not null))
);
create index if not exists reminders_user on reminders (user_id);

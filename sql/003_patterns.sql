-- Wearable metrics and the pattern-alert episodes derived from them (seed 000).

create table if not exists wearable_daily_metrics (
  id              uuid primary key default gen_random_uuid(),
  user_id         uuid not null,
  metric_date     date not null,
  sleep_minutes   numeric,
  steps           numeric,
  hrv_ms          numeric,
  resting_hr      numeric,
  active_minutes  numeric,
  source          text,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  unique (user_id, metric_date)
);
-- "Users with new metrics since the last evaluation" reads this.
create index if not exists wearable_daily_metrics_updated on wearable_daily_metrics (updated_at);

create or replace function herald_touch_updated_at() returns trigger
language plpgsql as $$
begin
  new.updated_at := now();
  return new;
end
$$;

drop trigger if exists wearable_daily_metrics_touch on wearable_daily_metrics;
create trigger wearable_daily_metrics_touch before update on wearable_daily_metrics
  for each row execute function herald_touch_updated_at();

-- The thresholds configuration, versioned like the seed's thresholds.v1.json.
create table if not exists pattern_thresholds (
  version            text not null,
  metric_type        text not null,
  pattern_type       text not null check (pattern_type in ('drop_vs_baseline', 'rise_vs_baseline')),
  deviation_percent  numeric not null check (deviation_percent > 0),
  min_abs_change     numeric not null default 0 check (min_abs_change >= 0),
  enabled            boolean not null default true,
  primary key (version, metric_type, pattern_type)
);
insert into pattern_thresholds (version, metric_type, pattern_type, deviation_percent, min_abs_change) values
  ('v1', 'sleep_minutes', 'drop_vs_baseline', 20, 30),
  ('v1', 'steps',         'drop_vs_baseline', 20, 1000),
  ('v1', 'hrv_ms',        'drop_vs_baseline', 20, 5),
  ('v1', 'resting_hr',    'rise_vs_baseline', 20, 5)
on conflict do nothing;

create table if not exists pattern_alert_state (
  id                   uuid primary key default gen_random_uuid(),
  user_id              uuid not null,
  metric_type          text not null,
  pattern_type         text not null check (pattern_type in ('drop_vs_baseline', 'rise_vs_baseline')),
  episode_status       text not null default 'active' check (episode_status in ('active', 'resolved')),
  active_since         date not null,
  current_level        int not null default 3 check (current_level in (3, 7, 14, 21)),
  severity             text not null default 'watch' check (severity in ('watch', 'attention', 'critical')),
  snooze_until         date,
  snooze_days          int,
  dismissed_at         timestamptz,
  baseline_value       numeric,
  recent_value         numeric,
  deviation_percent    numeric,
  last_notified_level  int not null default 0,
  last_evaluated_date  date,
  thresholds_version   text,
  resolved_at          timestamptz,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  unique (user_id, metric_type, pattern_type, active_since)
);
create index if not exists pattern_alert_state_user on pattern_alert_state (user_id, episode_status, current_level);

-- Per user: the newest metrics update already evaluated, so a pass evaluates only users with new data.
create table if not exists pattern_evaluations (
  user_id                 uuid primary key,
  evaluated_through       timestamptz not null,
  evaluated_at            timestamptz not null default now(),
  thresholds_version      text
);

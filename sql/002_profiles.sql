-- People, families and their preferences (seed 000, with seed 001's quiet-hours action and seed 004's
-- forecast time and location).

create table if not exists user_profiles (
  user_id                         uuid primary key,
  display_name                    text,
  timezone                        text not null default 'UTC' check (herald_is_timezone(timezone)),
  locale                          text not null default 'en',
  email                           text,
  phone_e164                      text check (phone_e164 ~ '^\+[1-9][0-9]{6,14}$'),
  notify_in_app                   boolean not null default true,
  notify_push                     boolean not null default false,
  notify_email                    boolean not null default false,
  notify_sms                      boolean not null default false,
  notify_whatsapp                 boolean not null default false,
  champion_notify_email           boolean not null default true,
  champion_notify_sms             boolean not null default false,
  -- Why a channel was turned off by herald (e.g. Twilio 21610: the phone replied STOP).
  notify_sms_disabled_reason      text,
  notify_whatsapp_disabled_reason text,
  notify_email_disabled_reason    text,
  quiet_hours_start               time,
  quiet_hours_end                 time,
  quiet_hours_notification_level  text not null default 'none'
                                  check (quiet_hours_notification_level in ('none', 'critical_only', 'all')),
  quiet_hours_action              text not null default 'skip' check (quiet_hours_action in ('skip', 'defer')),
  quiet_hours_apply_critical      boolean, -- deprecated (seed 000); superseded by the notification level
  forecast_notification_time      time not null default '08:00',
  latitude                        double precision check (latitude between -90 and 90),
  longitude                       double precision check (longitude between -180 and 180),
  location_name                   text,
  created_at                      timestamptz not null default now(),
  updated_at                      timestamptz not null default now()
);

-- Who is told about whom: admins of a family receive alerts about its members.
create table if not exists family_members (
  family_id   uuid not null,
  user_id     uuid not null,
  role        text not null default 'member' check (role in ('admin', 'member')),
  created_at  timestamptz not null default now(),
  primary key (family_id, user_id)
);
create index if not exists family_members_user on family_members (user_id);

-- Push destinations (seed 000) with the provider that serves each and why it was deactivated.
create table if not exists device_tokens (
  id                  uuid primary key default gen_random_uuid(),
  user_id             uuid not null,
  device_token        text not null,
  platform            text check (platform in ('ios', 'android', 'web')),
  provider            text not null default 'apns' check (provider in ('apns', 'fcm', 'expo')),
  app_version         text,
  os_version          text,
  locale              text,
  is_active           boolean not null default true,
  last_used_at        timestamptz,
  deactivated_at      timestamptz,
  deactivated_reason  text,
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now(),
  unique (user_id, device_token)
);
create index if not exists device_tokens_user_active on device_tokens (user_id, is_active);

-- Notification types as data. A queue row's `kind` names a row of notification_types, which holds the
-- type's defaults: its priority, Android channel id, iOS category, whether it is critical, and its rate
-- limits. An app adds a type with one insert of its name, every other column taking its default:
--
--     insert into notification_types (type) values ('appointment');
--
-- through a migration of its own or as the service role. A queue row of a type that is not here is
-- refused when it is written (SQLSTATE 23503, the message names the type), not failed at send time.
--
-- The rate limits, per recipient (NULL: no such limit for this type):
--   daily_cap            at most this many notifications a local day, counting every capped type's
--                        (a notification on several channels counts once)
--   min_spacing_seconds  at least this long between two notifications of this type (at most a day:
--                        the limits read the last 48 hours of sends)
--   per_minute_cap       at most this many rows a minute, across every type and channel
--   rate_exempt          neither held back by nor counted towards the daily cap and the spacing
-- herald's reminders keep the cap of 10 a day and an hour between two of a type; prompts, which the user
-- asks for in a number of their own, are exempt; the backend's own types (assignment, calendar, signal,
-- message, system) are held only to 100 a minute per recipient.
create table if not exists notification_types (
  type                 text primary key check (type ~ '^[a-z][a-z0-9_]{0,62}$'),
  priority             text not null default 'normal' check (priority in ('high', 'normal', 'low')),
  android_channel_id   text check (android_channel_id ~ '^[A-Za-z0-9_.-]{1,64}$'),
  ios_category         text check (ios_category ~ '^[A-Za-z0-9_.-]{1,64}$'),
  critical             boolean not null default false,
  daily_cap            int check (daily_cap > 0),
  min_spacing_seconds  int check (min_spacing_seconds between 0 and 86400),
  per_minute_cap       int default 100 check (per_minute_cap > 0),
  rate_exempt          boolean not null default false,
  created_at           timestamptz not null default now()
);
select herald_restrict_table('notification_types');

insert into notification_types (type, priority, critical, daily_cap, min_spacing_seconds, rate_exempt) values
  ('pattern_alert',  'high',   false, 10,   3600, false),
  ('daily_forecast', 'normal', false, 10,   3600, false),
  ('prompt',         'normal', false, null, null, true),
  ('reminder',       'normal', false, 10,   3600, false),
  ('system',         'normal', false, null, null, false),
  ('assignment',     'high',   false, null, null, false),
  ('calendar',       'normal', false, null, null, false),
  ('signal',         'high',   false, null, null, false),
  ('message',        'normal', false, null, null, false)
on conflict (type) do nothing;

-- Rows already in the queue keep their kinds: any kind a row names becomes a type with the defaults,
-- so no row is refused or failed by this migration.
insert into notification_types (type)
select distinct q.kind from notification_queue q
 where q.kind ~ '^[a-z][a-z0-9_]{0,62}$'
on conflict (type) do nothing;

-- The check on every queue write: the type must exist, and a row written without a priority takes its
-- type's. A plain lookup (no row lock, unlike a foreign key's FOR KEY SHARE), so concurrent enqueues of
-- one type never contend on its row.
create or replace function herald_queue_type() returns trigger
language plpgsql
as $$
declare
  type_priority text;
begin
  select t.priority into type_priority from notification_types t where t.type = new.kind;
  if not found then
    raise exception 'unknown notification type "%"', left(new.kind, 64)
      using errcode = '23503',
            hint = 'add it first: insert into notification_types (type) values (''<type>'')';
  end if;
  if new.priority is null then
    new.priority := type_priority;
  end if;
  return new;
end
$$;

alter table notification_queue alter column priority drop default;
drop trigger if exists herald_queue_type on notification_queue;
create trigger herald_queue_type before insert or update of kind on notification_queue
  for each row execute function herald_queue_type();

revoke all on function herald_queue_type() from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_queue_type() from %I', app_role);
  end loop;
end $$;

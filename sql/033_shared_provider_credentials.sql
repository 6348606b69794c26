-- Providers' short-lived credentials, shared by every pass on every host and shard: the APNs provider
-- token (Apple answers TooManyProviderTokenUpdates to a team whose token changes more often than every
-- 20 minutes) and the FCM access token (Google's token endpoint need not be asked once a pass). One row
-- per key ('apns:<team>:<key id>', 'fcm:<client email>'); the pass that finds none usable mints one
-- under an advisory lock, so passes racing mint one. herald's own: no app role may read it.
create table if not exists herald_provider_credentials (
  key         text primary key,
  token       text not null,
  issued_at   timestamptz not null,
  expires_at  timestamptz not null,
  updated_at  timestamptz not null default now()
);
select herald_restrict_table('herald_provider_credentials');

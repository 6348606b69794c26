-- The patterns phase's watermark: every metric row updated before `scanned_through` had been taken
-- into account when a pass last finished all its candidates. A pass looks only at rows updated since
-- then (less a margin for writers whose transactions were still open), through the updated_at index,
-- instead of grouping the whole metrics table every five minutes.
create table if not exists pattern_scan_state (
  id               boolean primary key default true check (id),
  scanned_through  timestamptz not null default '-infinity',
  updated_at       timestamptz not null default now()
);
insert into pattern_scan_state default values on conflict do nothing;

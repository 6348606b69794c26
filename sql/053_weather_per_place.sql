-- The weather is fetched once per place: people whose coordinates fall in one cell of
-- HERALD_WEATHER_CELL_DEGREES (0.1°) share one weather request, and the cell's last usable answer
-- serves the passes of the next HERALD_WEATHER_REUSE_MINUTES (60). Herald's own: the app roles have no
-- access (row-level security on, no grants). The forecasts phase deletes answers older than two days.
create table if not exists public.weather_cells (
  cell        text primary key,          -- '<degrees>/<row>/<column>', rows from the South Pole, columns from -180°
  fetched_at  timestamptz not null,
  weather     jsonb not null             -- the answer as herald read it: utc_offset_seconds, hourly, current, daily
);
select public.herald_restrict_table('public.weather_cells');

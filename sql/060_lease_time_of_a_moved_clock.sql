-- The trigger that keeps the previous release's statements off a pending row under a live lease judges
-- that lease at the database's time. A claim made on a clock a test moved forward (`ClockShift`) says
-- its lease time in the transaction setting `herald.lease_shift` (seconds, set with `set_config(…,
-- true)`, so it ends with the transaction): a lease expired at that time is taken over, as at the
-- database's own time. No other statement sets it: the previous release's, and this release's outside
-- tests, are judged as before. Only the trigger's function changes (no lock on the queue is taken).
create or replace function public.herald_queue_lease_held() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare shift float8 := coalesce(nullif(current_setting('herald.lease_shift', true), '')::float8, 0);
begin
  if shift > 0 and old.locked_until < now() + make_interval(secs => shift) then
    return new;
  end if;
  return null;
end
$$;

-- A digest's window and items went with its list entry through a statement trigger on every delete
-- from inbox (sql/059), which kept a copy of each deleted row for it: a delete of 20,000 entries of
-- types that are not digested took 20 ms with it against 12 ms without. The trigger goes; herald's
-- prune (the one that deletes entries 30 days after their delivery) deletes, in the same transaction,
-- the windows closed more than those 30 days ago whose entry is gone, with their items. Windows whose
-- entry went another way (a service role's delete, or a previous release's prune while this one was
-- rolled out) go the same way. A delete from inbox now fires nothing.
drop trigger if exists herald_inbox_digest_gone on inbox;
drop function if exists public.herald_inbox_digest_gone();

-- The prune reads the closed windows by when they closed.
create index if not exists notification_digests_closed on notification_digests (closed_at)
  where closed_at is not null;

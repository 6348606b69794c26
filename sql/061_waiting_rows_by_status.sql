-- One index entry fewer per record. A record is a non-HOT update of notification_queue (its status
-- is in the partial indexes' predicates), so it adds an entry to every index whose predicate the new
-- row satisfies: the primary key, the recent sends, the terminal rows and seed 000's
-- `(status, created_at)`, which held every row whatever its status.
--
-- Seed 000's index now holds the rows still waiting or leased (`pending`, `processing`, `failed`):
-- the reads it serves — rows of a waiting status by age, and the leased rows herald's lease recovery,
-- `herald status` and `herald unlock` find through `status = 'processing'` — name one of those
-- statuses, which implies the predicate. Terminal rows are found through their own indexes: recent
-- sends by recipient (`notification_queue_recipient_sent`), pruning by age
-- (`notification_queue_terminal`). A sent or skipped row no longer writes the entry: about 69 B of
-- WAL and an index insertion per notification.
--
-- The new index is built before the old one is dropped, so the reads keep an index throughout; a
-- pass of the previous release reads and writes the queue the same way with either.
create index if not exists notification_queue_status_created_waiting
  on public.notification_queue (status, created_at)
  where status in ('pending', 'processing', 'failed');
drop index if exists public.notification_queue_status_created;

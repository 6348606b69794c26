-- Fewer index entries per claim. Every claim is a non-HOT update of notification_queue (its
-- status is in the partial indexes' predicates), so it adds an entry to each index whose predicate the
-- new row satisfies. `notification_queue_leased` (locked_until, rows processing) and
-- `notification_queue_recipient_processing` (recipient, rows processing) index the same few rows: the
-- ones leased right now, at most a batch per running pass. Lease recovery, `herald status` and
-- `herald unlock` read them through the latter just as well, so the former goes.
drop index if exists notification_queue_leased;

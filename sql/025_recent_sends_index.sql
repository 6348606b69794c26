-- The rate limits' read of each batch's recent sends (BatchContext), robust to outdated statistics.
--
-- It read `status = 'sent' and recipient_user_id = any(…) and sent_at in a 48 h window` through
-- `notification_queue_recipient_sent` (… where status = 'sent'). But `status = 'sent'` is also a bound
-- on seed 000's `(status, created_at)` index (and on `notification_queue_terminal`'s predicate), and
-- statistics taken before a burst say almost no row is sent: the planner then walked every sent row
-- of the queue at each batch (20,000 rows: 5–137 ms a batch instead of 2 ms, growing with the queue).
-- The index now says what the read needs — a sent time — and the read asks for the status in a form no
-- index takes (`(status = 'sent') is true`), so this index is the only one that fits, whatever the
-- statistics say. Same entries as before: a row gets its sent_at when it is sent.
drop index if exists notification_queue_recipient_sent;
create index if not exists notification_queue_recipient_sent
  on notification_queue (recipient_user_id, sent_at) where sent_at is not null;

-- A recipient's rows are claimed by one pass at a time, so the per-recipient rate limits hold when
-- passes run at once: a claim leaves out recipients that have rows another pass holds under a live
-- lease. This index answers "does this recipient have rows in flight?" without reading the queue.
create index if not exists notification_queue_recipient_processing
  on notification_queue (recipient_user_id) where status = 'processing';

-- A row whose request never left (a stop signal, a failed record flush, a throttled provider) goes
-- back to the queue with its attempt given back: the trail says `released`.
alter table notification_events drop constraint if exists notification_events_event_check;
alter table notification_events add constraint notification_events_event_check check (event in
  ('enqueued', 'claimed', 'sent', 'skipped', 'deferred', 'failed', 'superseded', 'recovered', 'released'));

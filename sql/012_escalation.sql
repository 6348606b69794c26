-- Escalation: a critical notification that cannot reach its recipient on its channel is
-- enqueued again on the next channel of the escalation chain, linked to the original here. No foreign
-- key: the original may be pruned first; `herald explain` follows the link while both exist, and the
-- trail (`escalated` on the original, `enqueued` with reason `escalated` on the new row) outlives them.
alter table notification_queue add column if not exists escalated_from uuid;
create index if not exists notification_queue_escalated_from
  on notification_queue (escalated_from) where escalated_from is not null;

-- The trail's event names are herald's own (`QueueEvent` in HeraldCore); a check constraint repeated
-- in every migration that adds one is a trap (a later migration's list silently drops an earlier
-- addition), so the list lives in the code.
alter table notification_events drop constraint if exists notification_events_event_check;

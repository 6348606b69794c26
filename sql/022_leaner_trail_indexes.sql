-- Fewer index entries per notification.
--
-- notification_history is written in delivery order and only ever pruned by `delivered_time`: a BRIN
-- index answers the pruning's range just as well, and costs next to nothing per insert (the newest
-- pages are summarised by autovacuum), where the btree took an entry per notification sent. The app's
-- reads go through `notification_history_user` (user_id, delivered_time desc), which stays.
drop index if exists notification_history_delivered;
create index if not exists notification_history_delivered_brin on notification_history
  using brin (delivered_time) with (autosummarize = on);

-- notification_events: the primary key (id, at) served nothing but uniqueness, and `herald explain` reads
-- a row's trail through (queue_id, id). One index, the primary key (queue_id, id, at), now does both
-- (`at` is there because the table is partitioned by it): one entry per trail event instead of two.
do $$
begin
  if not exists (select 1 from pg_constraint c
                  where c.conrelid = 'notification_events'::regclass and c.contype = 'p'
                    and pg_get_constraintdef(c.oid) = 'PRIMARY KEY (queue_id, id, at)') then
    alter table notification_events drop constraint if exists notification_events_pkey;
    alter table notification_events add constraint notification_events_pkey primary key (queue_id, id, at);
  end if;
end $$;
drop index if exists notification_events_queue;

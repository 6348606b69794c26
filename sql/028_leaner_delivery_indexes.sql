-- One index entry fewer per delivery row, as migration 022 did for the trail events.
--
-- notification_deliveries had two btrees: the primary key (id, at), which served the provider-truth
-- updates by id, and (queue_id, destination), which served every read by queue row (`herald explain`,
-- a retry's delivered destinations, a provider callback without a message id). One primary key,
-- (queue_id, id, at), now does both: the truth updates name the queue row beside the id, and a queue
-- row's few deliveries are filtered by destination where they lie. Per notification: one index entry
-- instead of two, ~100 B of WAL less (the old second key held the destination's text).
do $$
begin
  if not exists (select 1 from pg_constraint c
                  where c.conrelid = 'notification_deliveries'::regclass and c.contype = 'p'
                    and pg_get_constraintdef(c.oid) = 'PRIMARY KEY (queue_id, id, at)') then
    alter table notification_deliveries drop constraint if exists notification_deliveries_pkey;
    alter table notification_deliveries add constraint notification_deliveries_pkey primary key (queue_id, id, at);
  end if;
end $$;
drop index if exists notification_deliveries_queue;

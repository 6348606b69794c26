-- A sent notification's decision lives in its delivery row. A row that reached its provider already
-- leaves a delivery row per destination and attempt; the first of them in its record now carries what
-- the trail's event carried (the event, `sent` or `failed`, its reason and its details: the attempt
-- and the inputs that decided it), and no event is written for it. The trail keeps an event only where
-- no delivery row tells the story (skipped, deferred, expired, failed before any send, released,
-- recovered) and for operator actions.
--
-- The columns are new and nullable: adding them rewrites nothing, and the previous release's record,
-- which names the columns it writes, keeps working while this runs (its sent rows keep their event).
-- The details are `json`, the text as the pass wrote it: written once and read only by `herald
-- explain`, they are stored ~15 % smaller than as jsonb and need no conversion on the way in (a
-- repeated key reads as its last value, as in jsonb).
alter table notification_deliveries add column if not exists decision text;
alter table notification_deliveries add column if not exists decision_reason text;
alter table notification_deliveries add column if not exists decision_details json;

-- The trail as `herald explain` tells it: the events, and the decisions the delivery rows carry, in
-- the order they happened (a decision before an event of the same transaction: a record's escalation
-- follows its failure). With the caller's privileges (security_invoker): the app roles see nothing.
create or replace view notification_trail with (security_invoker = true) as
  select d.queue_id, d.at, d.pass_id, d.decision as event, d.decision_reason as reason,
         d.decision_details::jsonb as details, 0 as source, d.id as seq
    from notification_deliveries d
   where d.decision is not null
  union all
  select e.queue_id, e.at, e.pass_id, e.event, e.reason, e.details, 1 as source, e.id as seq
    from notification_events e;

revoke all on notification_trail from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on notification_trail from %I', app_role);
  end loop;
end $$;

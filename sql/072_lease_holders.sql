-- A claim leaves out the recipients with rows another pass holds under a live lease, so that the
-- per-recipient limits hold across concurrent passes: a read of the candidates' waiting rows by
-- recipient, a probe of notification_queue_waiting_recipient and its row per candidate (about 1.7 ms of
-- a lease of 1,000 rows). A pass alone on the queue finds nothing there.
--
-- Each claim now notes, in the transaction of its leases, until when its pass holds a lease
-- (`herald_lease_holders`: the latest lease end a claim of that pass set); a pass whose leases have all
-- ended (its drain recorded every row it claimed) takes its note away. A claim reads its candidates'
-- recipients only while another pass's note lasts past the claim's lease time. Whatever lease of
-- another pass a claim's snapshot sees, it sees that pass's note with it (one transaction wrote both),
-- so the read is skipped only where it would have found nothing.
--
-- Passes of earlier releases lease without a note. Where this migration runs on a database in use (a
-- pass started in the last day, or a row under a lease), a note for them keeps every claim reading the
-- recipients for a day: longer than any of their passes but a follower left running through the
-- upgrade, which is to be restarted with the new release.
create table if not exists herald_lease_holders (
  pass_id text primary key,
  until   timestamptz not null
);
select public.herald_restrict_table('herald_lease_holders');

insert into herald_lease_holders (pass_id, until)
select '(passes of earlier releases)', now() + interval '1 day'
 where exists (select 1 from herald_passes where started_at > now() - interval '1 day')
    or exists (select 1 from notification_queue where locked_until is not null)
on conflict (pass_id) do update set until = greatest(herald_lease_holders.until, excluded.until);

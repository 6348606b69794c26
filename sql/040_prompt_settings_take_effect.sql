-- Prompt settings that take effect the day they change (the meditation prompts: the app syncs its
-- settings every 30 seconds and reschedules on every change). A change to a person's `prompt_settings`
-- (enabled, prompts_per_day, waking hours) or their deletion withdraws their prompts not yet sent at
-- once; the next `prompts` phase then places the rest of the day's prompts under the new settings
-- (docs/design.md §5, Prompts).
--
-- prompt_schedules records, beside the day's count, the settings the day was planned with and how many
-- times it was planned (`revision`: 0 for the day's first plan). A pass replans a day whose recorded
-- settings differ from the person's current ones. Each plan's rows have dedupe keys of their own:
--     prompt:<user>:<date>:<i>          the first plan (i = 1…N)
--     prompt:<user>:<date>:r<rev>:<i>   plan number rev (1, 2, …)
-- so a prompt withdrawn by one plan never blocks the next plan's prompt at the same instant.
alter table prompt_schedules add column if not exists waking_hour_start int;
alter table prompt_schedules add column if not exists waking_hour_end   int;
alter table prompt_schedules add column if not exists enabled           boolean;
alter table prompt_schedules add column if not exists revision          int not null default 0;

-- Days planned before this migration were planned with the settings as they are now (a day planned
-- under settings changed since is replanned, which withdraws nothing already sent). Only the days a
-- pass may still act on.
update prompt_schedules ps
   set waking_hour_start = s.waking_hour_start, waking_hour_end = s.waking_hour_end, enabled = true
  from prompt_settings s
 where s.user_id = ps.user_id and ps.waking_hour_start is null and ps.local_date >= current_date - 1;

-- The dedupe keys every plan of one person's day may have used: revisions 0 to `revision`, prompts 1
-- to 100 (the most a day has). The queue's dedupe index finds them.
create or replace function herald_prompt_keys(person uuid, day date, revision int) returns setof text
language sql immutable
as $$
  select 'prompt:' || person::text || ':' || day::text || ':'
         || case when r = 0 then '' else 'r' || r || ':' end || i
    from generate_series(0, greatest(revision, 0)) as r, generate_series(1, 100) as i
$$;

-- Withdraws a person's prompts not yet sent, of their two latest planned days (a waking window that
-- crosses midnight leaves the previous day's last prompts waiting): pending rows and failed rows still
-- to be retried become skipped `cancelled`, with a `cancelled` event. A row a pass holds is being sent
-- and is left alone (the operator verbs' fence). Returns how many it withdrew.
create or replace function herald_withdraw_prompt_rows(person uuid, why text) returns int
language plpgsql security definer set search_path = public, pg_temp
as $$
declare n int;
begin
  with days as (
    select ps.local_date, ps.revision from prompt_schedules ps
     where ps.user_id = person order by ps.local_date desc limit 2
  ), keys as (
    select herald_prompt_keys(person, d.local_date, d.revision) as key from days d
  ), target as (
    select q.id from notification_queue q
     where q.dedupe_key in (select key from keys) and q.recipient_user_id = person
       and (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
     for update
  ), u as (
    update notification_queue q
       set status = 'skipped', skip_reason = 'cancelled', permanent = false, updated_at = now()
      from target where q.id = target.id
    returning q.id
  ), e as (
    insert into notification_events (queue_id, event, reason, details)
    select id, 'cancelled', 'cancelled', jsonb_build_object('by', 'prompt_settings', 'reason', why) from u
  )
  select count(*) into n from u;
  return n;
end
$$;

-- Whoever writes prompt_settings (the app's backend, the dashboard, psql), a change withdraws at once.
-- Writing the same values again (the app's sync) changes nothing.
create or replace function herald_prompt_settings_changed() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
  if tg_op = 'DELETE' then
    perform herald_withdraw_prompt_rows(old.user_id, 'prompt settings deleted');
    return old;
  end if;
  if new.user_id is distinct from old.user_id then
    perform herald_withdraw_prompt_rows(old.user_id, 'prompt settings moved to another user');
  end if;
  if (new.enabled, new.prompts_per_day, new.waking_hour_start, new.waking_hour_end, new.user_id)
     is distinct from (old.enabled, old.prompts_per_day, old.waking_hour_start, old.waking_hour_end, old.user_id) then
    perform herald_withdraw_prompt_rows(new.user_id, case when new.enabled then 'prompt settings changed'
                                                          else 'prompts turned off' end);
  end if;
  return new;
end
$$;

drop trigger if exists prompt_settings_withdraw on prompt_settings;
create trigger prompt_settings_withdraw after update or delete on prompt_settings
  for each row execute function herald_prompt_settings_changed();

-- Helpers and trigger functions: the owner's only (sql/008_security.sql).
do $$
declare
  fn regprocedure;
  app_role name;
begin
  for fn in
    select p.oid::regprocedure from pg_proc p
     where p.pronamespace = 'public'::regnamespace
       and p.proname in ('herald_prompt_keys', 'herald_withdraw_prompt_rows', 'herald_prompt_settings_changed')
  loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end
$$;

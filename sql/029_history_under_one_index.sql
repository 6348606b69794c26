-- notification_history under one btree (issue 11): its primary key becomes (user_id, id), and the
-- index (user_id, delivered_time desc) goes. Per notification sent: one index entry instead of two.
--
-- Every read of the history names its user: the app's get_notification_history (the caller's rows of
-- the last 1–30 days, newest first: at most a month of one person's notifications, sorted where they
-- are read) and record_notification_action (one of the caller's entries by id). The pruning finds old
-- entries through the BRIN index on delivered_time (migration 022) and deletes them by key. An entry's
-- id is its queue row's id, so it stays unique; a repeat is still a conflict, now on (user_id, id).
do $$
begin
  if not exists (select 1 from pg_constraint c
                  where c.conrelid = 'notification_history'::regclass and c.contype = 'p'
                    and pg_get_constraintdef(c.oid) = 'PRIMARY KEY (user_id, id)') then
    alter table notification_history drop constraint if exists notification_history_pkey;
    alter table notification_history add constraint notification_history_pkey primary key (user_id, id);
  end if;
end $$;
drop index if exists notification_history_user;

-- record_notification_action (sql/020) names the old key as its insert's conflict target: the same
-- function, with the new key as the target. Its grants stay (create or replace keeps them).
do $$
declare
  def text := pg_get_functiondef('record_notification_action(uuid, text)'::regprocedure);
  old_target constant text := 'on conflict (id) do update set user_id = h.user_id';
begin
  if position(old_target in def) > 0 then
    execute replace(def, old_target, 'on conflict (user_id, id) do update set user_id = h.user_id');
  elsif position('on conflict (user_id, id)' in def) = 0 then
    raise exception 'record_notification_action has no history conflict target this migration knows';
  end if;
end $$;

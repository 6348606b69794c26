-- A follow-up when nobody reads. A type may carry a follow-up policy (`notification_types.follow_up`):
-- ordered steps, each with a delay, channels, recipients and what satisfies it, run `loops` times.
--
--   update notification_types set follow_up = '{
--     "loops": 1,
--     "steps": [
--       {"after_seconds": 600,  "channels": ["sms"],         "to": "same",       "until": "read"},
--       {"after_seconds": 1200, "channels": ["push", "sms"], "to": "next_admin", "until": "read"}
--     ]}' where type = 'pattern_alert';
--
--   after_seconds  how long after the previous step (the first: after the notification was sent),
--                  1 to 604800 (a week)
--   channels       1 to 6 of push, sms, whatsapp, email, webhook, in_app, each once
--   to             `same`: the notification's recipient; `next_admin`: the next of the family's other
--                  admins in order (the families of the member it is about; by when they joined, then
--                  id), one further for each next_admin step of the chain, around again when all had one
--   until          what satisfies the step: `read` (the entry read, or any action, anywhere in the
--                  chain), `acted` (an action recorded through record_notification_action), or
--                  `delivered` (read, acted, or a provider confirmed a delivery of the chain)
--   as             optional: the type its copies are sent as (default: this type)
-- At most 6 steps, 1 to 5 loops, 12 steps in all. An unknown channel, recipient, condition or type,
-- a delay of zero or less, too many steps, or a cycle of types (through `as`) is refused when the type
-- is written, naming the step. A type without a policy (null, the default) is as before.
--
-- The chain: when a notification of a type with a policy is first sent to its recipient (any copy of
-- it, on any channel), one statement enqueues every step of every loop as queue rows, due at their
-- time, each under the dedupe key `follow_up:<recipient>:<notification>:<step>:<loop>:<channel>`, so
-- the chain is enqueued once whatever sends its copies. A step's rows share the notification's group
-- (the next admin's copy is an entry of their own list) and carry `follow_up_of` (the row whose send
-- started the chain) and `payload.follow_up` (the step, loop and condition).
--   - The claim settles a step (herald_follow_up_settle, in the claim's transaction): a step whose
--     condition holds is skipped `follow_up_satisfied`, with what satisfied it; only the others are sent.
--   - Reading or acting on the notification anywhere in the chain cancels its pending steps at once:
--     one statement of the read's transaction (herald_follow_up_read_cancel on inbox).
--   - The decision holds a non-critical step through quiet hours until the window ends (deferred, not
--     skipped); a critical step is decided as any critical notification is.

alter table notification_types add column if not exists follow_up jsonb;
alter table notification_queue add column if not exists follows_up boolean;
alter table notification_queue add column if not exists follow_up_of uuid;
create index if not exists notification_queue_follow_up on notification_queue (follow_up_of)
  where follow_up_of is not null;

-- ---------------------------------------------------------------------------------------------------
-- The policy's checks, when a type is written.
create or replace function public.herald_follow_up_refusal(type_name text, policy jsonb)
returns text
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  steps jsonb := policy -> 'steps';
  loops jsonb := coalesce(policy -> 'loops', '1');
  step jsonb;
  n int := 0;
  extra text;
  channel jsonb;
  delay numeric;
begin
  if jsonb_typeof(policy) <> 'object' then
    return 'must be an object with "steps" (and "loops")';
  end if;
  select string_agg(k, ', ') into extra from jsonb_object_keys(policy) k where k not in ('steps', 'loops');
  if extra is not null then return format('unknown key(s) %s: only "steps" and "loops"', extra); end if;
  if jsonb_typeof(loops) <> 'number' or loops::numeric not in (1, 2, 3, 4, 5) then
    return format('loops is %s: a whole number from 1 to 5', left(loops::text, 40));
  end if;
  if jsonb_typeof(steps) is distinct from 'array' or jsonb_array_length(steps) = 0 then
    return '"steps" must be a non-empty array';
  end if;
  if jsonb_array_length(steps) > 6 then
    return format('%s steps: at most 6', jsonb_array_length(steps));
  end if;
  if jsonb_array_length(steps) * loops::int > 12 then
    return format('%s steps × %s loops: at most 12 steps in all', jsonb_array_length(steps), loops);
  end if;
  for step in select s from jsonb_array_elements(steps) s loop
    n := n + 1;
    if jsonb_typeof(step) <> 'object' then return format('step %s must be an object', n); end if;
    select string_agg(k, ', ') into extra from jsonb_object_keys(step) k
     where k not in ('after_seconds', 'channels', 'to', 'until', 'as');
    if extra is not null then
      return format('step %s: unknown key(s) %s: only after_seconds, channels, to, until, as', n, extra);
    end if;
    if jsonb_typeof(step -> 'after_seconds') is distinct from 'number' then
      return format('step %s: after_seconds is required, a whole number of seconds', n);
    end if;
    delay := (step ->> 'after_seconds')::numeric;
    if delay <= 0 or delay > 604800 or delay <> trunc(delay) then
      return format('step %s: after_seconds is %s: a whole number from 1 to 604800 (a week)', n, delay);
    end if;
    if jsonb_typeof(step -> 'channels') is distinct from 'array' or jsonb_array_length(step -> 'channels') = 0 then
      return format('step %s: channels must be a non-empty array', n);
    end if;
    for channel in select c from jsonb_array_elements(step -> 'channels') c loop
      if jsonb_typeof(channel) <> 'string'
         or channel #>> '{}' not in ('push', 'sms', 'whatsapp', 'email', 'webhook', 'in_app') then
        return format('step %s: unknown channel %s (one of push, sms, whatsapp, email, webhook, in_app)',
                      n, left(channel::text, 40));
      end if;
    end loop;
    if (select count(distinct c) from jsonb_array_elements(step -> 'channels') c) < jsonb_array_length(step -> 'channels') then
      return format('step %s: a channel is named twice', n);
    end if;
    if jsonb_typeof(step -> 'to') is distinct from 'string' or step ->> 'to' not in ('same', 'next_admin') then
      return format('step %s: unknown recipient %s (same or next_admin)', n, left(coalesce((step -> 'to')::text, 'none'), 40));
    end if;
    if jsonb_typeof(step -> 'until') is distinct from 'string' or step ->> 'until' not in ('read', 'acted', 'delivered') then
      return format('step %s: unknown condition %s (read, acted or delivered)', n, left(coalesce((step -> 'until')::text, 'none'), 40));
    end if;
    if step ? 'as' then
      if jsonb_typeof(step -> 'as') <> 'string'
         or (step ->> 'as' <> type_name and not exists (select 1 from public.notification_types t where t.type = step ->> 'as')) then
        return format('step %s: sends as unknown type %s', n, left((step -> 'as')::text, 70));
      end if;
    end if;
  end loop;
  return null;
end
$$;

-- The types a policy's steps send as, other than its own.
create or replace function public.herald_follow_up_targets(type_name text, policy jsonb)
returns setof text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select distinct s ->> 'as' from jsonb_array_elements(case when jsonb_typeof(policy -> 'steps') = 'array'
                                                            then policy -> 'steps' else '[]' end) s
   where jsonb_typeof(s -> 'as') = 'string' and s ->> 'as' <> type_name
$$;

create or replace function public.herald_follow_up_policy_check() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  why text;
  cycle text[];
begin
  if new.follow_up is null or jsonb_typeof(new.follow_up) = 'null' then
    new.follow_up := null;
    return new;
  end if;
  why := public.herald_follow_up_refusal(new.type, new.follow_up);
  if why is null then
    -- A cycle: the types the steps send as, followed through their own policies, lead back here.
    with recursive reach(type, path) as (
      select t, array[new.type, t] from public.herald_follow_up_targets(new.type, new.follow_up) t
      union all
      select x, r.path || x from reach r
        join public.notification_types nt on nt.type = r.type and nt.type <> new.type
        cross join lateral public.herald_follow_up_targets(nt.type, nt.follow_up) x
       where not x = any(r.path[2:]) and cardinality(r.path) < 32
    )
    select path into cycle from reach where type = new.type limit 1;
    if cycle is not null then
      why := format('a cycle of types: %s', array_to_string(cycle, ' → '));
    end if;
  end if;
  if why is not null then
    raise exception 'follow_up of type "%" refused: %', left(new.type, 64), why
      using errcode = '23514',
            hint = 'steps: [{"after_seconds": 600, "channels": ["sms"], "to": "same", "until": "read"}], loops 1 to 5';
  end if;
  return new;
end
$$;
drop trigger if exists herald_follow_up_policy_check on notification_types;
create trigger herald_follow_up_policy_check before insert or update of follow_up on notification_types
  for each row execute function public.herald_follow_up_policy_check();

-- ---------------------------------------------------------------------------------------------------
-- The check on every queue write (sql/035), which now also marks a row whose type has a policy
-- (`follows_up`): the same lookup of the type's row, so a type without one costs nothing more.
create or replace function public.herald_queue_type() returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  type_priority text;
  type_follow_up boolean;
begin
  select t.priority, t.follow_up is not null into type_priority, type_follow_up
    from public.notification_types t where t.type = new.kind;
  if not found then
    raise exception 'unknown notification type "%"', left(new.kind, 64)
      using errcode = '23503',
            hint = 'add it first: insert into notification_types (type) values (''<type>'')';
  end if;
  if new.priority is null then
    new.priority := type_priority;
  end if;
  if type_follow_up and new.follow_up_of is null then
    new.follows_up := true;
  end if;
  return new;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- The chain, enqueued when a notification with a policy is first sent to its recipient.
create or replace function public.herald_follow_up_start() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  policy jsonb;
  key text := coalesce(new.notification_group, new.id::text);
  admins uuid[];
begin
  select t.follow_up into policy from public.notification_types t where t.type = new.kind;
  if policy is null then return null; end if;
  select array_agg(a.user_id order by a.joined, a.user_id) into admins
    from (select fm.user_id, min(fm.created_at) as joined
            from public.family_members fm
           where fm.role = 'admin' and fm.user_id <> new.recipient_user_id
             and fm.family_id in (select m.family_id from public.family_members m
                                   where m.user_id = coalesce(new.member_user_id, new.recipient_user_id))
           group by fm.user_id) a;
  insert into public.notification_queue (recipient_user_id, member_user_id, alert_state_id, channel, kind,
      severity, priority, payload, scheduled_at, run_after, dedupe_key, notification_group, related_entity_type,
      related_entity_id, follow_up_of)
  select p.recipient, new.member_user_id, new.alert_state_id, c.channel,
         coalesce((select t.type from public.notification_types t where t.type = p.step ->> 'as'), new.kind),
         new.severity, new.priority,
         new.payload || jsonb_build_object('follow_up', jsonb_build_object(
           'of', new.id, 'recipient', new.recipient_user_id, 'notification', key, 'step', p.step_no,
           'loop', p.loop_no, 'to', p.step ->> 'to', 'until', p.step ->> 'until')),
         p.due, p.due,
         format('follow_up:%s:%s:%s:%s:%s', new.recipient_user_id, key, p.step_no, p.loop_no, c.channel),
         key, new.related_entity_type, new.related_entity_id, new.id
    from (select s.step, s.step_no, l.loop_no,
                 coalesce(new.sent_at, now()) + make_interval(secs => sum((s.step ->> 'after_seconds')::int)
                   over (order by l.loop_no, s.step_no)) as due,
                 case when s.step ->> 'to' = 'same' then new.recipient_user_id
                      else admins[1 + (count(*) filter (where s.step ->> 'to' = 'next_admin')
                                         over (order by l.loop_no, s.step_no) - 1) % greatest(cardinality(admins), 1)]
                 end as recipient
            from generate_series(1, coalesce((policy ->> 'loops')::int, 1)) l(loop_no)
           cross join lateral jsonb_array_elements(policy -> 'steps') with ordinality s(step, step_no)) p
   cross join lateral jsonb_array_elements_text(p.step -> 'channels') c(channel)
   where p.recipient is not null
     and length(format('follow_up:%s:%s:%s:%s:%s', new.recipient_user_id, key, p.step_no, p.loop_no, c.channel)) <= 512
  on conflict do nothing;
  return null;
exception when others then
  -- A chain that cannot be enqueued never fails the send's record: the record stands, and the log
  -- names the notification.
  raise warning 'follow-up chain of notification % not enqueued: %', new.id, sqlerrm;
  return null;
end
$$;
drop trigger if exists herald_follow_up_start on notification_queue;
create trigger herald_follow_up_start after update of status on notification_queue
  for each row when (new.follows_up and new.status = 'sent' and old.status is distinct from 'sent')
  execute function public.herald_follow_up_start();

-- ---------------------------------------------------------------------------------------------------
-- What satisfies a step: `until` of the chain of `step_payload` (a step row's payload.follow_up), read
-- from the rows the app writes. Null while nothing does; else what did, for the trail.
create or replace function public.herald_follow_up_satisfied(step_payload jsonb)
returns jsonb
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  with chain as (
    select (step_payload ->> 'recipient')::uuid as user_id
    union
    select q.recipient_user_id from public.notification_queue q where q.follow_up_of = (step_payload ->> 'of')::uuid
  ), entry as (
    select i.user_id, i.is_read, i.read_at, i.action, i.actioned_at
      from public.inbox i join chain c on i.user_id = c.user_id
     where i.notification_key = step_payload ->> 'notification'
  )
  select coalesce(
    (select jsonb_build_object('satisfied_by', 'acted', 'action', e.action, 'by', e.user_id, 'at', e.actioned_at)
       from entry e where e.action is not null order by e.actioned_at limit 1),
    (select jsonb_build_object('satisfied_by', 'read', 'by', e.user_id, 'at', e.read_at)
       from entry e where e.is_read and step_payload ->> 'until' in ('read', 'delivered')
      order by e.read_at limit 1),
    (select jsonb_build_object('satisfied_by', 'delivered', 'queue_id', d.queue_id, 'channel', d.channel, 'at', d.final_at)
       from public.notification_queue q join public.notification_deliveries d on d.queue_id = q.id
      where step_payload ->> 'until' = 'delivered' and d.final_status = 'delivered'
        and q.id in (select c.id from public.notification_queue c where c.follow_up_of = (step_payload ->> 'of')::uuid
                     union all
                     select c.id from public.notification_queue c
                      where c.recipient_user_id = (step_payload ->> 'recipient')::uuid
                        and c.notification_group = step_payload ->> 'notification'
                     union all
                     select c.id from public.notification_queue c
                      where c.id = (step_payload ->> 'of')::uuid)
      order by d.final_at limit 1))
$$;

-- The claim's check, in the claim's transaction: of the claimed candidates `ids` (locked by the
-- claim), the steps whose condition holds are skipped `follow_up_satisfied`, with what satisfied it.
-- Returns their ids, which the claim then leaves out.
create or replace function public.herald_follow_up_settle(ids uuid[], pass text)
returns uuid[]
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare settled uuid[];
begin
  with satisfied as (
    select q.id, public.herald_follow_up_satisfied(q.payload -> 'follow_up') as why
      from public.notification_queue q
     where q.id = any(ids) and q.follow_up_of is not null and q.status in ('pending', 'failed')
  ), u as (
    update public.notification_queue q
       set status = 'skipped', skip_reason = 'follow_up_satisfied', locked_until = null, locked_by = null,
           updated_at = now()
      from satisfied s where q.id = s.id and s.why is not null
    returning q.id, s.why
  ), e as (
    insert into public.notification_events (queue_id, pass_id, event, reason, details)
    select u.id, pass, 'skipped', 'follow_up_satisfied', u.why from u
  )
  select coalesce(array_agg(u.id), '{}') into settled from u;
  return settled;
end
$$;

-- ---------------------------------------------------------------------------------------------------
-- Reading or acting on the notification anywhere in the chain cancels its pending steps at once, in
-- the read's own transaction: one statement. A read satisfies `read` and `delivered` steps; an action
-- satisfies every step. A step a pass is sending right now (under its lease) goes on.
-- Its statements keep one plan (`force_generic_plan`): planned afresh at each read, the cancelling
-- statement cost more than the read itself.
create or replace function public.herald_follow_up_read_cancel() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
  acted boolean := new.action is not null and new.action is distinct from old.action;
  why jsonb := case when acted
                    then jsonb_build_object('satisfied_by', 'acted', 'action', new.action, 'by', new.user_id, 'at', new.actioned_at)
                    else jsonb_build_object('satisfied_by', 'read', 'by', new.user_id, 'at', new.read_at) end;
begin
  -- Nothing to cancel while no type has a policy, nor for an entry whose notification has no chain.
  if not exists (select 1 from public.notification_types t where t.follow_up is not null) then
    return null;
  end if;
  if not exists (select 1 from public.notification_queue q
                  where q.recipient_user_id = new.user_id and q.notification_group = new.notification_key
                    and (q.follows_up or q.follow_up_of is not null))
     and not exists (select 1 from public.notification_queue q where q.id = new.queue_id and q.follows_up) then
    return null;
  end if;
  with sources as (
    -- The chains this entry is part of: those its own notification started, and those that told it.
    select q.id from public.notification_queue q
     where q.recipient_user_id = new.user_id and q.notification_group = new.notification_key and q.follows_up
    union
    select q.id from public.notification_queue q where q.id = new.queue_id and q.follows_up
    union
    select q.follow_up_of from public.notification_queue q
     where q.recipient_user_id = new.user_id and q.notification_group = new.notification_key
       and q.follow_up_of is not null
  ), target as (
    select q.id from public.notification_queue q where q.follow_up_of in (select id from sources)
  ), u as (
    update public.notification_queue q
       set status = 'skipped', skip_reason = 'follow_up_satisfied', locked_until = null, locked_by = null,
           updated_at = now()
     where q.id in (select id from target)
       and q.status in ('pending', 'failed') and not q.permanent
       and not coalesce(q.locked_until >= now(), false)
       and (acted or q.payload -> 'follow_up' ->> 'until' in ('read', 'delivered'))
    returning q.id
  )
  insert into public.notification_events (queue_id, event, reason, details)
  select u.id, 'skipped', 'follow_up_satisfied', why from u;
  return null;
end
$$;
drop trigger if exists herald_follow_up_read_cancel on inbox;
create trigger herald_follow_up_read_cancel after update of is_read, action on inbox
  for each row when ((new.is_read and not old.is_read) or (new.action is not null and new.action is distinct from old.action))
  execute function public.herald_follow_up_read_cancel();

-- The trigger functions and the claim's check are the owner's only (sql/008_security.sql).
do $$
declare
  fn text;
  app_role name;
begin
  foreach fn in array array['public.herald_follow_up_policy_check()', 'public.herald_follow_up_start()',
                            'public.herald_follow_up_read_cancel()', 'public.herald_follow_up_settle(uuid[], text)',
                            'public.herald_follow_up_satisfied(jsonb)', 'public.herald_follow_up_refusal(text, jsonb)',
                            'public.herald_follow_up_targets(text, jsonb)'] loop
    execute format('revoke all on function %s from public', fn);
    for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
      execute format('revoke all on function %s from %I', fn, app_role);
    end loop;
  end loop;
end $$;

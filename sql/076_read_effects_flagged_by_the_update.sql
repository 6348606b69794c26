-- The app's read (`mark_notifications_read`) told the entries that do more on a read from those that do
-- not with a second aggregate over its update's answer, the ids of those that do: 0.36–0.47 µs of a
-- one-entry read of ~86 µs, the only thing a read of a plain type paid for follow-ups, quiet once read
-- and digests (a loop of 10,000 reads each, taking turns with the read as it was before them). Each
-- updated entry that does more now raises a flag of the transaction as its row is returned
-- (`herald.read_effects`, `set_config(…, true)`), and the read calls what those entries do only when
-- the flag is up, lowering it again: a plain read tests one value of its update's answer and the
-- flag once. The same loop: −0.14, +0.34 and −0.13 µs. Whoever else raises the flag makes a read look
-- for such entries among its own, and find none.

CREATE OR REPLACE FUNCTION public.mark_notifications_read(notification_ids uuid[]) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  caller uuid := auth.uid();
  at timestamptz := now();
  ids uuid[];
begin
  if caller is null then
    perform public.herald_raise('unauthorized', 'no caller: sign in first');
  end if;
  if notification_ids is null then
    perform public.herald_raise('validation_error', 'notification_ids is required');
  end if;
  if cardinality(notification_ids) > 1000 then
    perform public.herald_raise('validation_error', format('notification_ids names %s notifications; at most 1000 a call',
                                                    cardinality(notification_ids)));
  end if;
  with named as (
    select public.herald_entry_of(caller, n) as id from unnest(notification_ids) n
  ), updated as (
    update public.inbox i set is_read = true, read_at = at
     where i.id in (select id from named) and i.user_id = caller and not i.is_read
    returning i.id, case when i.read_effects then set_config('herald.read_effects', 'on', true) end
  )
  select coalesce(array_agg(id), '{}') into ids from updated;
  -- What reading does beyond marking, only for the entries whose notification uses it: an entry that
  -- does raised the flag as it was updated.
  if current_setting('herald.read_effects', true) = 'on' then
    perform set_config('herald.read_effects', '', true);
    perform public.herald_inbox_read_effects(i, true, false, 'read') from public.inbox i
     where i.id = any(ids) and i.read_effects;
  end if;
  return jsonb_build_object('updated_count', cardinality(ids), 'notification_ids', to_jsonb(ids),
                            'read_at', /* public.herald_ms(at) */ ((extract(epoch from (at)::timestamp with time zone) * 1000)::bigint));
end
$$;


-- The list (`herald_listed_entries`, under `get_notifications` and the history) finds the sends of an
-- entry not yet marked delivered: the queue's sent rows of the person that are the entry's row or share
-- its group, as one condition with an OR. No index serves that OR whole, so the plan rested on the
-- statistics: taken before a burst of sends (autovacuum analyzes a while after), they said there was
-- hardly a sent row, and the planner walked the terminal rows' index through every sent row of
-- everyone for each entry (2.4 ms a list of one entry over 20,000 sent rows; 214 µs once analyzed).
-- Each side is now a lookup of its own, the row by its key and the group by `notification_queue_group`
-- (recipient, group), and tests the status after: a condition on the status in the lookup lets the
-- planner take the terminal rows' index, which stale statistics price as empty (`offset 0` keeps the
-- test out of the lookup). What they find is the same: the earliest send of the two, and its channel.
-- (An action's check, `record_notification_action`, has the same OR but is planned otherwise: 61
-- buffers an action under the same statistics.)

CREATE OR REPLACE FUNCTION public.herald_listed_entries(uid uuid) RETURNS TABLE(id uuid, user_id uuid, type text, priority text, title text, body text, title_en text, title_ar text, body_en text, body_ar text, deep_link text, image_url text, data jsonb, is_read boolean, read_at timestamp with time zone, created_at timestamp with time zone, scheduled_at timestamp with time zone, delivered_at timestamp with time zone, channel text, action text, actioned_at timestamp with time zone, related_entity_id text, related_entity_type text)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select i.id, i.user_id, i.type, i.priority, i.title, i.body, i.title_en, i.title_ar, i.body_en, i.body_ar,
         i.deep_link, i.image_url, i.data, i.is_read, i.read_at, i.created_at,
         coalesce(i.scheduled_at, i.created_at), coalesce(i.delivered_at, s.at), coalesce(i.channel, s.channel),
         i.action, i.actioned_at, i.related_entity_id, i.related_entity_type
    from public.inbox i
    left join lateral (
      select min(x.at) as at, (array_agg(x.channel order by x.at, x.id))[1] as channel
        from ((select q.id, q.status, coalesce(q.sent_at, q.updated_at) as at, q.channel
                 from public.notification_queue q
                where q.id = i.queue_id and q.recipient_user_id = i.user_id offset 0)
              union all
              (select q.id, q.status, coalesce(q.sent_at, q.updated_at), q.channel
                 from public.notification_queue q
                where q.recipient_user_id = i.user_id and q.notification_group = i.notification_key offset 0)) x
       where i.delivered_at is null and x.status = 'sent') s on true
   where i.user_id = uid and (i.delivered_at is not null or s.at is not null)
$$;

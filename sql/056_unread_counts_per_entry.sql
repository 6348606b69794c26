-- A push's badge counts the recipient's unread entries whose notification went out. The check that
-- one went out now reads the entry's own queue row (by its id) and the rows of its group (by recipient
-- and group), and no condition on the status that would let the planner answer it from the index of
-- terminal rows: with statistics taken before a burst was sent (100,000 forecasts due at 08:00), the
-- planner took that index for empty and, for each entry, read every row sent since, so each batch's
-- count grew with the rows sent before it (2.4 s a batch of 200 once 50,000 were sent).
create or replace function public.herald_unread_entries(users uuid[])
returns table (user_id uuid, unread int)
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select i.user_id, count(*)::int
    from public.inbox i
   where i.user_id = any(users) and not i.is_read
     and (i.delivered_at is not null
          or (select q.status from public.notification_queue q
               where q.id = i.queue_id and q.recipient_user_id = i.user_id) = 'sent'
          or 'sent' = any(array(select q.status from public.notification_queue q
                                 where q.recipient_user_id = i.user_id and q.notification_group = i.notification_key)))
   group by i.user_id
$$;

-- One rule switches a recipient's channel off, for a pass's records and for the truth phases alike: a
-- provider's word that a phone or address refuses a channel (an SMS STOP, a WhatsApp block, an email
-- bounce or unsubscribe) turns that channel off only while the address it was about is still the
-- recipient's, and only when the channel is on (its reason says why; an earlier reason is kept). A late
-- word about an old number cannot switch off a new one.
--
-- `offs` is a JSON array of {"user_id", "channel" (sms | whatsapp | email), "destination", "reason"};
-- returns the number of recipients whose channels it switched off.
create or replace function herald_switch_off_channels(offs jsonb) returns integer
language sql
as $$
  with x as (
    select * from jsonb_to_recordset(coalesce(offs, '[]'::jsonb))
      as x(user_id uuid, channel text, destination text, reason text)
  ), off as (
    select x.user_id,
           bool_or(x.channel = 'sms') as sms, max(x.reason) filter (where x.channel = 'sms') as sms_reason,
           bool_or(x.channel = 'whatsapp') as whatsapp,
           max(x.reason) filter (where x.channel = 'whatsapp') as whatsapp_reason,
           bool_or(x.channel = 'email') as email, max(x.reason) filter (where x.channel = 'email') as email_reason
      from x
      join user_profiles p on p.user_id = x.user_id
     where (x.channel in ('sms', 'whatsapp') and p.phone_e164 = x.destination)
        or (x.channel = 'email' and lower(p.email) = lower(x.destination))
     group by x.user_id
  ), o as (
    update user_profiles p
       set notify_sms = p.notify_sms and not off.sms,
           notify_sms_disabled_reason = case when off.sms and p.notify_sms then off.sms_reason
                                             else p.notify_sms_disabled_reason end,
           notify_whatsapp = p.notify_whatsapp and not off.whatsapp,
           notify_whatsapp_disabled_reason = case when off.whatsapp and p.notify_whatsapp then off.whatsapp_reason
                                                  else p.notify_whatsapp_disabled_reason end,
           notify_email = p.notify_email and not off.email,
           champion_notify_email = p.champion_notify_email and not off.email,
           notify_email_disabled_reason = case when off.email and (p.notify_email or p.champion_notify_email)
                                               then off.email_reason else p.notify_email_disabled_reason end,
           updated_at = now()
      from off
     where p.user_id = off.user_id
       and ((off.sms and p.notify_sms) or (off.whatsapp and p.notify_whatsapp)
         or (off.email and (p.notify_email or p.champion_notify_email)))
    returning p.user_id
  )
  select count(*)::int from o
$$;

-- herald's own: not the app's roles'.
revoke all on function herald_switch_off_channels(jsonb) from public;
do $$
declare app_role name;
begin
  for app_role in select rolname from pg_roles where rolname in ('anon', 'authenticated') loop
    execute format('revoke all on function herald_switch_off_channels(jsonb) from %I', app_role);
  end loop;
end
$$;

-- Delivery truth from providers (docs/delivery-truth.md). For SMS and email, `outcome = 'delivered'` only means the
-- provider accepted the message. What became of it is learned later, two ways:
--   * the `statuses` phase polls Twilio's Message resource for SMS accepted a few minutes ago;
--   * the `events` phase applies what providers post to the app's webhook endpoint (SendGrid's Event
--     Webhook, Twilio's status callbacks, WhatsApp's `statuses[]`), stored raw in `provider_events`.
--
-- The truth is kept on the delivery it is about, as columns rather than a table of its own: one
-- attempt to one destination has one provider message id and one final fate, the polling phase's
-- work list is a partial index on these columns, and `herald explain` and the operator's SQL read
-- one row. (A separate table would need a join for every question and a uniqueness rule that says
-- the same thing as these columns.)

alter table notification_deliveries
  -- The provider's last word on the message, normalised:
  --   delivered                          it reached the handset / mailbox (WhatsApp `read` included)
  --   undelivered, failed, canceled      Twilio / WhatsApp gave up on it
  --   bounced, blocked, dropped          SendGrid: hard bounce, soft block, not sent
  --   complained                         SendGrid spam report (after a delivery)
  --   expired                            polling gave up without a final status (overridable later)
  --   unknown                            the provider no longer knows the message (overridable later)
  add column if not exists final_status     text check (final_status in ('delivered', 'undelivered', 'failed',
                                            'canceled', 'bounced', 'blocked', 'dropped', 'complained', 'expired', 'unknown')),
  add column if not exists final_error_code text,
  add column if not exists final_error      text,
  add column if not exists final_at         timestamptz,
  -- 'poll' (statuses phase) or 'event' (events phase, with the provider_events row).
  add column if not exists final_source     text,
  add column if not exists final_event_id   bigint,
  -- This final status turned the recipient's channel off (hard bounce, spam report, STOP, dead
  -- number, not on WhatsApp). Also what makes a replayed event a no-op: see the events phase.
  add column if not exists final_opt_out    boolean not null default false,
  -- Polling bookkeeping: when Twilio was last asked, and how often (the interval doubles).
  add column if not exists truth_checked_at timestamptz,
  add column if not exists truth_checks     int not null default 0;

-- The statuses phase's work list: accepted Twilio messages without a final word.
create index if not exists notification_deliveries_truth_pending
  on notification_deliveries (at)
  where provider = 'twilio' and outcome = 'delivered' and final_status is null and provider_message_id is not null;

-- Events find their delivery by provider message id.
create index if not exists notification_deliveries_provider_message
  on notification_deliveries (provider, provider_message_id) where provider_message_id is not null;

-- What providers posted to the app's webhook endpoint, raw, for the events phase to verify and apply.
-- The endpoint (deploy/supabase/functions/provider-events) only inserts; herald verifies the
-- signature against the body exactly as received, so `body` must be stored byte for byte.
create table if not exists provider_events (
  id            bigint generated always as identity primary key,
  provider      text not null check (provider in ('sendgrid', 'twilio', 'whatsapp')),
  received_at   timestamptz not null default now(),
  -- The full URL the endpoint was called at (Twilio signs it, query string included).
  url           text,
  -- The signature headers and content type, names lower-cased: {"x-twilio-signature": "…"}.
  headers       jsonb not null default '{}'::jsonb,
  -- The raw body, exactly as received.
  body          text not null default '',
  processed_at  timestamptz,
  -- applied | unmatched | ignored | rejected | unverified | invalid (see docs/delivery-truth.md).
  outcome       text check (outcome in ('applied', 'unmatched', 'ignored', 'rejected', 'unverified', 'invalid')),
  error         text
);

-- The events phase's work list, oldest first; and pruning of processed rows.
create index if not exists provider_events_unprocessed on provider_events (id) where processed_at is null;
create index if not exists provider_events_processed on provider_events (processed_at) where processed_at is not null;

select herald_restrict_table('provider_events');

-- SendGrid's unsubscribe is a final word about the person, not about one delivery: an `unsubscribe` or
-- `group_unsubscribe` event records final status `unsubscribed` on the email it came from and turns the
-- recipient's email off (the events phase; docs/delivery-truth.md), as a spam report does.
alter table notification_deliveries drop constraint if exists notification_deliveries_final_status_check;
alter table notification_deliveries add constraint notification_deliveries_final_status_check
  check (final_status in ('delivered', 'undelivered', 'failed', 'canceled', 'bounced', 'blocked', 'dropped',
                          'complained', 'unsubscribed', 'expired', 'unknown'));

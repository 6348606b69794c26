-- Demo data for `make demo`: one family, people in three time zones, and queue rows
-- that exercise sends, skips, deferrals and a failure. The demo runs the pass at 2026-01-25 03:00 UTC:
-- 19:00 in Los Angeles, 03:00 in London, 12:00 in Tokyo.
begin;

insert into user_profiles (user_id, display_name, timezone, locale, email, phone_e164, notify_push, notify_email,
                           notify_sms, quiet_hours_start, quiet_hours_end, quiet_hours_notification_level,
                           quiet_hours_action) values
  ('00000000-0000-4000-8000-000000000001', 'Lena (Los Angeles)', 'America/Los_Angeles', 'en', 'lena@example.com',
   '+13105550101', true, true, false, '22:00', '07:00', 'none', 'skip'),
  ('00000000-0000-4000-8000-000000000002', 'Omar (London)', 'Europe/London', 'ar', 'omar@example.com',
   '+447700900002', true, false, true, '22:00', '07:00', 'critical_only', 'skip'),
  ('00000000-0000-4000-8000-000000000003', 'Yuki (Tokyo)', 'Asia/Tokyo', 'en', null, null, true, false, false,
   '22:00', '07:00', 'none', 'skip'),
  ('00000000-0000-4000-8000-000000000004', 'Sam (London, defers)', 'Europe/London', 'en', 'sam@example.com',
   null, true, true, false, '22:00', '07:00', 'none', 'defer'),
  ('00000000-0000-4000-8000-000000000005', 'Mia (the member)', 'America/New_York', 'en', null, null, false, false,
   false, null, null, 'none', 'skip');

insert into family_members (family_id, user_id, role) values
  ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000001', 'admin'),
  ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000002', 'admin'),
  ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000003', 'admin'),
  ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000004', 'admin'),
  ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000005', 'member');

insert into device_tokens (user_id, device_token, platform, provider) values
  ('00000000-0000-4000-8000-000000000001', 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90', 'ios', 'apns'),
  ('00000000-0000-4000-8000-000000000002', 'ExponentPushToken[demoOmar0000000000000]', 'android', 'expo'),
  ('00000000-0000-4000-8000-000000000003', 'fcm-demo-token-yuki-0000000000000000000000000000', 'android', 'fcm'),
  ('00000000-0000-4000-8000-000000000004', 'b1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90', 'ios', 'apns');

-- Mia's sleep has dropped for 7 days (attention), and her steps for 14 (critical).
insert into pattern_alert_state (id, user_id, metric_type, pattern_type, episode_status, active_since,
                                 current_level, severity, baseline_value, recent_value, deviation_percent,
                                 last_notified_level) values
  ('00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-000000000005', 'sleep_minutes',
   'drop_vs_baseline', 'active', '2026-01-18', 7, 'attention', 450, 330, -26.7, 7),
  ('00000000-0000-4000-8000-0000000000a2', '00000000-0000-4000-8000-000000000005', 'steps',
   'drop_vs_baseline', 'active', '2026-01-11', 14, 'critical', 9000, 4200, -53.3, 14),
  ('00000000-0000-4000-8000-0000000000a3', '00000000-0000-4000-8000-000000000005', 'hrv_ms',
   'drop_vs_baseline', 'active', '2026-01-21', 3, 'watch', 60, 44, -26.7, 3);
update pattern_alert_state set snooze_until = '2026-01-27', snooze_days = 3
 where id = '00000000-0000-4000-8000-0000000000a3';

insert into notification_queue (recipient_user_id, member_user_id, alert_state_id, channel, kind, severity,
                                payload, scheduled_at, run_after) values
  -- Lena, 19:00 in Los Angeles: outside quiet hours → sent (push, email, in-app).
  ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a1',
   'push', 'pattern_alert', 'attention',
   '{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7,"baseline":450,"recent":330,"deviation_percent":-26.7}',
   '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a1',
   'email', 'pattern_alert', 'attention',
   '{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7,"baseline":450,"recent":330,"deviation_percent":-26.7}',
   '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a1',
   'in_app', 'pattern_alert', 'attention',
   '{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7,"baseline":450,"recent":330,"deviation_percent":-26.7}',
   '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  -- Omar, 03:00 in London, critical only: the attention alert is skipped (quiet_hours) …
  ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a1',
   'push', 'pattern_alert', 'attention',
   '{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7}', '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  -- … the critical one gets through (in Arabic, his locale).
  ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a2',
   'push', 'pattern_alert', 'critical',
   '{"metric_type":"steps","pattern_type":"drop_vs_baseline","level":14}', '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  -- Omar has SMS on but the alert is about another member and champion_notify_sms is off → channel_disabled.
  ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a2',
   'sms', 'pattern_alert', 'critical',
   '{"metric_type":"steps","pattern_type":"drop_vs_baseline","level":14}', '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  -- Yuki, 12:00 in Tokyo → sent; her email toggle is off → channel_disabled.
  ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a1',
   'push', 'pattern_alert', 'attention',
   '{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7}', '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a1',
   'email', 'pattern_alert', 'attention',
   '{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7}', '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  -- The HRV alert is snoozed until 2026-01-27 → alert_snoozed.
  ('00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-0000000000a3',
   'push', 'pattern_alert', 'watch',
   '{"metric_type":"hrv_ms","pattern_type":"drop_vs_baseline","level":3}', '2026-01-25 02:55+00', '2026-01-25 02:55+00'),
  -- Sam, 03:00 in London, defers: his reminder waits for 07:00 London time.
  ('00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000004', null, 'push', 'reminder', 'watch',
   '{"title":"Log your symptoms","body":"Take a minute to log how today went."}', '2026-01-25 02:50+00', '2026-01-25 02:50+00'),
  -- A system message two days old → expired.
  ('00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000004', null, 'in_app', 'system', null,
   '{"title":"Welcome","body":"Thanks for joining."}', '2026-01-23 01:00+00', '2026-01-23 01:00+00'),
  -- Lena: a critical dose reminder to the webhook and in-app.
  ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000001', null, 'webhook', 'reminder', 'critical',
   '{"title":"Dose reminder","body":"Time for your evening dose."}', '2026-01-25 02:59+00', '2026-01-25 02:59+00'),
  ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000001', null, 'in_app', 'daily_forecast', null,
   '{"date":"2026-01-24","risk_level":"MODERATE","summary":"Pressure changes ahead. Gentle movement helps."}',
   '2026-01-25 02:00+00', '2026-01-25 02:00+00'),
  -- A row written by an app with a typo in the channel → failed permanently with a readable last_error.
  ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000001', null, 'pidgeon', 'system', null,
   '{"title":"Hi"}', '2026-01-25 02:59+00', '2026-01-25 02:59+00');

-- What the generator phases read.
-- Mia's wearable data, 47 days to 2026-01-24, consistent with her episodes above: sleep down for 7 days
-- (level 7), steps for 14 (level 14), HRV for 4 (level 3, snoozed) — and a resting heart rate up for the
-- last 7 days, a new episode the pass opens and tells her family's admins about. The drops are deep
-- enough that even the first day's 3-day mean passes the 20 % threshold.
insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps, hrv_ms, resting_hr)
select '00000000-0000-4000-8000-000000000005', '2026-01-24'::date - g,
       case when g < 7 then 150 else 440 + g % 3 * 5 end,
       case when g < 14 then 3000 else 9000 + g % 4 * 100 end,
       case when g < 4 then 20 else 60 + g % 3 end,
       case when g < 7 then 95 else 57 + g % 3 end
  from generate_series(0, 46) g;

-- Lena's daily dose reminder at 19:00 her time (03:00 UTC: due now), critical.
insert into reminders (user_id, schedule, reminder_type, title, body, local_time, critical) values
  ('00000000-0000-4000-8000-000000000001', 'daily', 'dose', 'Evening dose', 'Time for your evening dose.', '19:00', true);

-- Yuki gets four meditation prompts a day between 07:00 and 22:00 Tokyo time.
insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values
  ('00000000-0000-4000-8000-000000000003', 4, 7, 22);

commit;

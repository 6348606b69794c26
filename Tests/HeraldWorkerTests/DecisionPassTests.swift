import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Seed 000's decision matrix and the rules of DESIGN §4, end to end: rows in a real PostgreSQL, one
/// real pass, every channel on an in-process adapter (log / inbox).
@Suite struct DecisionPassTests {
    let logAll = ["HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log", "HERALD_CHANNEL_SMS": "log"]

    @Test func seedMatrix() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let member = try f.profile(push: false)
            // Quiet 22:00–07:00 UTC; the pass runs at 03:00 UTC (inside) or 12:00 UTC (outside).
            func person(push: Bool, level: String) throws -> UUID {
                let p = try f.profile(push: push, quiet: ("22:00", "07:00"), level: level)
                try f.token(p)
                return p
            }
            let quietNow = instant("2026-01-25T03:00:00Z")
            let watch = try f.alert(member: member, level: 3, severity: "watch")
            let attention = try f.alert(member: member, level: 7, severity: "attention", metric: "steps")
            let critical = try f.alert(member: member, level: 14, severity: "critical", metric: "hrv_ms")
            let snoozed = try f.alert(member: member, level: 7, severity: "attention", snoozeUntil: "2026-01-26", metric: "resting_hr")
            let dismissed = try f.alert(member: member, level: 7, severity: "attention", dismissed: true, metric: "active_minutes")
            func alertRow(_ to: UUID, _ alert: UUID, level: Int) throws -> UUID {
                try f.enqueue(to: to, channel: "push", kind: "pattern_alert", member: member, alert: alert,
                              payload: #"{"metric_type":"sleep_minutes","level":\#(level)}"#, at: quietNow)
            }
            // 1 push off → skip channel_disabled
            let r1 = try alertRow(try person(push: false, level: "none"), watch, level: 3)
            // 2 not in quiet hours → send: a recipient without quiet hours
            let p2 = try f.profile(push: true)
            try f.token(p2)
            let r2 = try alertRow(p2, watch, level: 3)
            // 3 quiet, level none → skip quiet_hours
            let r3 = try alertRow(try person(push: true, level: "none"), critical, level: 14)
            // 4, 5 quiet, critical_only, watch / attention → skip
            let r4 = try alertRow(try person(push: true, level: "critical_only"), watch, level: 3)
            let r5 = try alertRow(try person(push: true, level: "critical_only"), attention, level: 7)
            // 6 quiet, critical_only, critical → send
            let r6 = try alertRow(try person(push: true, level: "critical_only"), critical, level: 14)
            // 7 quiet, all → send
            let r7 = try alertRow(try person(push: true, level: "all"), watch, level: 3)
            // 8 snoozed, 9 dismissed → skip
            let r8 = try alertRow(p2, snoozed, level: 7)
            let r9 = try alertRow(p2, dismissed, level: 7)

            let (summary, code) = Worker(url: tdb.url, settings: logAll).run(now: quietNow)
            #expect(code == .ok)
            #expect(summary.processed == 9)
            let expected: [(UUID, String, String?)] = [
                (r1, "skipped", "channel_disabled"), (r2, "sent", nil), (r3, "skipped", "quiet_hours"),
                (r4, "skipped", "quiet_hours"), (r5, "skipped", "quiet_hours"), (r6, "sent", nil), (r7, "sent", nil),
                (r8, "skipped", "alert_snoozed"), (r9, "skipped", "alert_dismissed"),
            ]
            for (n, (id, status, reason)) in expected.enumerated() {
                let row = try f.row(id)
                #expect(row["status"].string == status, "matrix row \(n + 1)")
                #expect(row["skip_reason"].string == reason, "matrix row \(n + 1)")
            }
            // Every decision left its trail, with the inputs that decided it.
            let trail = try db.query("""
                select details from notification_events where queue_id = \(r3) and event = 'skipped'
                """).first?["details"].string ?? ""
            #expect(trail.contains("03:00"))
            #expect(trail.contains("quiet"))
        }
    }

    @Test func threeTimezonesAtOneInstant() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var rows: [String: UUID] = [:]
            for tz in ["America/Los_Angeles", "Europe/London", "Asia/Tokyo"] {
                let p = try f.profile(timezone: tz, quiet: ("22:00", "07:00"), level: "none")
                rows[tz] = try f.enqueue(to: p, channel: "in_app", at: seedInstant)
            }
            let (_, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok)
            #expect(try f.row(rows["America/Los_Angeles"]!)["status"].string == "sent")     // 19:00
            #expect(try f.row(rows["Europe/London"]!)["skip_reason"].string == "quiet_hours") // 03:00
            #expect(try f.row(rows["Asia/Tokyo"]!)["status"].string == "sent")              // 12:00
        }
    }

    @Test func deferUntilQuietHoursEndAcrossDST() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            // New York, quiet 22:00–07:00, defer. 2026-03-08 is the spring-forward night (02:00 → 03:00):
            // at 05:30 UTC it is 00:30 EST; the window ends at 07:00 EDT = 11:00 UTC.
            let p = try f.profile(timezone: "America/New_York", quiet: ("22:00", "07:00"), action: "defer")
            let spring = try f.enqueue(to: p, at: instant("2026-03-08T05:30:00Z"))
            let (_, code) = Worker(url: tdb.url).run(now: instant("2026-03-08T05:30:00Z"))
            #expect(code == .ok)
            var row = try f.row(spring)
            #expect(row["status"].string == "pending")
            #expect(row["run_after"].date == instant("2026-03-08T11:00:00Z"))
            #expect(row["attempts"].int == 0)  // a deferral is not an attempt

            // Fall back, 2026-11-01: at 05:30 UTC it is 01:30 EDT; 07:00 EST = 12:00 UTC.
            let fall = try f.enqueue(to: p, at: instant("2026-11-01T05:30:00Z"))
            _ = Worker(url: tdb.url).run(now: instant("2026-11-01T05:30:00Z"))
            row = try f.row(fall)
            #expect(row["run_after"].date == instant("2026-11-01T12:00:00Z"))

            // When the window has ended, the deferred row goes out.
            _ = Worker(url: tdb.url).run(now: instant("2026-11-01T12:00:30Z"))
            #expect(try f.row(fall)["status"].string == "sent")
        }
    }

    @Test func quietHoursBothSidesOfDST() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            // London, quiet 00:30–01:30. On 2026-03-29 clocks go 01:00 GMT → 02:00 BST: 00:45 UTC is 00:45 GMT
            // (quiet); on 2026-10-25 01:00 BST → 01:00 GMT: 00:15 UTC is 01:15 GMT (quiet), 00:40 UTC on
            // 2026-10-24 is 01:40 BST (not quiet).
            let p = try f.profile(timezone: "Europe/London", quiet: ("00:30", "01:30"), level: "none")
            let a = try f.enqueue(to: p, at: instant("2026-03-29T00:45:00Z"))
            _ = Worker(url: tdb.url).run(now: instant("2026-03-29T00:45:00Z"))
            #expect(try f.row(a)["skip_reason"].string == "quiet_hours")
            let b = try f.enqueue(to: p, at: instant("2026-10-25T01:15:00Z"))
            _ = Worker(url: tdb.url).run(now: instant("2026-10-25T01:15:00Z"))
            #expect(try f.row(b)["skip_reason"].string == "quiet_hours")
            let c = try f.enqueue(to: p, at: instant("2026-10-24T00:40:00Z"))
            _ = Worker(url: tdb.url).run(now: instant("2026-10-24T00:40:00Z"))
            #expect(try f.row(c)["status"].string == "sent")
        }
    }

    @Test func expiryAndStaleForecast() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let p = try f.profile(timezone: "Asia/Tokyo")
            let old = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(-25 * 3600))
            let fresh = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(-23 * 3600))
            // 03:00 UTC is 12:00 on the 25th in Tokyo: yesterday's forecast is stale.
            let stale = try f.enqueue(to: p, kind: "daily_forecast",
                                      payload: #"{"date":"2026-01-24","risk_level":"LOW","summary":"Steady"}"#, at: seedInstant)
            let today = try f.enqueue(to: p, kind: "daily_forecast",
                                      payload: #"{"date":"2026-01-25","risk_level":"HIGH","summary":"Pressure drop"}"#, at: seedInstant)
            _ = Worker(url: tdb.url).run(now: seedInstant)
            #expect(try f.row(old)["skip_reason"].string == "expired")
            #expect(try f.row(fresh)["status"].string == "sent")
            #expect(try f.row(stale)["skip_reason"].string == "expired")
            #expect(try f.row(today)["status"].string == "sent")
            // --max-age 1 expires the 23-hour-old kind too.
            let another = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(-2 * 3600))
            _ = Worker(url: tdb.url).run(now: seedInstant, maxAgeHours: 1)
            #expect(try f.row(another)["skip_reason"].string == "expired")
        }
    }

    /// A backend that schedules with `run_after` alone (the insert's time left in `scheduled_at`) gets
    /// its row sent when it comes due days later, not skipped as `expired`; so do rows an operator
    /// reschedules or retries long after their first time (migration 030, `herald reschedule/retry`).
    @Test func aRowScheduledAheadIsNotExpiredWhenItComesDue() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            let ahead = try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, run_after)
                values (\(p), \(p), 'in_app', 'system', '{"title":"Refill","body":"Two days"}', now() + interval '2 days')
                returning id
                """).first!["id"].uuid!
            let row = try #require(try db.query("select scheduled_at, run_after from notification_queue where id = \(ahead)").first)
            #expect(row["scheduled_at"].date == row["run_after"].date)
            let due = try #require(row["run_after"].date)
            _ = Worker(url: tdb.url).run(now: due.addingTimeInterval(60))
            #expect(try f.row(ahead)["status"].string == "sent")

            // Moved three days ahead by an operator, and retried two days after it failed.
            // (Each its own recipient, so no rate limit sees the others' sends.)
            let moved = try f.enqueue(to: try f.profile(), at: seedInstant)
            let later = seedInstant.addingTimeInterval(3 * 86_400)
            var filter = RowFilter()
            filter.ids = [moved]
            _ = try Operator(db: db, actor: "ops", reason: nil).apply(.reschedule(later), to: filter, dryRun: false)
            _ = Worker(url: tdb.url).run(now: later.addingTimeInterval(60))
            #expect(try f.row(moved)["status"].string == "sent")
            let failed = try f.enqueue(to: try f.profile(), at: Date().addingTimeInterval(-2 * 86_400))
            try db.execute("update notification_queue set status = 'failed', permanent = true, attempts = 5 where id = \(failed)")
            filter.ids = [failed]
            _ = try Operator(db: db, actor: "ops", reason: nil).apply(.retry, to: filter, dryRun: false)
            _ = Worker(url: tdb.url).run(now: Date().addingTimeInterval(60))
            #expect(try f.row(failed)["status"].string == "sent")
        }
    }

    @Test func supersededAndResolvedAlerts() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let member = try f.profile()
            let admin = try f.profile()
            let escalated = try f.alert(member: member, level: 14, severity: "critical")
            let resolved = try f.alert(member: member, level: 7, severity: "attention", status: "resolved", metric: "steps")
            let low = try f.enqueue(to: admin, kind: "pattern_alert", member: member, alert: escalated,
                                    payload: #"{"level":7}"#, at: seedInstant)
            let high = try f.enqueue(to: admin, kind: "pattern_alert", member: member, alert: escalated,
                                     payload: #"{"level":14}"#, at: seedInstant)
            let gone = try f.enqueue(to: admin, kind: "pattern_alert", member: member, alert: resolved,
                                     payload: #"{"level":7}"#, at: seedInstant)
            _ = Worker(url: tdb.url).run(now: seedInstant)
            #expect(try f.row(low)["skip_reason"].string == "superseded")
            #expect(try f.row(high)["status"].string == "sent")
            #expect(try f.row(gone)["skip_reason"].string == "alert_resolved")
        }
    }

    @Test func channelTogglesAndDestinations() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let member = try f.profile()
            // About another member: champion_notify_email decides, not notify_email.
            let champion = try f.profile(email: "c@example.com", emailOn: false, championEmail: true)
            let own = try f.profile(email: "o@example.com", emailOn: false, championEmail: true)
            let noPhone = try f.profile(sms: true)
            let noToken = try f.profile(push: true)
            let a = try f.enqueue(to: champion, channel: "email", kind: "pattern_alert", member: member, at: seedInstant)
            let b = try f.enqueue(to: own, channel: "email", at: seedInstant)
            let c = try f.enqueue(to: noPhone, channel: "sms", at: seedInstant)
            let d = try f.enqueue(to: noToken, channel: "push", at: seedInstant)
            _ = Worker(url: tdb.url, settings: logAll).run(now: seedInstant)
            #expect(try f.row(a)["status"].string == "sent")
            #expect(try f.row(b)["skip_reason"].string == "channel_disabled")
            #expect(try f.row(c)["skip_reason"].string == "no_destination")
            #expect(try f.row(d)["skip_reason"].string == "no_destination")
        }
    }

    @Test func rateLimitDefersToLocalMidnight() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(timezone: "Asia/Tokyo")
            // Ten reminders sent in-app earlier today (Tokyo), over the hours.
            try db.execute("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, status, sent_at, scheduled_at)
                select \(p), 'in_app', 'reminder', '{}', 'sent', \(seedInstant)::timestamptz - make_interval(mins => 10 + g * 20),
                       \(seedInstant)::timestamptz - make_interval(mins => 10 + g * 20)
                  from generate_series(1, 10) g
                """)
            let eleventh = try f.enqueue(to: p, kind: "reminder", at: seedInstant)
            let critical = try f.enqueue(to: p, kind: "reminder", severity: "critical", at: seedInstant)
            _ = Worker(url: tdb.url).run(now: seedInstant)
            let row = try f.row(eleventh)
            #expect(row["status"].string == "pending")
            // Midnight in Tokyo on the 26th is 15:00 UTC on the 25th.
            #expect(row["run_after"].date == instant("2026-01-25T15:00:00Z"))
            #expect(try f.row(critical)["status"].string == "sent")
        }
    }

    @Test func inAppWritesInboxWithBadge() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(locale: "ar")
            let id = try f.enqueue(to: p, kind: "prompt", payload: "{}", at: seedInstant)
            _ = Worker(url: tdb.url).run(now: seedInstant)
            let inbox = try db.query("select title, body, type, queue_id from inbox where user_id = \(p)")
            #expect(inbox.count == 1)
            #expect(inbox.first?["queue_id"].uuid == id)
            #expect(inbox.first?["type"].string == "prompt")
            let title = inbox.first?["title"].string ?? ""
            #expect(title.count > 3)
            #expect(title != "Meditation Check-in", "the recipient's locale is ar")
            #expect(try f.row(id)["status"].string == "sent")
            let delivery = try db.query("select provider, outcome from notification_deliveries where queue_id = \(id)")
            #expect(delivery.first?["provider"].string == "inbox")
            #expect(delivery.first?["outcome"].string == "delivered")
        }
    }
}

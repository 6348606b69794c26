import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// Rate limits: at most 10 notifications a day, counted per notification across its channels, and an
/// hour between two reminders of the same type; prompts the person asked for are never held back.
/// End to end on a real PostgreSQL.
@Suite struct RateLimitPassTests: ReminderPassSuite {
    @Test func theDailyCapCountsANotificationOnceAcrossChannels() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(email: "p@example.com", push: true, inApp: true, emailOn: true)
            try f.token(p)
            let at = instant("2026-01-25T12:00:00Z")
            func row(_ channel: String, group: String, minute: Int) throws -> UUID {
                try db.query("""
                    insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after, notification_group)
                    values (\(p), \(p), \(channel), 'reminder', '{"title":"t","body":"b"}', \(at), \(at.addingTimeInterval(Double(minute))), \(group))
                    returning id
                    """).first!["id"].uuid!
            }
            // Nine notifications, each on one channel (three per channel: a per-channel cap would allow 30 more),
            let channels = ["push", "email", "in_app"]
            for i in 0..<9 { _ = try row(channels[i % 3], group: "g\(i)", minute: i) }
            // a tenth on all three channels,
            let tenth = try channels.map { try row($0, group: "g9", minute: 10) }
            // and an eleventh, by push.
            let eleventh = try row("push", group: "g10", minute: 11)
            try tdb.withoutSpacing()
            let (s, _) = Worker(url: tdb.url, settings: logAll).run(now: at.addingTimeInterval(60))
            #expect(s.sent == 12)
            for id in tenth { #expect(try f.row(id)["status"].string == "sent") }
            let held = try f.row(eleventh)
            #expect(held["status"].string == "pending")
            #expect(held["run_after"].date == instant("2026-01-26T00:00:00Z"))
            #expect(try f.count("select count(*)::int from notification_events where queue_id = \(eleventh) and reason = 'rate_limit_daily'") == 1)
        }
    }

    @Test func spacingIsPerReminderType() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(push: true)
            try f.token(p)
            let now = instant("2026-01-25T12:00:00Z")
            // A daily reminder sent ten minutes ago.
            try db.execute("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, status, sent_at, scheduled_at)
                values (\(p), 'push', 'reminder', '{"reminder_type":"daily"}', 'sent', \(now.addingTimeInterval(-600)), \(now.addingTimeInterval(-600)))
                """)
            let dose = try f.enqueue(to: p, channel: "push", kind: "reminder", payload: #"{"reminder_type":"dose"}"#, at: now)
            let daily = try f.enqueue(to: p, channel: "push", kind: "reminder", payload: #"{"reminder_type":"daily"}"#, at: now)
            _ = Worker(url: tdb.url, settings: logAll).run(now: now)
            #expect(try f.row(dose)["status"].string == "sent")
            let held = try f.row(daily)
            #expect(held["status"].string == "pending")
            #expect(held["run_after"].date == now.addingTimeInterval(3000))
        }
    }

    @Test func everyPromptTheUserAskedForIsDelivered() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(push: true)
            try f.token(p)
            // Ten other notifications earlier today: the cap is used up.
            try db.execute("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, status, sent_at, scheduled_at)
                select \(p), 'push', 'reminder', jsonb_build_object('reminder_type', 'daily'), 'sent',
                       \(instant("2026-01-25T05:00:00Z"))::timestamptz + g * interval '1 minute', \(instant("2026-01-25T05:00:00Z"))
                  from generate_series(1, 10) g
                """)
            try db.execute("insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(p), 40, 7, 22)")
            let worker = Worker(url: tdb.url, settings: logAll)
            _ = worker.run(now: instant("2026-01-25T06:00:00Z")) { $0.phases = [.prompts] }
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'prompt'") == 40)
            // A pass every 30 minutes through the waking window: each prompt goes when due, none held back.
            var t = instant("2026-01-25T07:00:00Z")
            while t <= instant("2026-01-25T22:00:00Z") {
                _ = worker.run(now: t, drain: true) { $0.phases = [.deliver] }
                t = t.addingTimeInterval(1800)
            }
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'prompt' and status = 'sent'") == 40)
            #expect(try f.count("select count(*)::int from notification_events where reason like 'rate_limit%'") == 0)
        }
    }
}

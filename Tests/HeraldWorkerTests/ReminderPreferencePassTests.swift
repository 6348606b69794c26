import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// The person's reminder preferences: a toggle per type, and quiet hours that never drop a critical
/// reminder.
/// End to end on a real PostgreSQL.
@Suite struct ReminderPreferencePassTests: ReminderPassSuite {
    @Test func eachTypeHasItsToggle() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let types = ["daily", "dose", "washout", "test_start"]
            let columns = ["daily": "daily_reminder_enabled", "dose": "dose_reminder_enabled",
                           "washout": "washout_notifications_enabled", "test_start": "test_start_reminder_enabled"]
            var people: [String: UUID] = [:]
            for type in types {
                let p = try f.profile(push: true)
                try f.token(p)
                try db.execute("update user_profiles set \(unescaped: columns[type]!) = false where user_id = \(p)")
                // Every type for every person; only the one turned off is skipped.
                for t in types {
                    try db.execute("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', \(t), \(instant("2026-01-25T12:00:00Z")))")
                }
                people[type] = p
            }
            // Forecast and prompt toggles too.
            let noForecast = try f.profile(push: true)
            try f.token(noForecast)
            try db.execute("update user_profiles set forecast_notifications_enabled = false, prompt_notifications_enabled = false where user_id = \(noForecast)")
            try f.enqueue(to: noForecast, channel: "push", kind: "daily_forecast", payload: #"{"date":"2026-01-25"}"#, at: instant("2026-01-25T12:00:00Z"))
            try f.enqueue(to: noForecast, channel: "push", kind: "prompt", at: instant("2026-01-25T12:00:00Z"))

            try tdb.withoutSpacing()
            let (s, _) = Worker(url: tdb.url, settings: logAll).run(now: instant("2026-01-25T12:40:00Z"), drain: true) {
                $0.phases = [.reminders, .deliver]
            }
            #expect(s.skipReasons[.typeDisabled] == 6)
            for type in types {
                let rows = try db.query("""
                    select payload->>'reminder_type' as t, status, skip_reason from notification_queue where recipient_user_id = \(people[type]!)
                    """)
                #expect(rows.count == 4)
                for r in rows {
                    if r["t"].string == type {
                        #expect(r["status"].string == "skipped" && r["skip_reason"].string == "type_disabled")
                    } else {
                        #expect(r["status"].string == "sent", "\(type) off: \(r["t"].string ?? "") should be sent")
                    }
                }
            }
            #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id = \(noForecast) and skip_reason = 'type_disabled'") == 2)
        }
    }

    /// Quiet hours 22:00–07:00 at the defaults (level `none`, action `skip`, allow critical on).
    @Test func criticalRemindersAreNeverDroppedAtTheDefaults() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(push: true, quiet: ("22:00", "07:00"))
            try f.token(p)
            let critical = try db.query("""
                insert into reminders (user_id, schedule, reminder_type, at, critical) values (\(p), 'once', 'test_start', \(instant("2026-01-25T23:00:00Z")), true) returning id
                """).first!["id"].uuid!
            let plain = try db.query("""
                insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'test_start', \(instant("2026-01-25T23:00:00Z"))) returning id
                """).first!["id"].uuid!
            // A dose at 06:40: its reminder (06:10) is within the hour of the dose → through quiet hours.
            let dose = try db.query("""
                insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'dose', \(instant("2026-01-26T06:40:00Z"))) returning id
                """).first!["id"].uuid!
            let worker = Worker(url: tdb.url, settings: logAll)
            _ = worker.run(now: instant("2026-01-25T23:00:00Z")) { $0.phases = [.reminders, .deliver] }
            func status(_ r: UUID) throws -> PGRow { try db.query("select status, skip_reason, run_after from notification_queue where reminder_id = \(r)").first! }
            #expect(try status(plain)["skip_reason"].string == "quiet_hours")
            #expect(try status(critical)["status"].string == "pending")
            #expect(try status(critical)["run_after"].date == instant("2026-01-26T07:00:00Z"))
            _ = worker.run(now: instant("2026-01-26T06:10:00Z")) { $0.phases = [.reminders, .deliver] }
            #expect(try status(dose)["status"].string == "sent")
            let trail = try db.query("""
                select e.details->>'quiet_override' as o from notification_trail e join notification_queue q on q.id = e.queue_id
                 where q.reminder_id = \(dose) and e.event = 'sent'
                """).first
            #expect(trail?["o"].string == "dose_within_hour")
            _ = worker.run(now: instant("2026-01-26T07:00:00Z")) { $0.phases = [.reminders, .deliver] }
            #expect(try status(critical)["status"].string == "sent")
        }
    }
}

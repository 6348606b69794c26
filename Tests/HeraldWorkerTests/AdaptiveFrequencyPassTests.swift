import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// Adaptive frequency (adherence adaptation): consistent logging and dose timing reduce the reminders;
/// missed logs or a late dose bring them back.
/// End to end on a real PostgreSQL.
@Suite struct AdaptiveFrequencyPassTests: ReminderPassSuite {
    struct Adaptive {
        let db: PGConnection
        let user: UUID
        let worker: Worker

        func logs(_ dates: [String]) throws {
            for d in dates { try db.execute("insert into daily_logs (user_id, log_date, logged_at) values (\(user), \(d)::date, \(d)::date + time '10:00')") }
        }
        /// The reminders and deliver phases at 20:00 UTC on `date`.
        func evening(_ date: String) -> (frequency: String?, daily: PGRow?) {
            _ = worker.run(now: instant("\(date)T20:00:00Z")) { $0.phases = [.reminders, .deliver] }
            let f = try? db.query("select current_frequency from user_profiles where user_id = \(user)").first?["current_frequency"].string
            let row = try? db.query("""
                select status, skip_reason from notification_queue where recipient_user_id = \(user)
                   and payload->>'reminder_type' = 'daily' and payload->>'date' = \(date)
                """).first
            return (f, row)
        }
    }

    func adaptivePerson(_ tdb: TestDB, _ db: PGConnection) throws -> Adaptive {
        let f = Fixtures(db: db)
        let p = try f.profile(push: true)
        try f.token(p)
        try db.execute("update user_profiles set adaptive_frequency_enabled = true where user_id = \(p)")
        try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '20:00')")
        return Adaptive(db: db, user: p, worker: Worker(url: tdb.url, settings: logAll))
    }

    @Test func sevenDaysOfConsistentLoggingReduceTheFrequencyAndTwoMissedLogsRestoreIt() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let a = try adaptivePerson(tdb, db)
            // Days 1–7 (Feb 1–7) logged; each evening the reminder goes (full, and not yet 7 days).
            for d in 1...7 {
                try a.logs(["2026-02-0\(d)"])
                if d < 7 {
                    let e = a.evening("2026-02-0\(d)")
                    #expect(e.frequency == "full")
                }
            }
            // Feb 8, evening, not logged yet: seven consecutive days → reduced; the reminder still goes
            // (nothing logged today).
            var e = a.evening("2026-02-08")
            #expect(e.frequency == "reduced")
            #expect(e.daily?["status"].string == "sent")
            let score = try JSONValue.parse(try db.query("select adherence_score::text as s from user_profiles where user_id = \(a.user)").first?["s"].string ?? "")
            #expect(score["daily_log_streak"]?.intValue == 7)
            #expect(score["missed_logs_last_7_days"]?.intValue == 0)
            #expect(score["overall_score"] != nil && score["total_reminders"] != nil && score["missed_reminders"] != nil)
            // Feb 9, logged in the morning: at reduced frequency the evening reminder is not needed.
            try a.logs(["2026-02-08", "2026-02-09"])
            e = a.evening("2026-02-09")
            #expect(e.frequency == "reduced")
            #expect(e.daily?["status"].string == "skipped")
            #expect(e.daily?["skip_reason"].string == "adaptive_frequency")
            let trail = try db.query("""
                select e.details->>'frequency' as f from notification_trail e join notification_queue q on q.id = e.queue_id
                 where q.recipient_user_id = \(a.user) and e.event = 'skipped' and e.reason = 'adaptive_frequency'
                """).first
            #expect(trail?["f"].string == "reduced")
            // Feb 10 and 11 not logged: one missed log changes nothing…
            e = a.evening("2026-02-11")
            #expect(e.frequency == "reduced")
            #expect(e.daily?["status"].string == "sent")
            // …two restore full frequency.
            e = a.evening("2026-02-12")
            #expect(e.frequency == "full")
            #expect(e.daily?["status"].string == "sent")
        }
    }

    @Test func consistentDoseTimingDisablesThePreDoseReminder() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let a = try adaptivePerson(tdb, db)
            // Three doses of the test step, each taken within five minutes of its time.
            for d in 1...3 {
                try db.execute("""
                    insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at)
                    values (\(a.user), 'step-1', \(instant("2026-02-0\(d)T08:00:00Z")), \(instant("2026-02-0\(d)T08:04:00Z")))
                    """)
            }
            func dose(_ at: String) throws -> UUID {
                try db.query("""
                    insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
                    values (\(a.user), 'once', 'dose', \(instant(at)), 'test_step', 'step-1') returning id
                    """).first!["id"].uuid!
            }
            let fourth = try dose("2026-02-04T08:00:00Z")
            _ = a.worker.run(now: instant("2026-02-04T07:30:00Z")) { $0.phases = [.reminders, .deliver] }
            let skipped = try db.query("select status, skip_reason from notification_queue where reminder_id = \(fourth)").first
            #expect(skipped?["status"].string == "skipped")
            #expect(skipped?["skip_reason"].string == "adaptive_frequency")
            // The fourth dose is taken 90 minutes late: the fifth dose's reminder is back.
            try db.execute("""
                insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at)
                values (\(a.user), 'step-1', \(instant("2026-02-04T08:00:00Z")), \(instant("2026-02-04T09:30:00Z")))
                """)
            let fifth = try dose("2026-02-05T08:00:00Z")
            _ = a.worker.run(now: instant("2026-02-05T07:30:00Z")) { $0.phases = [.reminders, .deliver] }
            #expect(try db.query("select status from notification_queue where reminder_id = \(fifth)").first?["status"].string == "sent")
            // Without adaptive frequency every dose reminder goes.
            try db.execute("update user_profiles set adaptive_frequency_enabled = false where user_id = \(a.user)")
            try db.execute("insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at) values (\(a.user), 'step-1', \(instant("2026-02-05T08:00:00Z")), \(instant("2026-02-05T08:00:00Z")))")
            try db.execute("insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at) values (\(a.user), 'step-1', \(instant("2026-02-06T08:00:00Z")), \(instant("2026-02-06T08:00:00Z")))")
            let seventh = try dose("2026-02-07T08:00:00Z")
            _ = a.worker.run(now: instant("2026-02-07T07:30:00Z")) { $0.phases = [.reminders, .deliver] }
            #expect(try db.query("select status from notification_queue where reminder_id = \(seventh)").first?["status"].string == "sent")
        }
    }
}

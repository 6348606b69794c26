import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// Each reminder type comes due at its local instant, across a daylight-saving change; the type is a
/// closed vocabulary; a reminder at no real instant is skipped without holding back the others.
/// End to end on a real PostgreSQL.
@Suite struct ReminderTimingPassTests {
    func reminderRows(_ db: PGConnection) throws -> PGResult {
        try db.query("""
            select id, reminder_id, status, skip_reason, scheduled_at, payload->>'reminder_type' as type,
                   payload->>'dose_at' as dose_at, payload->>'washout_event' as washout_event,
                   related_entity_type, related_entity_id, severity
              from notification_queue where kind = 'reminder' order by scheduled_at, id
            """)
    }

    @Test func everyTypeIsDueAtItsLocalInstantAcrossSpringForward() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            // New York; 2026-03-08 02:00 EST → 03:00 EDT at 07:00Z.
            let p = try f.profile(timezone: "America/New_York")
            func reminder(_ sql: SQL) throws -> UUID { try db.query(sql).first!["id"].uuid! }
            let daily = try reminder("""
                insert into reminders (user_id, schedule, reminder_type, local_time, last_enqueued_for)
                values (\(p), 'daily', 'daily', '09:00', '2026-03-06') returning id
                """)
            // A dose at 03:15 EDT (07:15Z) of test step "step-1": reminded 30 minutes of elapsed time before.
            let dose = try reminder("""
                insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
                values (\(p), 'once', 'dose', '2026-03-08T07:15:00Z', 'test_step', 'step-1') returning id
                """)
            // A daily dose at 03:15 local: on the 8th that is 07:15Z (EDT), the day before 08:15Z (EST).
            let dailyDose = try reminder("""
                insert into reminders (user_id, schedule, reminder_type, local_time, last_enqueued_for)
                values (\(p), 'daily', 'dose', '03:15', '2026-03-06') returning id
                """)
            let washout = try reminder("""
                insert into reminders (user_id, schedule, reminder_type, at, ends_at, related_entity_type, related_entity_id)
                values (\(p), 'once', 'washout', '2026-03-08T12:00:00Z', '2026-03-11T12:00:00Z', 'washout', 'w-1') returning id
                """)
            let testStart = try reminder("""
                insert into reminders (user_id, schedule, reminder_type, at, related_entity_type, related_entity_id)
                values (\(p), 'once', 'test_start', '2026-03-08T14:00:00Z', 'test_step', 'step-2') returning id
                """)
            let worker = Worker(url: tdb.url)
            func pass(_ at: String) { _ = worker.run(now: instant(at)) { $0.phases = [.reminders] } }
            func scheduled(_ reminder: UUID) throws -> [Date] {
                try db.query("select scheduled_at from notification_queue where reminder_id = \(reminder) order by scheduled_at")
                    .compactMap { $0["scheduled_at"].date }
            }

            // The 7th (EST): the daily dose at 03:15 EST = 08:15Z, reminded at 07:45Z.
            pass("2026-03-07T07:44:00Z")
            #expect(try scheduled(dailyDose).isEmpty)
            pass("2026-03-07T07:45:00Z")
            #expect(try scheduled(dailyDose) == [instant("2026-03-07T07:45:00Z")])
            // 09:00 EST = 14:00Z.
            pass("2026-03-07T13:59:00Z")
            #expect(try scheduled(daily).isEmpty)
            pass("2026-03-07T14:00:00Z")
            #expect(try scheduled(daily) == [instant("2026-03-07T14:00:00Z")])

            // The 8th: the one-off dose (07:15Z) and the daily dose (03:15 EDT = 07:15Z) both at 06:45Z,
            // which is 01:45 EST on the wall clock: thirty minutes of elapsed time, not of wall time.
            pass("2026-03-08T06:44:00Z")
            #expect(try scheduled(dose).isEmpty)
            #expect(try scheduled(dailyDose).count == 1)
            pass("2026-03-08T06:45:00Z")
            #expect(try scheduled(dose) == [instant("2026-03-08T06:45:00Z")])
            #expect(try scheduled(dailyDose).last == instant("2026-03-08T06:45:00Z"))
            // 09:00 EDT = 13:00Z, an hour earlier in UTC than the day before.
            pass("2026-03-08T12:59:00Z")
            #expect(try scheduled(daily).count == 1)
            #expect(try scheduled(washout) == [instant("2026-03-08T12:00:00Z")])
            pass("2026-03-08T13:00:00Z")
            #expect(try scheduled(daily).last == instant("2026-03-08T13:00:00Z"))
            #expect(try scheduled(testStart).isEmpty)
            pass("2026-03-08T14:00:00Z")
            #expect(try scheduled(testStart) == [instant("2026-03-08T14:00:00Z")])
            // The washout's end, three days later; nothing repeats.
            pass("2026-03-11T11:59:00Z")
            #expect(try scheduled(washout).count == 1)
            pass("2026-03-11T12:00:00Z")
            pass("2026-03-11T12:05:00Z")
            #expect(try scheduled(washout) == [instant("2026-03-08T12:00:00Z"), instant("2026-03-11T12:00:00Z")])
            #expect(try scheduled(dose).count == 1)
            #expect(try scheduled(testStart).count == 1)

            let rows = try reminderRows(db)
            let doseRow = try #require(rows.first { $0["reminder_id"].uuid == dose })
            #expect(doseRow["type"].string == "dose")
            #expect(doseRow["dose_at"].string.flatMap(ISO8601.parse) == instant("2026-03-08T07:15:00Z"))
            #expect(doseRow["related_entity_type"].string == "test_step")
            #expect(doseRow["related_entity_id"].string == "step-1")
            #expect(Set(rows.filter { $0["reminder_id"].uuid == washout }.compactMap { $0["washout_event"].string }) == ["start", "end"])
            #expect(rows.filter { $0["reminder_id"].uuid == washout }.allSatisfy { $0["related_entity_id"].string == "w-1" })
            #expect(rows.first { $0["reminder_id"].uuid == testStart }?["type"].string == "test_start")
        }
    }

    @Test func theTypeIsAClosedVocabulary() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let p = try Fixtures(db: db).profile()
            #expect(throws: (any Error).self) {
                try db.execute("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'daily_log', now())")
            }
            // Washouts and test starts are instants, not daily.
            #expect(throws: (any Error).self) {
                try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'washout', '09:00')")
            }
            // A daily reminder may leave its time to the profile.
            try db.execute("update user_profiles set daily_reminder_time = '20:00' where user_id = \(p)")
            try db.execute("insert into reminders (user_id, schedule, reminder_type) values (\(p), 'daily', 'daily')")
            _ = Worker(url: tdb.url).run(now: instant("2026-01-25T20:00:00Z")) { $0.phases = [.reminders] }
            #expect(try db.query("select scheduled_at from notification_queue").first?["scheduled_at"].date == instant("2026-01-25T20:00:00Z"))
        }
    }

    /// A reminder whose time is no real instant (-infinity, a BC date, a dose whose reminder falls before
    /// year 1) is skipped: written as it is, PostgreSQL refused the insert and rolled back the reminders of
    /// everyone, every pass. The others are enqueued.
    @Test func aReminderAtMinusInfinityOrBCIsSkippedAndTheOthersEnqueued() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            func reminder(_ type: String, _ at: String, endsAt: String? = nil) throws -> UUID {
                try db.query("""
                    insert into reminders (user_id, schedule, reminder_type, at, ends_at)
                    values (\(p), 'once', \(type), \(at)::timestamptz, \(endsAt)::timestamptz) returning id
                    """).first!["id"].uuid!
            }
            let bad = [
                try reminder("test_start", "-infinity"),
                try reminder("dose", "-infinity"),                                  // 30 minutes before: year 0
                try reminder("test_start", "0044-03-15 12:00:00+00 BC"),
                try reminder("dose", "0001-01-01 00:10:00+00"),                      // reminded in year 0
                try reminder("washout", "-infinity", endsAt: "0100-06-01 00:00:00+00 BC"),
            ]
            let good = try reminder("test_start", "2026-01-25T11:00:00Z")
            let (summary, code) = Worker(url: tdb.url).run(now: instant("2026-01-25T12:00:00Z")) { $0.phases = [.reminders] }
            #expect(code == .ok)
            #expect(summary.phaseErrors.isEmpty, "\(summary.phaseErrors)")
            #expect(summary.generated[.reminders] == 1)
            #expect(try db.query("select reminder_id from notification_queue").map { $0["reminder_id"].uuid } == [good])
            // Left as they were, to be corrected: not marked enqueued.
            #expect(try f.count("select count(*)::int from reminders where id = any(\(bad)::uuid[]) and enqueued_at is null") == bad.count)
            #expect(try f.count("select count(*)::int from reminders where id = \(good) and enqueued_at is not null") == 1)
        }
    }
}

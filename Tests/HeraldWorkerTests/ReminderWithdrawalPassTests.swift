import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Logging
@testable import HeraldWorker
import Testing

/// Cancelling, disabling, deleting or moving a reminder withdraws its unsent rows, also when the app
/// edits it while the reminders phase is writing.
/// End to end on a real PostgreSQL.
@Suite struct ReminderWithdrawalPassTests: ReminderPassSuite {
    @Test func cancellingDisablingDeletingOrReschedulingWithdrawsUnsentRows() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile(push: true, quiet: ("22:00", "07:00"), action: "defer")
        try f.token(p)
        func once(_ type: String, _ at: String) throws -> UUID {
            try db.query("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', \(type), \(instant(at))) returning id")
                .first!["id"].uuid!
        }
        let cancelled = try once("test_start", "2026-01-25T23:00:00Z")
        let disabled = try once("test_start", "2026-01-25T23:10:00Z")
        let deleted = try once("washout", "2026-01-25T23:20:00Z")
        let moved = try once("test_start", "2026-01-25T23:30:00Z")
        let delivered = try once("daily", "2026-01-25T21:00:00Z")
        let worker = Worker(url: tdb.url, settings: logAll)
        // 21:00: the daily one goes out.
        _ = worker.run(now: instant("2026-01-25T21:00:00Z")) { $0.phases = [.reminders, .deliver] }
        // 23:40, inside quiet hours: the other four are enqueued and deferred to 07:00 — waiting, not sent.
        _ = worker.run(now: instant("2026-01-25T23:40:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try f.count("select count(*)::int from notification_queue where status = 'pending' and run_after = \(instant("2026-01-26T07:00:00Z"))") == 4)

        try db.execute("update reminders set cancelled_at = now() where id = \(cancelled)")
        try db.execute("update reminders set enabled = false where id = \(disabled)")
        try db.execute("delete from reminders where id = \(deleted)")
        try db.execute("update reminders set at = \(instant("2026-01-26T09:00:00Z")) where id = \(moved)")
        try db.execute("update reminders set enabled = false where id = \(delivered)")
        let rows = try db.query("""
            select reminder_id, status, skip_reason, (select string_agg(e.event || ':' || coalesce(e.details->>'reason', ''), ',')
                                                       from notification_events e where e.queue_id = q.id and e.event = 'cancelled') as ev
              from notification_queue q
            """)
        func row(_ r: UUID) -> PGRow? { rows.first { $0["reminder_id"].uuid == r } }
        for (r, why) in [(cancelled, "reminder cancelled"), (disabled, "reminder disabled"), (deleted, "reminder deleted"),
                         (moved, "reminder rescheduled")] {
            #expect(row(r)?["status"].string == "skipped")
            #expect(row(r)?["skip_reason"].string == "cancelled")
            #expect(row(r)?["ev"].string == "cancelled:\(why)")
        }
        // What was sent stays sent.
        #expect(row(delivered)?["status"].string == "sent")
        // The rescheduled one is enqueued again at its new time, once.
        _ = worker.run(now: instant("2026-01-26T09:00:00Z")) { $0.phases = [.reminders, .deliver] }
        _ = worker.run(now: instant("2026-01-26T09:05:00Z")) { $0.phases = [.reminders, .deliver] }
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved) and status = 'sent'") == 1)
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved)") == 2)
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id in (\(cancelled), \(disabled), \(deleted)) and status <> 'skipped'") == 0)
    }
    }

    /// The app edits a reminder after the phase read it and before it wrote: the phase's marks overwrote
    /// the trigger's reset and its rows were enqueued for a reminder cancelled, disabled, deleted or
    /// moved (the trigger had nothing to withdraw yet). Now only reminders still as read are acted on.
    @Test func anEditBetweenTheReadAndTheWriteIsNotOverwritten() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let app = try tdb.connect()
        let f = Fixtures(db: db)
        let p = try f.profile()
        func reminder(_ sql: SQL) throws -> UUID { try db.query(sql).first!["id"].uuid! }
        func once(_ at: String) throws -> UUID {
            try reminder("insert into reminders (user_id, schedule, reminder_type, at) values (\(p), 'once', 'test_start', \(instant(at))) returning id")
        }
        let kept = try once("2026-01-25T11:00:00Z")
        let cancelled = try once("2026-01-25T11:00:00Z")
        let deleted = try once("2026-01-25T11:00:00Z")
        let moved = try once("2026-01-25T11:00:00Z")
        let disabledDaily = try reminder("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '09:00') returning id")
        let retimedDaily = try reminder("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '10:00') returning id")

        let now = instant("2026-01-25T12:00:00Z")
        let phase = ReminderGenerator(db: db, passId: "test-pass", now: now, logger: Logger(label: "test"))
        let plan = try phase.plan()
        #expect(plan.due.count == 6)
        // The app, between the read and the write.
        try app.execute("update reminders set cancelled_at = now() where id = \(cancelled)")
        try app.execute("delete from reminders where id = \(deleted)")
        try app.execute("update reminders set at = \(instant("2026-01-25T18:00:00Z")) where id = \(moved)")
        try app.execute("update reminders set enabled = false where id = \(disabledDaily)")
        try app.execute("update reminders set local_time = '13:00' where id = \(retimedDaily)")
        #expect(try phase.write(plan) == 1)

        #expect(try db.query("select reminder_id from notification_queue").map { $0["reminder_id"].uuid } == [kept])
        let marks = try db.query("select id, enqueued_at, last_enqueued_for::text as last from reminders")
        func mark(_ id: UUID) -> PGRow? { marks.first { $0["id"].uuid == id } }
        #expect(mark(kept)?["enqueued_at"].date != nil)
        for id in [cancelled, moved] { #expect(mark(id)?["enqueued_at"].date == nil) }
        for id in [disabledDaily, retimedDaily] { #expect(mark(id)?["last"].string == nil) }
        // The moved one and the retimed one come due at their new times, once each.
        let worker = Worker(url: tdb.url)
        _ = worker.run(now: instant("2026-01-25T13:00:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(retimedDaily) and scheduled_at = \(instant("2026-01-25T13:00:00Z"))") == 1)
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved)") == 0)
        _ = worker.run(now: instant("2026-01-25T18:00:00Z")) { $0.phases = [.reminders] }
        _ = worker.run(now: instant("2026-01-25T18:05:00Z")) { $0.phases = [.reminders] }
        #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(moved) and scheduled_at = \(instant("2026-01-25T18:00:00Z"))") == 1)
        #expect(try f.count("select count(*)::int from notification_queue") == 3)
    }
    }
}

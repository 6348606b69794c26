import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Reminders that are over: a make-and-cancel loop is held to the cap of 200 a day, the pass deletes
/// reminders cancelled or finished past the retention, and the reminders phase reads only the active
/// ones through their partial index.
@Suite struct ReminderPruningTests {
    typealias RPC = ReminderRPCTests

    /// The cap of 200 counts every reminder made in the last 24 hours, cancelled or not: an app user
    /// who makes a reminder and cancels it, over and over, is refused at the 201st.
    @Test func aMakeAndCancelLoopIsRefusedPastItsCap() throws {
        try SecurityTests.supabase { tdb, db in
        let a = UUID()
        try db.execute("insert into user_profiles (user_id) values (\(a))")
        var made = 0
        for _ in 1...250 {
            guard let id = try? RPC.call(db, as: a, "select schedule_reminder('daily', 'daily', '09:00')")["id"]?.stringValue
            else { break }
            made += 1
            _ = try RPC.call(db, as: a, "select cancel_reminder(\(id)::uuid)")
        }
        #expect(made == 200, "the loop is stopped at the cap")
        RPC.refused(db, as: a, "select schedule_reminder('daily', 'daily', '09:00')", "validation_error", naming: "at most 200")
        // A day later the cancelled ones no longer count.
        try db.execute("update reminders set created_at = created_at - interval '25 hours'")
        #expect(try RPC.call(db, as: a, "select schedule_reminder('daily', 'daily', '09:00')")["status"]?.stringValue == "scheduled")
    }
    }

    /// A real pass deletes reminders cancelled, and one-off reminders finished, more than the retention
    /// (HERALD_RETENTION_DAYS, 30) ago; it keeps the active ones, those cancelled lately, and a washout
    /// whose end is still to come.
    @Test func thePassPrunesRemindersCancelledOrFinishedLongAgo() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        let a = try f.profile()
        func reminder(_ columns: SQL) throws -> UUID {
            try db.query("insert into reminders " + columns + " returning id").first!["id"].uuid!
        }
        let active = try reminder("(user_id, schedule, reminder_type, local_time) values (\(a), 'daily', 'daily', '09:00')")
        let oldCancel = try reminder("""
            (user_id, schedule, reminder_type, local_time, cancelled_at) values (\(a), 'daily', 'daily', '09:00', now() - interval '40 days')
            """)
        let newCancel = try reminder("""
            (user_id, schedule, reminder_type, local_time, cancelled_at) values (\(a), 'daily', 'daily', '09:00', now() - interval '2 days')
            """)
        let oldOnce = try reminder("""
            (user_id, schedule, reminder_type, at, enqueued_at) values (\(a), 'once', 'test_start', now() - interval '41 days', now() - interval '41 days')
            """)
        let washout = try reminder("""
            (user_id, schedule, reminder_type, at, enqueued_at, ends_at)
            values (\(a), 'once', 'washout', now() - interval '41 days', now() - interval '41 days', now() + interval '3 days')
            """)
        let (summary, code) = Worker(url: tdb.url).run()
        #expect(code == .ok)
        #expect(summary.generated[.remindersPruned] == 2)
        let left = Set(try db.query("select id from reminders").compactMap { $0["id"].uuid })
        #expect(left == [active, newCancel, washout])
        #expect(!left.contains(oldCancel) && !left.contains(oldOnce))
    }
    }

    /// With 2,000 cancelled reminders beside a few active ones, the reminders phase's query reads the
    /// active ones through `reminders_active` and never scans the table.
    @Test func theDueQueryUsesThePartialIndexOfActiveReminders() throws {
        try withTestDatabase { tdb in
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        for _ in 0..<20 { try f.profile() }
        let a = try f.profile()
        try db.execute("""
            insert into reminders (user_id, schedule, reminder_type, local_time, cancelled_at)
            select \(a), 'daily', 'daily', '09:00', now() from generate_series(1, 2000)
            """)
        try db.execute("""
            insert into reminders (user_id, schedule, reminder_type, local_time)
            select \(a), 'daily', 'daily', '09:00' from generate_series(1, 5)
            """)
        try db.execute("analyze reminders")
        let query = ReminderGenerator.dueRemindersQuery(now: Date())
        let plan = try db.query("explain " + query).map { $0[0].string ?? "" }.joined(separator: "\n")
        #expect(plan.contains("reminders_active"), "plan:\n\(plan)")
        #expect(!plan.contains("Seq Scan on reminders"), "plan:\n\(plan)")
        #expect(try db.query(query).count == 5)

        // A follower's run at a one-off reminder's instant reads the one-off reminders only.
        try db.execute("insert into reminders (user_id, schedule, reminder_type, at) values (\(a), 'once', 'test_start', now())")
        let oneOff = ReminderGenerator.dueRemindersQuery(now: Date().addingTimeInterval(1), oneOffOnly: true)
        #expect(try db.query(oneOff).map { $0["schedule"].string } == ["once"])
        #expect(try db.query(ReminderGenerator.dueRemindersQuery(now: Date().addingTimeInterval(1))).count == 6)
    }
    }
}

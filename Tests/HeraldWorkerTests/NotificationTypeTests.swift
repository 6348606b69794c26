import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Notification types are data (`notification_types`): a queue row names one, an app adds its own with
/// one insert of its name, and a row of a type that is not there is refused when it is written.
@Suite struct NotificationTypeTests {
    /// herald's own kinds and a backend's five are there after `herald migrate`, with the rate limits
    /// the code's built-in table gives them.
    @Test func migrateWritesHeraldsKindsAndTheBackendsFive() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let types = try QueueStore(db: db, passId: "t").loadTypes()
            #expect(Set(types.byName.keys) == Set(NotificationTypes.builtIn.byName.keys))
            #expect(Set(Kind.allCases.map(\.rawValue)).isSubset(of: Set(types.byName.keys)))
            #expect(types == NotificationTypes.builtIn)
        }
    }

    /// A row of an unknown type is refused at insert (SQLSTATE 23503), with a message that names the
    /// type; nothing is written.
    @Test func aRowOfAnUnknownTypeIsRefusedWhenItIsWritten() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            #expect {
                try f.enqueue(to: p, kind: "appointment", at: Date())
            } throws: { error in
                guard let error = error as? PGError else { return false }
                return error.sqlState == "23503" && error.message.contains("\"appointment\"")
            }
            #expect(try f.count("select count(*)::int from notification_queue") == 0)
            // Changing a row's type to an unknown one is refused the same way.
            let id = try f.enqueue(to: p, kind: "message", at: Date())
            let refused = #expect(throws: PGError.self) { try db.execute("update notification_queue set kind = 'nope' where id = \(id)") }
            #expect(refused?.sqlState == "23503" && refused?.message.contains("\"nope\"") == true)
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'message'") == 1)
        }
    }

    /// A row whose type changes takes the marks an insert of the new type gives it: the start of a
    /// follow-up chain and quiet once read. A step of a chain (`follow_up_of`) never starts one.
    @Test func aRowWhoseTypeChangesTakesTheNewTypesMarks() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            try db.execute("""
                insert into notification_types (type, quiet_once_read, follow_up)
                values ('checkin', true, \(FollowUpPolicyTests.policy([FollowUpPolicyTests.step()]))::jsonb)
                """)
            let p = try f.profile()
            let id = try f.enqueue(to: p, kind: "message", at: Date())
            let step = try f.enqueue(to: p, kind: "message", at: Date())
            try db.execute("update notification_queue set follow_up_of = \(id) where id = \(step)")
            func marks(_ row: UUID) throws -> String {
                try db.query("""
                    select coalesce(follows_up, false)::text || ' ' || quiet_once_read::text as marks
                      from notification_queue where id = \(row)
                    """).first?["marks"].string ?? "none"
            }
            #expect(try marks(id) == "false false")

            try db.execute("update notification_queue set kind = 'checkin' where id = any(\([id, step])::uuid[])")
            #expect(try marks(id) == "true true")
            #expect(try marks(step) == "false true")
        }
    }

    /// The queue has no BEFORE UPDATE row trigger: with one, PostgreSQL locks every row a claim or a
    /// record updates before updating it (a WAL record a row, twice a notification), whatever the
    /// trigger's columns or WHEN clause. The type check of an update and the lease guard run after the
    /// write.
    @Test func noTriggerRunsBeforeAnUpdateOfTheQueue() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let before = try db.query("""
                select tgname from pg_trigger
                 where tgrelid = 'notification_queue'::regclass and not tgisinternal
                   and tgtype & 1 = 1 and tgtype & 2 = 2 and tgtype & 16 = 16
                """).compactMap { $0["tgname"].string }
            #expect(before == [])
            let after = Set(try db.query("""
                select tgname from pg_trigger
                 where tgrelid = 'notification_queue'::regclass and not tgisinternal and tgtype & 16 = 16
                """).compactMap { $0["tgname"].string })
            #expect(after.isSuperset(of: ["herald_queue_kind_changed", "herald_queue_lease_held"]))
        }
    }

    /// An app adds a type with one insert of its name; its rows are accepted, take the type's priority
    /// when they give none, and are delivered.
    @Test func anAppRegisteredTypeIsDelivered() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            try db.execute("insert into notification_types (type, priority) values ('appointment', 'high')")
            let p = try f.profile()
            let at = Date().addingTimeInterval(-5)
            let id = try db.query("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, scheduled_at, run_after)
                values (\(p), 'in_app', 'appointment', '{"title":"Tomorrow 9:00","body":"Dr. Lee"}', \(at), \(at))
                returning id, priority
                """).first!
            #expect(id["priority"].string == "high")
            let (summary, code) = Worker(url: tdb.url).run(now: Date())
            #expect(code == .ok)
            #expect(summary.sent == 1)
            #expect(try f.row(id["id"].uuid!)["status"].string == "sent")
            #expect(try f.count("select count(*)::int from inbox where type = 'appointment'") == 1)
        }
    }

    /// A type's slug is checked: not lowercase letters, digits and `_`, starting with a letter, up to 63.
    @Test(arguments: ["Appointment", "1st", "has space", "dash-ed", "", String(repeating: "a", count: 64)])
    func aTypeThatIsNotASlugIsRefused(_ name: String) throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            #expect(throws: PGError.self) { try db.execute("insert into notification_types (type) values (\(name))") }
        }
    }

    /// The rate limits come from the table: a backend's type has no daily cap (twelve messages in a
    /// minute all go), and the cap a team sets on its type holds the eleventh back.
    @Test func rateLimitsAreTheTypes() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let a = try f.profile(), b = try f.profile()
            try db.execute("insert into notification_types (type, daily_cap) values ('digest', 10)")
            let at = instant("2026-01-25T12:00:00Z")
            for _ in 0..<12 { try f.enqueue(to: a, kind: "message", at: at) }
            for _ in 0..<12 { try f.enqueue(to: b, kind: "digest", at: at) }
            let (summary, code) = Worker(url: tdb.url).run(now: at.addingTimeInterval(60))
            #expect(code == .ok)
            #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id = \(a) and status = 'sent'") == 12)
            #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id = \(b) and status = 'sent'") == 10)
            #expect(summary.sent == 22)
        }
    }

    /// A critical type goes through quiet hours at `critical_only`, and its rows are not held back by
    /// the rate limits; the same row of an ordinary type waits for the window's end.
    @Test func aCriticalTypeGoesThroughQuietHoursAtCriticalOnly() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            try db.execute("insert into notification_types (type, critical) values ('fall_detected', true)")
            let p = try f.profile(quiet: ("22:00", "07:00"), level: "critical_only", action: "defer")
            let at = instant("2026-01-25T02:00:00Z")    // 02:00 in UTC, the profile's zone: inside the window
            let critical = try f.enqueue(to: p, kind: "fall_detected", at: at)
            let ordinary = try f.enqueue(to: p, kind: "message", at: at)
            _ = Worker(url: tdb.url).run(now: at.addingTimeInterval(60))
            #expect(try f.row(critical)["status"].string == "sent")
            #expect(try f.row(ordinary)["status"].string == "pending")
        }
    }
}

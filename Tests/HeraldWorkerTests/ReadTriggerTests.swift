import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A read of a notification whose type uses none of follow-ups and quiet once read costs what a read
/// cost before them: the entry carries what its notification uses (`inbox.follows_up`,
/// `inbox.quiet_once_read`, written with it) and the read triggers' WHEN clauses read it, so the
/// server calls neither the follow-up cancel nor the read-elsewhere withdrawal — even while other
/// types use both.
@Suite struct ReadTriggerTests {
    /// The calls of the two read functions while the entry of the queue row `id` is read.
    static func readCalls(_ tdb: TestDB, entryOf id: UUID) throws -> Int {
        try tdb.functionCalls(["herald_follow_up_read_cancel", "herald_read_elsewhere"]) { tx in
            try tx.execute("update inbox set is_read = true, read_at = now() where queue_id = \(id)")
        }
    }

    @Test func aReadOfATypeUsingNoneCallsNoReadFunctionWhileOtherTypesUseThem() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let person = try Fixtures(db: db).profile()
            try db.execute("""
                insert into notification_types (type, quiet_once_read, follow_up)
                values ('watched', true, '{"steps": [{"after_seconds": 600, "channels": ["in_app"], "to": "same", "until": "read"}]}')
                """)
            func row(_ kind: String) throws -> UUID {
                try #require(try db.query("""
                    insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload)
                    values (\(person), \(person), 'push', \(kind), '{"title":"Hello"}'::jsonb) returning id
                    """).first?["id"].uuid)
            }
            let plain = try row("system"), watched = try row("watched")
            #expect(try db.query("select follows_up, quiet_once_read from inbox where queue_id = \(plain)")
                .first.map { [$0["follows_up"].bool, $0["quiet_once_read"].bool] } == [false, false])
            #expect(try Self.readCalls(tdb, entryOf: plain) == 0)
            #expect(try Self.readCalls(tdb, entryOf: watched) == 2, "both run for a type that uses both")
        }
    }
}

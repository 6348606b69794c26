import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A read of a notification whose type uses none of follow-ups, quiet once read and digests costs what
/// a read cost before them: the entry carries whether its read does more (`inbox.read_effects`,
/// written with it), and the one read trigger's WHEN clause reads that column alone, so the server calls
/// no function for it — even while other types use all three. An entry that does use them calls the
/// trigger once, which calls what the entry uses.
@Suite struct ReadTriggerTests {
    /// The calls of the read trigger's functions while the entry of the queue row `id` is read.
    static func readCalls(_ tdb: TestDB, entryOf id: UUID) throws -> Int {
        try tdb.functionCalls(["herald_inbox_read", "herald_follow_up_cancel", "herald_withdraw_read_copies"]) { tx in
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
            func flags(_ id: UUID) throws -> [Bool?]? {
                try db.query("select follows_up, quiet_once_read, read_effects from inbox where queue_id = \(id)")
                    .first.map { [$0["follows_up"].bool, $0["quiet_once_read"].bool, $0["read_effects"].bool] }
            }
            #expect(try flags(plain) == [false, false, false])
            #expect(try flags(watched) == [true, true, true])
            #expect(try Self.readCalls(tdb, entryOf: plain) == 0)
            #expect(try Self.readCalls(tdb, entryOf: watched) == 3,
                    "the one trigger, and the cancel and the withdrawal it calls")
        }
    }
}

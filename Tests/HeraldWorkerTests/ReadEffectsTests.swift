import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A read of a notification whose type uses none of follow-ups, quiet once read and digests costs what
/// a read cost before them: nothing fires on an update of `inbox`, and the app's read and action
/// (`mark_notifications_read`, `record_notification_action`) call what a read does beyond marking
/// (`herald_inbox_read_effects`) only for the entries whose notification uses it
/// (`inbox.read_effects`, written with the entry), in the read's own transaction.
@Suite struct ReadEffectsTests {
    /// The calls of the read's effect functions while the person reads the entry of queue row `id`
    /// through the app's RPC.
    static func readCalls(_ tdb: TestDB, _ person: UUID, entriesOf ids: [UUID]) throws -> Int {
        try tdb.functionCalls(["herald_inbox_read_effects", "herald_follow_up_cancel", "herald_withdraw_read_copies"]) { tx in
            try SecurityTests.act(tx, as: "authenticated", person, claimsJSON: true)
            let answer = try tx.query("select mark_notifications_read(\(ids)::uuid[])::text as a").first?["a"].string
            try SecurityTests.owner(tx)
            #expect(answer?.contains(#""updated_count": \#(ids.count)"#) == true, "\(answer ?? "no answer")")
        }
    }

    @Test func aReadOfATypeUsingNoneCallsNoReadFunctionWhileOtherTypesUseThem() throws {
        try SecurityTests.supabase { tdb, db in
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
            let plainToo = try row("system"), watchedToo = try row("watched")
            func flags(_ id: UUID) throws -> [Bool?]? {
                try db.query("select follows_up, quiet_once_read, read_effects from inbox where queue_id = \(id)")
                    .first.map { [$0["follows_up"].bool, $0["quiet_once_read"].bool, $0["read_effects"].bool] }
            }
            #expect(try flags(plain) == [false, false, false])
            #expect(try flags(watched) == [true, true, true])
            #expect(try Self.readCalls(tdb, person, entriesOf: [plain]) == 0)
            #expect(try Self.readCalls(tdb, person, entriesOf: [watched]) == 3,
                    "what a read does, and the cancel and the withdrawal it calls")
            #expect(try Self.readCalls(tdb, person, entriesOf: [plainToo, watchedToo]) == 3,
                    "one read of both: what the watched entry's read does, once")
            #expect(try Fixtures(db: db).count("""
                select count(*)::int from pg_trigger
                 where tgrelid = 'inbox'::regclass and not tgisinternal and tgtype & 16 = 16
                """) == 0, "no trigger on an update of inbox")
        }
    }
}

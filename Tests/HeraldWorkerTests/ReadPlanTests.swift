import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The app's read and action (`mark_notifications_read`, `record_notification_action`) find the entry
/// a notification id names by the list's key, whatever the statistics say. Taken while each person had
/// one entry, statistics price a person's entries as one; plans resting on them walked all of a
/// person's entries for each id (an action on one of 3,000 entries: 78 ms).
@Suite struct ReadPlanTests {
    /// Person `n` of `ListPlanTests.sentAfterTheStatistics` (an even one's notification is in a group of
    /// its own) with 3,000 delivered entries more, written after the statistics; one of them, the newest
    /// by id.
    static func aPersonWithManyEntries(_ db: PGConnection, _ n: Int = 1) throws -> (person: UUID, entry: UUID) {
        try ListPlanTests.sentAfterTheStatistics(db)
        let person = try ListPlanTests.person(db, n)
        try db.execute("""
            insert into inbox (user_id, type, title, body, notification_key, delivered_at)
            select \(person), 'system', 'Hello', 'Entry ' || g, 'many-' || g, now() from generate_series(1, 3000) g
            """)
        let entry = try #require(try db.query("""
            select id from inbox where user_id = \(person) order by id desc limit 1
            """).first?["id"].uuid)
        return (person, entry)
    }

    @Test func aReadOfOneEntryAmongThousandsReadsItByItsKey() throws {
        try SecurityTests.supabase { _, db in
            let (person, entry) = try Self.aPersonWithManyEntries(db)
            let other = try ListPlanTests.person(db, 2)
            try SecurityTests.act(db, as: "authenticated", other, claimsJSON: true)
            _ = try db.query("select mark_notifications_read('{}'::uuid[])")  // compiles the function: not measured
            try SecurityTests.act(db, as: "authenticated", person, claimsJSON: true)
            let blocks = try ListPlanTests.blocks(db, "select mark_notifications_read(\([entry])::uuid[])")
            try SecurityTests.owner(db)
            #expect(blocks < 100, "a read of one entry read \(blocks) blocks")
            #expect(try db.query("select is_read from inbox where id = \(entry)").first?["is_read"].bool == true)
        }
    }

    /// A notification id that names a later row of a group (not the row its entry was written for)
    /// finds the group's entry by the person and the group together.
    @Test func aReadByALaterRowOfAGroupFindsTheGroupsEntryByItsKey() throws {
        try SecurityTests.supabase { _, db in
            let (person, _) = try Self.aPersonWithManyEntries(db, 2)
            let later = try #require(try db.query("""
                insert into notification_queue (recipient_user_id, channel, kind, payload, notification_group)
                values (\(person), 'in_app', 'system', '{"title":"Hello again"}', 'group-2') returning id
                """).first?["id"].uuid)
            let other = try ListPlanTests.person(db, 1)
            try SecurityTests.act(db, as: "authenticated", other, claimsJSON: true)
            _ = try db.query("select mark_notifications_read('{}'::uuid[])")  // compiles the function: not measured
            try SecurityTests.act(db, as: "authenticated", person, claimsJSON: true)
            let blocks = try ListPlanTests.blocks(db, "select mark_notifications_read(\([later])::uuid[])")
            try SecurityTests.owner(db)
            #expect(blocks < 100, "a read by a group's later row read \(blocks) blocks")
            #expect(try db.query("""
                select is_read from inbox where user_id = \(person) and notification_key = 'group-2'
                """).first?["is_read"].bool == true)
        }
    }

    @Test func anActionOnOneEntryAmongThousandsReadsItByItsKey() throws {
        try SecurityTests.supabase { _, db in
            let (person, entry) = try Self.aPersonWithManyEntries(db)
            let other = try ListPlanTests.person(db, 2)
            let theirs = try #require(try db.query("select id from inbox where user_id = \(other)").first?["id"].uuid)
            try SecurityTests.act(db, as: "authenticated", other, claimsJSON: true)
            _ = try db.query("select record_notification_action(\(theirs), 'dismissed')")  // compiles it: not measured
            try SecurityTests.act(db, as: "authenticated", person, claimsJSON: true)
            let blocks = try ListPlanTests.blocks(db, "select record_notification_action(\(entry), 'opened')")
            try SecurityTests.owner(db)
            #expect(blocks < 150, "an action on one entry read \(blocks) blocks")
            #expect(try db.query("select action, is_read from inbox where id = \(entry)").first
                .map { [$0["action"].string, $0["is_read"].bool.map(String.init)] } == ["opened", "true"])
        }
    }
}

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
    /// Person 1 of `ListPlanTests.sentAfterTheStatistics` with 3,000 delivered entries more, written
    /// after the statistics; one of them, the newest by id.
    static func aPersonWithManyEntries(_ db: PGConnection) throws -> (person: UUID, entry: UUID) {
        try ListPlanTests.sentAfterTheStatistics(db)
        let person = try ListPlanTests.person(db, 1)
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

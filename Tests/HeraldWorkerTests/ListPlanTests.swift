import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The list (`herald_listed_entries`, under `get_notifications`) finds the sends of an entry not yet
/// marked delivered, the person's sent rows that are the entry's row or share its group, each by an
/// index of its own. Statistics taken before a burst of sends say hardly a row is sent; a plan resting
/// on them walked every sent row of everyone for each entry.
@Suite struct ListPlanTests {
    /// 5,000 people with a notification each, every other one in a group of its own, analyzed while
    /// nothing was sent, then all sent at once: the statistics say no row is sent.
    static func sentAfterTheStatistics(_ db: PGConnection) throws {
        try db.execute("alter table notification_queue set (autovacuum_enabled = false)")
        try db.execute("alter table inbox set (autovacuum_enabled = false)")
        try db.execute("""
            insert into user_profiles (user_id) select md5('list' || g)::uuid from generate_series(1, 5000) g
            """)
        try db.execute("""
            insert into notification_queue (recipient_user_id, channel, kind, payload, notification_group)
            select md5('list' || g)::uuid, 'in_app', 'system', '{"title":"Hello"}',
                   case when g % 2 = 0 then 'group-' || g end
              from generate_series(1, 5000) g
            """)
        try db.execute("analyze notification_queue")  // before the burst: nothing sent
        try db.execute("analyze inbox")
        try db.execute("update notification_queue set status = 'sent', sent_at = now()")
    }

    /// Person `n`'s id.
    static func person(_ db: PGConnection, _ n: Int) throws -> UUID {
        try #require(try db.query("select md5('list' || \(String(n)))::uuid as u").first?["u"].uuid)
    }

    /// The buffers the plan of `sql` read, with all it called.
    static func blocks(_ db: PGConnection, _ sql: SQL) throws -> Int {
        let answer = try #require(try db.query("explain (analyze, buffers, format json) " + sql).first?[0].string)
        let plan = try #require(JSONValue.parse(Data(answer.utf8)).arrayValue?.first?["Plan"])
        return (plan["Shared Hit Blocks"]?.intValue ?? 0) + (plan["Shared Read Blocks"]?.intValue ?? 0)
    }

    @Test func theListReadsAnEntrysSendsThroughTheirIndexesWhateverTheStatisticsSay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            try Self.sentAfterTheStatistics(db)
            // The first call of the session reads the catalog for the function; what is measured is a list.
            _ = try db.query("select count(*) from herald_listed_entries(md5('list3')::uuid)")
            for n in [1, 2] {  // an entry of its own row, and one of a group
                let uid = try Self.person(db, n)
                let blocks = try Self.blocks(db, "select * from herald_listed_entries(\(uid))")
                #expect(blocks < 100, "the list of one entry read \(blocks) blocks")
                #expect(try db.query("select count(*)::int as n from herald_listed_entries(\(uid))").first?["n"].int == 1)
            }
        }
    }

    /// An action's check that the entry was sent (`record_notification_action`, the same condition
    /// with an OR, in PL/pgSQL) stays off the terminal rows' index under the same statistics.
    @Test func anActionChecksAnEntrysSendsThroughTheirIndexesWhateverTheStatisticsSay() throws {
        try SecurityTests.supabase { _, db in
            try Self.sentAfterTheStatistics(db)
            for n in [3, 1, 2] {  // the first call of the session compiles the function: not measured
                let uid = try Self.person(db, n)
                let entry = try #require(try db.query("select id from inbox where user_id = \(uid)").first?["id"].uuid)
                try SecurityTests.act(db, as: "authenticated", uid, claimsJSON: true)
                let blocks = try Self.blocks(db, "select record_notification_action(\(entry), 'dismissed')")
                try SecurityTests.owner(db)
                if n != 3 { #expect(blocks < 150, "an action on one entry read \(blocks) blocks") }
                #expect(try db.query("select action from inbox where id = \(entry)").first?["action"].string == "dismissed")
            }
        }
    }
}

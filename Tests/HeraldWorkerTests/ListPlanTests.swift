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
    @Test func theListReadsAnEntrysSendsThroughTheirIndexesWhateverTheStatisticsSay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
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

            // The first call of the session reads the catalog for the function; what is measured is a list.
            _ = try db.query("select count(*) from herald_listed_entries(md5('list3')::uuid)")
            for person in [1, 2] {  // an entry of its own row, and one of a group
                let uid = try #require(try db.query("select md5('list' || \(String(person)))::uuid as u").first?["u"].uuid)
                let answer = try #require(try db.query("""
                    explain (analyze, buffers, format json) select * from herald_listed_entries(\(uid))
                    """).first?[0].string)
                let plan = try #require(JSONValue.parse(Data(answer.utf8)).arrayValue?.first?["Plan"])
                let blocks = (plan["Shared Hit Blocks"]?.intValue ?? 0) + (plan["Shared Read Blocks"]?.intValue ?? 0)
                #expect(blocks < 100, "the list of one entry read \(blocks) blocks")
                #expect(try db.query("select count(*)::int as n from herald_listed_entries(\(uid))").first?["n"].int == 1)
            }
        }
    }
}

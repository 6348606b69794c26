import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A push's badge counts the recipient's unread entries whose notification went out
/// (`herald_unread_entries`, read for each batch): it reads each entry's own queue rows, however many
/// rows were sent since the statistics were taken, so a burst's batches cost the same at its end as at
/// its start.
@Suite struct UnreadCountTests {
    /// 5,000 rows enqueued (each writes its entry) and analysed while all are pending, then 4,900 sent,
    /// as a burst leaves them before autovacuum comes: the count for 20 recipients, 10 sent and 10 not,
    /// is 1 for each sent one and none for the others, and reads a few pages per entry, not every sent
    /// row for each.
    @Test func theBadgeCountReadsEachEntrysOwnRowsWhateverTheStatisticsSay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            try db.execute("""
                insert into user_profiles (user_id, timezone) select md5('unread' || g)::uuid, 'UTC' from generate_series(1, 5000) g
                """)
            try db.execute("""
                insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after)
                select md5('unread' || g)::uuid, md5('unread' || g)::uuid, 'push', 'system',
                       jsonb_build_object('title', 'Hello', 'body', 'Row ' || g), now(), now()
                  from generate_series(1, 5000) g
                """)
            #expect(try Fixtures(db: db).count("select count(*)::int from inbox where not is_read and delivered_at is null") == 5000)
            try db.execute("analyze notification_queue")
            try db.execute("analyze inbox")
            try db.execute("""
                update notification_queue set status = 'sent', sent_at = now()
                 where recipient_user_id in (select md5('unread' || g)::uuid from generate_series(1, 4900) g)
                """)
            let sent = try Self.users(1...10, db), waiting = try Self.users(4991...5000, db)
            let counts = try db.query("select user_id, unread from herald_unread_entries(\(sent + waiting)::uuid[])")
            #expect(Dictionary(uniqueKeysWithValues: counts.map { ($0["user_id"].uuid!, $0["unread"].int!) })
                    == Dictionary(uniqueKeysWithValues: sent.map { ($0, 1) }))
            let plan = try db.query("explain (analyze, buffers, format json) select * from herald_unread_entries(\(sent + waiting)::uuid[])")
            let top = try JSONValue.parse(plan.first?["QUERY PLAN"].string ?? "[]").arrayValue?.first?["Plan"]
            let pages = (top?["Shared Hit Blocks"]?.intValue ?? 0) + (top?["Shared Read Blocks"]?.intValue ?? 0)
            #expect(pages < 1_000, "\(pages) pages read for 20 recipients")
        }
    }

    static func users(_ range: ClosedRange<Int>, _ db: PGConnection) throws -> [UUID] {
        try db.query("select md5('unread' || g)::uuid as id from generate_series(\(range.lowerBound)::int, \(range.upperBound)::int) g")
            .compactMap { $0["id"].uuid }
    }
}

import Foundation
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// What the queue's record writes per notification: seed 000's `(status, created_at)` index holds the
/// rows still waiting or leased, so a sent or skipped row adds no entry to it, and the reads by a
/// waiting status still find their rows through it.
@Suite struct QueueIndexTests {
    /// The name of the queue's index on `(status, created_at)`, and the live rows it holds entries
    /// for. ANALYZE counts them from the index's predicate over every live row (a table this small is
    /// read whole). A vacuum would not do: while any other session holds an older snapshot it may
    /// remove nothing, and then leaves the index's count as it was.
    static func statusIndex(_ db: PGConnection) throws -> (name: String, entries: Int) {
        try db.execute("analyze notification_queue")
        let row = try #require(try db.query("""
            select c.relname, c.reltuples::int as n
              from pg_index x join pg_class c on c.oid = x.indexrelid
             where x.indrelid = 'public.notification_queue'::regclass
               and pg_get_indexdef(x.indexrelid) like '%(status, created_at)%'
            """).first)
        return (row["relname"].string ?? "", row["n"].int ?? -1)
    }

    /// A sent or skipped row leaves no entry in the index of status and age; the pending rows keep
    /// theirs, and reading the rows of a waiting status by age (as seed 000's alerts system does)
    /// goes through it.
    @Test func aSentRowLeavesNoEntryInTheIndexOfStatusAndAge() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        try f.enqueueMany(30, to: [try f.profile()], channel: "in_app", at: seedInstant)
        try db.execute("alter table notification_queue set (autovacuum_enabled = false)")
        try db.execute("""
            update notification_queue set status = 'sent', sent_at = \(seedInstant)
             where id in (select id from notification_queue order by id limit 20)
            """)
        try db.execute("""
            update notification_queue set status = 'skipped'
             where id in (select id from notification_queue where status = 'pending' order by id limit 5)
            """)
        let index = try Self.statusIndex(db)
        #expect(index.entries == 5, "\(index.name) holds \(index.entries) entries for 5 waiting rows")
        try db.execute("set enable_seqscan = off")
        let plan = try db.query("""
            explain select id from notification_queue where status = 'failed' order by created_at limit 10
            """).map { $0[0].string ?? "" }.joined(separator: "\n")
        #expect(plan.contains(index.name), "plan:\n\(plan)")
    }
}

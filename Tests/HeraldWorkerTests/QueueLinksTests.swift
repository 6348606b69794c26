import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The queue's links — a push ticket's `push_receipts.queue_id`, a notification entry's `inbox.queue_id`
/// — are kept by one statement trigger after each delete from the queue, in both of its layouts: the
/// deleted rows' tickets go, their entries stay, unlinked. No foreign key checks each entry an enqueue
/// writes (a query a row, 11 % of a bulk enqueue).
@Suite struct QueueLinksTests {
    /// `n` in-app rows to 50 people, each with a ticket; the ids.
    static func rowsWithTickets(_ f: Fixtures, _ n: Int) throws -> [UUID] {
        var people: [UUID] = []
        for _ in 0..<50 { people.append(try f.profile()) }
        try f.enqueueMany(n, to: people, channel: "in_app", at: seedInstant)
        try f.db.execute("insert into push_receipts (queue_id, ticket_id) select id, id::text from notification_queue")
        return try f.db.query("select id from notification_queue order by id").compactMap { $0["id"].uuid }
    }

    @Test(arguments: [1, 4])
    func aDeleteFromTheQueueDropsItsTicketsAndUnlinksItsEntries(partitions: Int) throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            try ShardTests.partition(f, partitions)
            let ids = try Self.rowsWithTickets(f, 200)
            #expect(try f.count("""
                select count(*)::int from pg_constraint where confrelid = 'notification_queue'::regclass and contype = 'f'
                """) == 0)
            for gone in [Array(ids.prefix(1)), Array(ids.dropFirst().prefix(99))] {
                try f.db.execute("delete from notification_queue where id = any(\(gone)::uuid[])")
                #expect(try f.count("select count(*)::int from push_receipts where queue_id = any(\(gone)::uuid[])") == 0)
                #expect(try f.count("select count(*)::int from inbox where id = any(\(gone)::uuid[]) and queue_id is null")
                        == gone.count)
            }
            // The rest keep theirs.
            #expect(try f.count("select count(*)::int from push_receipts") == 100)
            #expect(try f.count("select count(*)::int from inbox where queue_id is not null") == 100)
        }
    }

    /// An app role that may delete its own queue rows, and sees neither tickets nor others' entries: the
    /// links go all the same, as a foreign key's action did, run as the tables' owner.
    @Test func theLinksGoWhoeverDeletesTheRow() throws {
        try SecurityTests.supabase { _, db in
            let f = Fixtures(db: db)
            let person = try f.profile()
            let id = try f.enqueue(to: person, at: seedInstant)
            try db.execute("insert into push_receipts (queue_id, ticket_id) values (\(id), 'ticket-1')")
            try db.execute("grant select, delete on notification_queue to authenticated")
            try db.execute("""
                create policy own_rows_deleted on notification_queue for delete to authenticated
                 using (recipient_user_id = (select auth.uid()))
                """)
            try db.execute("create policy own_rows_seen on notification_queue for select to authenticated using (true)")
            try SecurityTests.act(db, as: "authenticated", person, claimsJSON: true)
            try db.execute("delete from notification_queue where id = \(id)")
            try SecurityTests.owner(db)
            #expect(try f.count("select count(*)::int from notification_queue where id = \(id)") == 0)
            #expect(try f.count("select count(*)::int from push_receipts") == 0)
            #expect(try f.count("select count(*)::int from inbox where id = \(id) and queue_id is null") == 1)
        }
    }

    /// The trigger finds the links by their ids as a list, through the indexes, whether one row goes or
    /// a prune's chunk: a join with the deleted rows, once its plan was kept from a large delete, read all
    /// of the entries for one deleted row (47 ms among 300,000).
    @Test func aDeleteFindsTheLinksThroughTheirIndexesHoweverManyRowsGo() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let ids = try Self.rowsWithTickets(f, 20_000)
            try f.db.execute("analyze inbox")
            try f.db.execute("analyze push_receipts")
            func scans() throws -> [Int] {
                _ = try f.db.query("select pg_stat_force_next_flush()")
                return try f.db.query("""
                    select coalesce(seq_scan, 0)::int as seq from pg_stat_user_tables
                     where relname in ('inbox', 'push_receipts') order by relname
                    """).compactMap { $0["seq"].int }
            }
            let before = try scans()
            // Six chunks of 2,000 (the plan is kept from the sixth call on), then one row.
            for chunk in 0..<6 {
                let gone = Array(ids[(chunk * 2_000)..<((chunk + 1) * 2_000)])
                try f.db.execute("delete from notification_queue where id = any(\(gone)::uuid[])")
            }
            try f.db.execute("delete from notification_queue where id = \(ids[12_000])")
            #expect(try scans() == before, "the deletes scanned the entries or the tickets")
            #expect(try f.count("select count(*)::int from inbox where queue_id is null") == 12_001)
            #expect(try f.count("select count(*)::int from push_receipts") == 20_000 - 12_001)
        }
    }
}

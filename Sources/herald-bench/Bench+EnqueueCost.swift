import Foundation
import HeraldPostgres

/// Section 1's enqueue lines: what sql/034's notify trigger adds to an insert into the queue — one row
/// per transaction (as an app's backend enqueues), four such writers at once (a notifying commit
/// takes a lock every other notifying commit waits for), and 20,000 rows in one statement (as the
/// generators write) — beside the same with the trigger disabled, the two taking turns, five
/// rounds (each line takes a second or less, and a neighbour's burst moves one by half), the best of each.
extension Bench {
    struct EnqueueCost {
        var single = Pair(), concurrent = Pair(), bulk = Pair()

        /// Microseconds per row, with the trigger and without: the best of the rounds.
        struct Pair {
            var with = Double.infinity, without = Double.infinity
            mutating func keep(_ value: Double, trigger: Bool) {
                if trigger { with = min(with, value) } else { without = min(without, value) }
            }
            var text: String {
                String(format: "%.1f µs/row", with)
            }
            var verdict: String {
                String(format: "(%+.0f%%; the best of 5, taking turns)", (with / without - 1) * 100)
            }
        }
    }

    func enqueueCost(_ url: String) throws {
        let db = try PGConnection(url)
        defer { db.close() }
        let singles = 2_000, writers = 4, bulk = 20_000
        var cost = EnqueueCost()
        for round in 0..<5 {
            for trigger in round % 2 == 0 ? [true, false] : [false, true] {
                try db.execute("alter table notification_queue \(unescaped: trigger ? "enable" : "disable") trigger herald_queue_inserted")
                try db.execute("truncate notification_queue, inbox, push_receipts cascade")
                cost.single.keep(try Bench.seconds { try insertOneByOne(db, singles) } / Double(singles) * 1e6, trigger: trigger)
                try db.execute("truncate notification_queue, inbox, push_receipts cascade")
                cost.concurrent.keep(try concurrentInserts(url, writers: writers, each: singles / writers) / Double(singles) * 1e6,
                                     trigger: trigger)
                try db.execute("truncate notification_queue, inbox, push_receipts cascade")
                cost.bulk.keep(try Bench.seconds { try db.execute("""
                    insert into notification_queue (recipient_user_id, channel, kind, payload)
                    select md5('enqueue' || g)::uuid, 'push', 'system', '{"title":"Hello"}'::jsonb from generate_series(1, \(bulk)) g
                    """) } / Double(bulk) * 1e6, trigger: trigger)
            }
        }
        try db.execute("alter table notification_queue enable trigger herald_queue_inserted")
        try db.execute("truncate notification_queue, inbox, push_receipts cascade")
        Bench.line("enqueue, one row per transaction", cost.single.text, "without the notify trigger",
                   String(format: "%.1f µs/row", cost.single.without), cost.single.verdict + " (aim: within noise)")
        Bench.line("the same, \(writers) writers at once", cost.concurrent.text, "without the notify trigger",
                   String(format: "%.1f µs/row", cost.concurrent.without), cost.concurrent.verdict)
        Bench.line("enqueue, \(bulk) rows in a statement", cost.bulk.text, "without the notify trigger",
                   String(format: "%.2f µs/row", cost.bulk.without), cost.bulk.verdict)
    }

    /// `n` inserts, each a transaction of its own.
    func insertOneByOne(_ db: PGConnection, _ n: Int, offset: Int = 0) throws {
        for i in 0..<n {
            try db.execute("""
                insert into notification_queue (recipient_user_id, channel, kind, payload)
                values (md5('enqueue' || \(offset + i))::uuid, 'push', 'system', '{"title":"Hello"}'::jsonb)
                """)
        }
    }

    /// `writers` connections inserting `each` rows one by one at the same time, each on a thread of
    /// its own (not a dispatch queue's, which would run as many at once as there are cores); the wall time.
    func concurrentInserts(_ url: String, writers: Int, each: Int) throws -> Double {
        let connections = try (0..<writers).map { _ in try PGConnection(url) }
        defer { connections.forEach { $0.close() } }
        nonisolated(unsafe) let shared = connections
        nonisolated(unsafe) var failure: Error?
        let lock = NSLock(), done = DispatchGroup(), go = DispatchSemaphore(value: 0)
        for w in 0..<writers {
            done.enter()
            Thread {
                go.wait()
                do { try insertOneByOne(shared[w], each, offset: w * each) } catch { lock.withLock { failure = error } }
                done.leave()
            }.start()
        }
        return try Bench.seconds {
            for _ in 0..<writers { go.signal() }
            done.wait()
            if let failure { throw failure }
        }
    }
}

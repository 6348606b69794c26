import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A pass that drains full batches records batch N on a second connection while it claims and decides
/// batch N+1 (`DeliveryPass.run`). Nothing about the outcome may change: every row recorded once, the
/// counts in the summary, and the rate limits of a recipient whose rows span batches.
@Suite(.serialized) struct PipelinedPassTests {
    @Test func aDrainInSmallBatchesRecordsEveryRowOnceAndKeepsTheDailyCap() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let at = instant("2026-01-25T12:00:00Z")
            // Four busy recipients with 14 rows each, all due at once (claim order puts a recipient's rows
            // side by side, so they span batches of 4), and 30 recipients with one row each.
            let busy = try (0..<4).map { _ in try f.profile() }
            for p in busy {
                for _ in 0..<14 { _ = try f.enqueue(to: p, kind: "reminder", at: at) }
            }
            let quiet = try (0..<30).map { _ in try f.profile() }
            try f.enqueueMany(30, to: quiet, channel: "in_app", at: at)

            try tdb.withoutSpacing()
            let (s, code) = Worker(url: tdb.url).run(now: at.addingTimeInterval(60), batchSize: 4, drain: true)
            #expect(code == .ok)
            #expect(s.batches > 10)
            // The daily cap (10 a day) held for each busy recipient, across batches recorded in the background.
            for p in busy {
                #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id = \(p) and status = 'sent'") == 10)
            }
            let total = 4 * 14 + 30
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 4 * 10 + 30)
            #expect(s.sent == 4 * 10 + 30)
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 0)
            // One trail event per row: each was claimed and recorded exactly once.
            #expect(try f.count("select count(*)::int from notification_trail") == total)
            #expect(try f.count("select count(distinct queue_id)::int from notification_trail") == total)
            #expect(try f.count("""
                select count(*)::int from notification_events where reason = 'rate_limit_daily'
                """) == 4 * 4)
        }
    }

    /// Two pipelined passes at once on one queue: exactly once between them, and every row counted by
    /// the pass that recorded it.
    @Test func twoPipelinedPassesShareTheQueueExactlyOnce() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let at = instant("2026-01-25T12:00:00Z")
            let recipients = try (0..<50).map { _ in try f.profile() }
            try f.enqueueMany(400, to: recipients, channel: "in_app", at: at)
            let url = tdb.url
            let sent = Total()
            try tdb.setRateLimits()
            inParallel(2) { _ in
                let (s, _) = Worker(url: url).run(now: at.addingTimeInterval(60), batchSize: 20, drain: true)
                sent.add(s.sent)
            }
            #expect(sent.value == 400)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 400)
            #expect(try f.count("select count(*)::int from notification_trail") == 400)
            #expect(try f.count("""
                select count(*)::int from inbox i join notification_queue q on q.id = i.queue_id where q.status = 'sent'
                """) == 400, "one listed entry per notification")
        }
    }

    /// A recipient is in flight from the moment their record is submitted until its transaction
    /// commits, whether it waits in the writer's queue or is being written: the next claim leaves them
    /// out, so its rate limits read that send.
    @Test func aRecordOnItsWayKeepsItsRecipientInFlightUntilItCommits() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let (first, second) = (try f.profile(), try f.profile())
            for p in [first, second] { _ = try f.enqueue(to: p, at: seedInstant) }
            let store = QueueStore(db: try tdb.connect(), passId: "p")
            let claimed = try store.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60)
            func records(of recipient: UUID) -> RecordBatch {
                var batch = RecordBatch()
                for c in claimed where c.item.recipientUserId == recipient {
                    batch.rows.append(RowRecord(item: c.item, status: .sent, event: .sent))
                }
                return batch
            }
            let writer = RecordWriter(store: store, retryDelays: [])
            #expect(writer.recipientsInFlight.isEmpty)
            // Another session holds the trail's table: the first flush is taken and waits to be written,
            // the second waits in the queue behind it.
            let holder = try tdb.connect()
            defer { holder.close() }
            try holder.execute("begin")
            try holder.execute("lock table notification_events in access exclusive mode")
            writer.submit(records(of: first))
            writer.waitUntilPickedUp()
            writer.submit(records(of: second))
            #expect(writer.recipientsInFlight == [first, second])
            try holder.execute("commit")
            writer.waitUntilIdle()
            #expect(writer.recipientsInFlight.isEmpty)
            #expect(try writer.finish().flatMap { $0.1 }.count == 2)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 2)
        }
    }
}

/// A total several threads add to.
final class Total: @unchecked Sendable {  // `total` is only touched under `lock`
    private let lock = NSLock()
    private var total = 0
    func add(_ n: Int) { lock.withLock { total += n } }
    var value: Int { lock.withLock { total } }
}

import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// What wakes a follower (sql/034_queue_notify.sql), and when it sleeps to (`QueueStore.nextDue`).
@Suite struct QueueNotifyTests {
    /// The notifications a listener received on the queue's channel up to a sentinel notified after
    /// `action`: notifications arrive in commit order, so none of the action's can come after it.
    static func notified(_ listener: PGConnection, by db: PGConnection, _ action: () throws -> Void) throws -> Int {
        try action()
        try db.execute("select pg_notify(\(QueueNotification.channel), 'sentinel')")
        var count = 0
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            for n in try listener.waitForNotifications(timeout: 1) {
                if n.payload == "sentinel" { return count }
                count += 1
            }
        }
        Issue.record("the sentinel never came")
        return -1
    }

    /// One notification per transaction that inserts rows, whatever their number, their statements
    /// or their due time; none for a claim or a send's record; one when a row goes back to waiting
    /// (a release, a retry, a reschedule) and when a pause is lifted; none for taking a pause.
    @Test func theQueueNotifiesOncePerTransactionThatMakesRowsWait() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let listener = try tdb.connect()
            try listener.execute("LISTEN \(identifier: QueueNotification.channel)")
            let recipients = try (0..<3).map { _ in try f.profile() }

            #expect(try Self.notified(listener, by: db) {
                try f.enqueueMany(3, to: recipients, channel: "in_app", at: Date())
            } == 1)
            #expect(try Self.notified(listener, by: db) {
                try db.transaction { _ in
                    try f.enqueue(to: recipients[0], at: Date().addingTimeInterval(3600))
                    try f.enqueue(to: recipients[1], at: Date())
                }
            } == 1)
            let store = QueueStore(db: db, passId: "notify-test")
            var claimed: [Claimed] = []
            #expect(try Self.notified(listener, by: db) {
                claimed = try store.claimRows(limit: 10, now: Date(), channels: [.inApp], leaseSeconds: 600)
            } == 0)
            #expect(claimed.count == 4)
            #expect(try Self.notified(listener, by: db) {
                var records = RecordBatch()
                for c in claimed.dropFirst() {
                    var r = RowRecord(id: c.item.id, status: .sent, event: .sent)
                    r.sentAt = Date()
                    records.rows.append(r)
                }
                _ = try store.record(records)
            } == 0)
            #expect(try Self.notified(listener, by: db) {
                var release = RecordBatch()
                release.rows.append(RowRecord(id: claimed[0].item.id, status: .pending, event: .released))
                _ = try store.record(release)
            } == 1)
            let ops = Operator(db: db, actor: "ops", reason: nil)
            #expect(try Self.notified(listener, by: db) { _ = try ops.pause(channel: "sms", kind: nil) } == 0)
            #expect(try Self.notified(listener, by: db) { _ = try ops.resume(channel: "sms", kind: nil) } == 1)
        }
    }

    /// The next due time is that of the earliest row a claim of these channels could take after now,
    /// of any priority: rows due already, paused, of a channel without a route, out of tries or
    /// finished do not count.
    @Test func theNextDueTimeIsTheEarliestRowAClaimCouldTakeLater() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let store = QueueStore(db: db, passId: "next-due-test")
            let r = try f.profile()
            let now = seedInstant
            #expect(try store.nextDue(after: now, channels: [.inApp, .push]) == nil)

            try f.enqueue(to: r, channel: "in_app", at: now.addingTimeInterval(-60))              // due already
            try f.enqueue(to: r, channel: "in_app", at: now.addingTimeInterval(900), priority: "low")
            try f.enqueue(to: r, channel: "sms", at: now.addingTimeInterval(60))                  // no route here
            try f.enqueue(to: r, channel: "email", kind: "prompt", at: now.addingTimeInterval(90))
            let spent = try f.enqueue(to: r, channel: "push", at: now.addingTimeInterval(30))
            try db.execute("update notification_queue set status = 'failed', attempts = max_attempts where id = \(spent)")
            let done = try f.enqueue(to: r, channel: "push", at: now.addingTimeInterval(40))
            try db.execute("update notification_queue set status = 'sent' where id = \(done)")
            #expect(try store.nextDue(after: now, channels: [.inApp, .push]) == now.addingTimeInterval(900))

            try f.enqueue(to: r, channel: "push", at: now.addingTimeInterval(120), priority: "high")
            #expect(try store.nextDue(after: now, channels: [.inApp, .push]) == now.addingTimeInterval(120))
            #expect(try store.nextDue(after: now, channels: [.inApp, .push, .sms]) == now.addingTimeInterval(60))
            #expect(try Operator(db: db, actor: "ops", reason: nil).pause(channel: "push", kind: nil))
            #expect(try store.nextDue(after: now, channels: [.inApp, .push, .email]) == now.addingTimeInterval(90))
        }
    }

    /// HERALD_FOLLOW_LISTEN takes auto, on or off; HERALD_FOLLOW_POLL_MS 10 ms to a day: anything
    /// else exits 1 naming the variable.
    @Test func theFollowSettingsAreCheckedBeforeAnyRowIsTouched() throws {
        func load(_ values: [String: String]) throws -> PassOptions {
            try PassConfig.load(Settings(values.merging(["HERALD_CHANNEL_IN_APP": "log"]) { a, _ in a }),
                                options: PassOptions()).options
        }
        #expect(try load([:]).followListen == .auto)
        #expect(try load([:]).followPoll == 0.5)
        #expect(try load(["HERALD_FOLLOW_LISTEN": "OFF", "HERALD_FOLLOW_POLL_MS": "250"]).followListen == .off)
        #expect(try load(["HERALD_FOLLOW_POLL_MS": "250"]).followPoll == 0.25)
        for bad in [["HERALD_FOLLOW_LISTEN": "sometimes"], ["HERALD_FOLLOW_POLL_MS": "5"], ["HERALD_FOLLOW_POLL_MS": "fast"]] {
            #expect { try load(bad) } throws: { "\($0)".contains(bad.keys.first!) }
        }
    }
}

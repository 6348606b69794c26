import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A claim only leases: its rows stay `pending` under a lease (`Lease`), shown as processing, and the
/// previous release's `processing` rows are read as leased rows too.
@Suite struct LeaseOnlyClaimTests {
    /// The queue's updates and HOT updates so far, once the statistics of `writer` have reached the
    /// server's counters (a backend reports them when it goes idle): polled until `updates` moved.
    static func updates(_ db: PGConnection, after writer: PGConnection, atLeast updates: Int) throws -> (all: Int, hot: Int) {
        _ = try writer.query("select pg_stat_force_next_flush()")
        _ = try writer.query("select 1")
        let deadline = Date().addingTimeInterval(20)
        while true {
            _ = try db.query("select pg_stat_clear_snapshot()")
            let row = try #require(try db.query("""
                select n_tup_upd::int as n, n_tup_hot_upd::int as hot from pg_stat_user_tables where relname = 'notification_queue'
                """).first)
            let seen = (row["n"].int ?? 0, row["hot"].int ?? 0)
            if seen.0 >= updates || Date() > deadline { return seen }
            usleep(50_000)
        }
    }

    /// Claimed rows stay `pending` with this pass's lease and one more attempt, every claim's update is
    /// a HOT update (no index entry), and `herald status` shows them as processing.
    @Test func aClaimLeasesItsRowsWithoutChangingTheirStatus() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let recipients = try (0..<20).map { _ in try f.profile() }
            try f.enqueueMany(20, to: recipients, channel: "in_app", at: seedInstant)
            try db.execute("vacuum notification_queue")
            let claimer = try tdb.connect()
            let before = try Self.updates(db, after: claimer, atLeast: 0)

            let claimed = try QueueStore(db: claimer, passId: "pass-a")
                .claimRows(limit: 50, now: seedInstant, channels: [.inApp], leaseSeconds: 600)
            #expect(claimed.count == 20)
            #expect(claimed.allSatisfy { $0.item.attempts == 1 })
            #expect(try f.count("""
                select count(*)::int from notification_queue
                 where status = 'pending' and locked_by = 'pass-a' and locked_until > now() and attempts = 1
                """) == 20)
            let after = try Self.updates(db, after: claimer, atLeast: before.all + 20)
            #expect(after.all - before.all == 20)
            #expect(after.hot - before.hot == 20, "a claim's update must be HOT")

            let report = try Status.report(db, now: seedInstant)
            #expect(report["depth"]?["processing"]?["in_app"]?.intValue == 20)
            #expect(report["depth"]?["pending"] == nil)
            #expect(report["leased"]?.intValue == 20)
            #expect(report["due"]?.intValue == 0)
            #expect(Status.text(report).contains("leased: 20"))
        }
    }

    /// A claim takes the first due rows in the claim's order (priority, then run_after, then id) and
    /// returns them in that order, each as the lease left it (one attempt more), whatever order the
    /// rows were written in.
    @Test func aClaimReturnsItsRowsInTheClaimsOrderAsTheLeaseLeftThem() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            for n in 0..<12 {
                try db.execute("""
                    insert into notification_queue (recipient_user_id, channel, kind, priority, payload, scheduled_at,
                                                    run_after, attempts)
                    values (\(try f.profile()), 'in_app', 'system', \(["low", "normal", "high"][n % 3]), '{"title":"t"}',
                            \(seedInstant.addingTimeInterval(Double(-n))), \(seedInstant.addingTimeInterval(Double(-n))), \(n % 2))
                    """)
            }
            let expected = try db.query("""
                select id, attempts + 1 as attempts from notification_queue order by priority_rank, run_after, id limit 8
                """).map { (try #require($0["id"].uuid), $0["attempts"].int ?? -1) }
            let claimed = try QueueStore(db: try tdb.connect(), passId: "p")
                .claimRows(limit: 8, now: seedInstant, channels: [.inApp], leaseSeconds: 600)
            #expect(claimed.map(\.item.id) == expected.map(\.0))
            #expect(claimed.map(\.item.attempts) == expected.map(\.1))
            #expect(try f.count("select count(*)::int from notification_queue where locked_by = 'p'") == 8)
        }
    }

    /// A live lease keeps the row from every other claim; once it has run out, a claim takes the row
    /// over by itself (its attempt counted again), and the pass that overran is fenced out.
    @Test func anExpiredLeaseIsTakenOverByTheNextClaim() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let later = ClockShift()
            let a = QueueStore(db: try tdb.connect(), passId: "pass-a")
            let b = QueueStore(db: try tdb.connect(), passId: "pass-b", clock: PassClock(now: seedInstant, shift: later))
            #expect(try a.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 1).map(\.item.id) == [id])
            #expect(try b.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60).isEmpty)
            later.advance(by: 2)
            #expect(try b.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60).map(\.item.attempts) == [2])
            var late = RecordBatch()
            late.rows.append(RowRecord(id: id, status: .skipped, event: .skipped))
            #expect(try a.record(late).isEmpty)
            #expect(try f.row(id)["locked_by"].string == "pass-b")
        }
    }

    /// While this release's passes lease rows, the previous release's claim (which knows only
    /// `processing`) cannot take a row under a live lease: meeting one, it is refused whole and changes
    /// nothing. Once the lease has ended, the rows it claims are `processing`, which this release leaves
    /// alone while that lease lives and recovers once it has expired.
    @Test func thePreviousReleasesClaimHonoursThisReleasesLeases() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let recipients = try (0..<6).map { _ in try f.profile() }
            try f.enqueueMany(6, to: recipients, channel: "in_app", at: seedInstant)
            let later = ClockShift()
            let store = QueueStore(db: try tdb.connect(), passId: "new-pass", clock: PassClock(now: seedInstant, shift: later))
            let mine = try store.claimRows(limit: 3, now: seedInstant, channels: [.inApp], leaseSeconds: 600).map(\.item.id)
            #expect(mine.count == 3)

            let refused = #expect(throws: PGError.self) {
                try PreviousRelease.claim(db, passId: "old-pass", limit: 10, now: seedInstant, leaseSeconds: 1)
            }
            #expect(refused?.sqlState == "55P03")
            #expect("\(refused.map { "\($0)" } ?? "")".contains("is leased to pass \"new-pass\""))
            #expect(try f.count("select count(*)::int from notification_queue where locked_by = 'new-pass' and status = 'pending'") == 3)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'processing' or locked_by = 'old-pass'") == 0)

            // This release's pass records its rows; the previous release's claim then takes the other three.
            var sent = RecordBatch()
            for id in mine { sent.rows.append(RowRecord(id: id, status: .sent, event: .sent)) }
            #expect(try store.record(sent) == Set(mine))
            let theirs = try PreviousRelease.claim(db, passId: "old-pass", limit: 10, now: seedInstant, leaseSeconds: 1)
            #expect(theirs.count == 3)
            #expect(Set(theirs).isDisjoint(with: mine))
            #expect(try store.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 600).isEmpty)
            #expect(try Status.report(db, now: seedInstant)["depth"]?["processing"]?["in_app"]?.intValue == 3)

            later.advance(by: 2)
            #expect(try store.recoverExpiredLeases(now: seedInstant) == 3)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'processing'") == 0)
            #expect(Set(try store.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 600).map(\.item.id))
                    == Set(theirs))
        }
    }
}

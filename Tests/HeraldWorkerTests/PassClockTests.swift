import Foundation
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The pass's one clock: a test moves it forward instead of sleeping, and the decision's time, the
/// pass's elapsed time and the lease's time (on the database's clock) move together; the wire's time
/// is the real one whatever the test says.
@Suite struct PassClockTests {
    /// Moving the clock by an hour moves the decision's time, the elapsed time and the lease time by an
    /// hour; the wire's time stays the real time.
    @Test func aMovedClockMovesDecisionsAndLeasesButNotTheWire() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let shift = ClockShift()
            let clock = PassClock(now: seedInstant, shift: shift)
            shift.advance(by: 3600)
            #expect(clock.now().timeIntervalSince(seedInstant) >= 3600)
            #expect(clock.elapsed >= 3600)
            #expect(abs(clock.wire().timeIntervalSinceNow) < 60)
            let ahead = try #require(try db.query("select extract(epoch from \(clock.lease) - now())::float8 as s").first?["s"].double)
            #expect(ahead == 3600)
            let unmoved = PassClock(now: seedInstant)
            #expect(try db.query("select extract(epoch from \(unmoved.lease) - now())::float8 as s").first?["s"].double == 0)
        }
    }

    /// A lease expired at a moved clock's time is taken over by that clock's claim, even while the
    /// database's own time still holds it live: the queue's trigger that keeps the previous release's
    /// statements off live leases reads the claim's lease time.
    @Test func aLeaseExpiredOnAMovedClockIsTakenOverWhileTheDatabaseStillHoldsIt() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let a = QueueStore(db: try tdb.connect(), passId: "pass-a")
            #expect(try a.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 600).map(\.item.id) == [id])
            let b = QueueStore(db: try tdb.connect(), passId: "pass-b", clock: PassClock(now: seedInstant, shift: ClockShift(601)))
            #expect(try b.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60).map(\.item.id) == [id])
            #expect(try f.row(id)["locked_by"].string == "pass-b")
            #expect(try f.count("select count(*)::int from notification_queue where locked_until > now() + interval '600 seconds'") == 1)
        }
    }
}

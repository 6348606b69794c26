import Foundation
import HeraldPostgres
import Synchronization

/// The pass's one clock, and every time a pass reads:
///
/// | time | read as | what runs on it |
/// |---|---|---|
/// | the decision's | `now()`: `--now` (or the real time at start) advanced by the time elapsed since | due rows, quiet hours, rate limits, backoff, receipts' age |
/// | the pass's own | `elapsed`: seconds since the pass started, on a clock that never goes back | the deadline, the lease's cover of a send (`SendGate`), pacing |
/// | the wire's | `wire()`: the real time | provider tokens (JWT `iat`), webhook timestamps, access tokens, providers' dates |
/// | the lease's | `lease`: the database's `now()` | when a lease ends: the claim, lease recovery, a follower's next due row |
///
/// Leases are judged by the database's clock, so passes on hosts whose clocks disagree agree on when
/// a lease ends. A test moves time forward with a `ClockShift` instead of sleeping: the decision's,
/// the pass's own and the lease's time move together (the lease's as a bound offset on the
/// database's `now()`); the wire's never moves, since the providers check it against their own.
///
///     let shift = ClockShift()
///     let clock = PassClock(now: seedInstant, shift: shift)
///     shift.advance(by: 2)   // a lease of 1 s taken before now reads expired
public struct PassClock: Sendable {
    public let start: Date
    private let startedAt: UInt64
    private let shift: ClockShift?

    public init(now: Date?, shift: ClockShift? = nil) {
        start = now ?? Date()
        startedAt = DispatchTime.now().uptimeNanoseconds
        self.shift = shift
    }

    /// Seconds since the pass started (plus any time a test moved the clock by).
    public var elapsed: Double {
        Double(DispatchTime.now().uptimeNanoseconds - startedAt) / 1e9 + (shift?.seconds ?? 0)
    }

    /// The decision's time.
    public func now() -> Date { start.addingTimeInterval(elapsed) }

    /// The wire's time: the real time, whatever `--now` or a test says.
    public func wire() -> Date { Date() }

    /// The lease's time, as SQL: the database's `now()`, plus the seconds a test moved the clock by
    /// (a bound parameter; 0 outside tests).
    public var lease: SQL { "(now() + make_interval(secs => \(shift?.seconds ?? 0)))" }

    /// The seconds a test moved the clock by (0 outside tests).
    public var shiftSeconds: Double { shift?.seconds ?? 0 }
}

/// Time a test moves a pass's clock forward by, shared between the test and the pass (which may run
/// on another thread): a lease ages by `advance(by:)`, not by sleeping.
public final class ClockShift: Sendable {
    private let value = Mutex<Double>(0)

    public init(_ seconds: Double = 0) { value.withLock { $0 = seconds } }

    public var seconds: Double { value.withLock { $0 } }

    public func advance(by seconds: Double) { value.withLock { $0 += seconds } }
}

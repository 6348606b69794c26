import Foundation
import HeraldPostgres
import Logging

/// What a pass does when one of its database connections ends (a failover promotes a standby, a
/// server restarts, a pooler drops its clients): it opens the same connection again, through the same
/// URL (`PGConnection.reopen`: a multi-host URL with `target_session_attrs=read-write` reaches the new
/// primary), waiting 0.1 s before the second try and twice as long before each next one, 2 s at most.
/// Only when no database answers within HERALD_RECONNECT_SECONDS (30) of the end does the pass give up
/// (exit 2); from then on every connection that ends gives up at once. One instance serves every
/// connection of a pass and every thread; `reconnects` counts the connections opened again (the
/// summary's `reconnects`, the metric `herald_pass_reconnects`).
///
///     catch let error as PGError where error.isConnectionFailure {
///         try reconnector.restore(db, "records", after: error)   // throws when the bound passes
///     }
final class Reconnector: @unchecked Sendable {  // `count` and `gaveUp` are read and written under `lock`
    /// The longest time from a connection's end to a connection again (HERALD_RECONNECT_SECONDS); 0
    /// turns reconnecting off.
    let seconds: Double
    let logger: Logger
    /// The pause before the second try; each next one doubles it, up to `longestPause`.
    static let firstPause = 0.1
    static let longestPause = 2.0
    /// How many times one piece of work (`retrying`) reopens its connection before its error is the pass's.
    static let triesPerWork = 5

    private let lock = NSLock()
    private var count = 0
    private var gaveUp = false

    init(seconds: Double, logger: Logger) {
        self.seconds = seconds
        self.logger = logger
    }

    /// Connections opened again so far.
    var reconnects: Int { lock.withLock { count } }

    /// Opens `db` again after `error` ended it, trying until a database answers or `seconds` have
    /// passed; then throws (a `PGError` connection failure that names the setting and the last reason).
    /// `what` names the connection in the log.
    func restore(_ db: PGConnection, _ what: String, after error: any Error) throws {
        guard seconds > 0, !lock.withLock({ gaveUp }) else { throw error }
        logger.warning("a database connection ended; connecting again", metadata: [
            "connection": .string(what), "error": .string("\(error)"), "within_s": "\(seconds.formatted0)"])
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
        var pause = Self.firstPause
        var tries = 0
        var last: any Error = error
        while true {
            tries += 1
            do {
                try db.reopen()
                lock.withLock { count += 1 }
                logger.notice("connected to the database again", metadata: [
                    "connection": .string(what), "tries": "\(tries)", "ms": "\(Int(elapsed * 1000))"])
                return
            } catch {
                last = error
            }
            let remaining = seconds - elapsed
            guard remaining > 0 else { break }
            Thread.sleep(forTimeInterval: min(pause, remaining))  // the last try comes at the bound
            pause = min(pause * 2, Self.longestPause)
        }
        lock.withLock { gaveUp = true }
        logger.error("no database answered; giving up", metadata: [
            "connection": .string(what), "tries": "\(tries)", "error": .string("\(last)")])
        throw PGError(isConnectionFailure: true,
                      message: "no database answered within HERALD_RECONNECT_SECONDS (\(seconds.formatted0) s): \(last)")
    }

    /// Runs `body`; when `db`'s connection ends under it, opens it again (`restore`) and runs `body`
    /// again, up to `triesPerWork` times. `body` must be safe to run again after a lost connection:
    /// a read, or a write whose transaction either committed or left nothing (a fenced record).
    @discardableResult
    func retrying<T>(_ db: PGConnection, _ what: String, _ body: () throws -> T) throws -> T {
        var restores = 0
        while true {
            do {
                return try body()
            } catch let error as PGError where error.isConnectionFailure && restores < Self.triesPerWork {
                restores += 1
                try restore(db, what, after: error)
            }
        }
    }
}

import Foundation
import HeraldCore
import HeraldPostgres

/// The queue as a pass leaves it, for the metrics file and the Pushgateway: what an alert on a backlog
/// or on dead rows needs, which a pass's own counts cannot say. The whole queue (every shard), read in
/// one statement at the end of a pass that reports metrics; `herald status` reads the same figures.
///
///     summary.queue = try QueueGauges.read(db, now: clock.now())
///     // herald_queue_due_rows 3, herald_queue_oldest_due_age_seconds 420, herald_queue_dead_rows 12
public struct QueueGauges: Sendable, Equatable {
    /// Rows due now that a pass would claim: not held back by an operator's pause (the pause has its
    /// own gauge, `herald_pass_paused_rows`), whatever their channel's route.
    public var due: Int
    /// How long the oldest of those has waited past its `run_after`, in seconds; 0 when none is due.
    public var oldestDueAgeSeconds: Double
    /// Rows failed for good (`status = 'failed' and permanent`): what no pass will try again.
    public var dead: Int

    public init(due: Int, oldestDueAgeSeconds: Double, dead: Int) {
        self.due = due
        self.oldestDueAgeSeconds = oldestDueAgeSeconds
        self.dead = dead
    }

    /// The three figures at `now` (the pass's clock, so `--now` replays read as that instant).
    public static func read(_ db: PGConnection, now: Date) throws -> QueueGauges {
        let row = try db.query("""
            select count(*)::int as due, min(q.run_after) as oldest,
                   (select count(*)::int from notification_queue where status = 'failed' and permanent) as dead
              from notification_queue q
             where \(QueueStore.due(now)) and \(QueueStore.notPaused)
            """).first
        let oldest = row?["oldest"].date
        return QueueGauges(due: row?["due"].int ?? 0,
                           oldestDueAgeSeconds: oldest.map { max(0, now.timeIntervalSince($0).rounded()) } ?? 0,
                           dead: row?["dead"].int ?? 0)
    }

    var json: JSONValue {
        .object(["due": .number(Double(due)), "oldest_due_age_s": .number(oldestDueAgeSeconds), "dead": .number(Double(dead))])
    }
}

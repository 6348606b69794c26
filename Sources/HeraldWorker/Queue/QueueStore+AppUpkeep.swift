import Foundation
import HeraldPostgres

/// Housekeeping of what the apps read and write beside the queue: reminders that are over.
extension QueueStore {
    /// Deletes reminders cancelled, and one-off reminders finished (nothing left to send), more than
    /// `retentionDays` ago, `limit` at most (sql/048: `herald_prune_reminders`). Runs only in the pass
    /// that wins the advisory lock; returns how many went.
    @discardableResult
    public func pruneReminders(retentionDays: Int, limit: Int = 5000) throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(lockKey(QueueStore.housekeepingLock + 3))) as ok")
                .first?["ok"].bool == true else { return 0 }
            return try db.query("select herald_prune_reminders(\(retentionDays), \(limit)) as n").first?["n"].int ?? 0
        }
    }
}

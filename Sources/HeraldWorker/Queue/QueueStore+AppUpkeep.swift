import Foundation
import HeraldPostgres

/// Housekeeping of what the apps read and write beside the queue: reminders that are over, and the
/// deep link scheme the app's list applies.
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

    /// Deletes the records of apps' changes to what the generators read (`herald_generator_changes`,
    /// sql/052) older than an hour: a polling follower looks at those of the last HERALD_FOLLOW_POLL_MS,
    /// and a listening one at none. Runs only in the pass that wins the advisory lock (the same for
    /// every shard: the table is not the queue's); returns how many went.
    @discardableResult
    public func pruneGeneratorChanges() throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(QueueStore.housekeepingLock + 4)) as ok")
                .first?["ok"].bool == true else { return 0 }
            return try db.query("""
                with gone as (delete from herald_generator_changes where changed_at < now() - interval '1 hour' returning 1)
                select count(*)::int as n from gone
                """).first?["n"].int ?? 0
        }
    }

    /// Writes the app's deep link scheme (`HERALD_DEEP_LINK_SCHEME`) where the app's list reads it
    /// (`herald_app_links`), only when it differs from the one there: the list keeps a stored deep link
    /// in that scheme only, as the push does.
    public func publishDeepLinkScheme(_ scheme: String) throws {
        try db.execute("""
            insert into herald_app_links (deep_link_scheme) values (\(scheme))
            on conflict (only_row) do update set deep_link_scheme = excluded.deep_link_scheme, updated_at = now()
             where herald_app_links.deep_link_scheme is distinct from excluded.deep_link_scheme
            """)
    }
}

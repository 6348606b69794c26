import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {
    /// When the next row a claim of `channels` could take comes due, after `now`; nil when none is
    /// waiting. A follower sleeps until then (or until a notification). Rows an operator's pause holds
    /// are left out: their channel's resume notifies; so are rows another pass holds under a live
    /// lease: their record, if it makes them wait again, notifies.
    ///
    /// One statement, three index probes: for each priority rank, the first waiting row after `now` in
    /// the notification_queue_due index's (priority_rank, run_after) order, whatever the queue's size.
    ///
    ///     try store.nextDue(after: clock.now(), channels: routes.routable)   // 2026-01-25T03:00:02Z
    public func nextDue(after now: Date, channels: [Channel]) throws -> Date? {
        func first(_ rank: Int) -> SQL {
            """
            (select q.run_after from \(queue) q
              where q.priority_rank = \(unescaped: String(rank)) and \(QueueStore.waiting) and q.run_after > \(now)
                and \(Lease.notLive(at: clock.lease))
                and (q.channel = any(\(channels.map(\.rawValue))::text[]) or not q.channel = any(\(QueueStore.knownChannels)::text[]))
                and \(QueueStore.notPaused)
              order by q.run_after limit 1)
            """
        }
        return try db.query("select least(\(first(0)), \(first(1)), \(first(2))) as next").first?["next"].date
    }
}

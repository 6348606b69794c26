import Foundation
import HeraldPostgres

extension QueueStore {
    /// Of a claimed batch, the rows that are copies of a notification the person has read or acted on
    /// (its entry `is_read`, or an action recorded), as `herald_waiting_copies` names copies
    /// (sql/058_quiet_once_read.sql): read after the claim took them, so the read's own withdrawal left
    /// them to this pass, or enqueued into the notification after the read. The decision skips them
    /// `read_elsewhere`, recorded through the pass's fenced record like any decision.
    ///
    ///     try store.readElsewhere(batch.map(\.id))   // [the SMS copy's id] once the push was opened
    func readElsewhere(_ ids: [UUID]) throws -> Set<UUID> {
        guard !ids.isEmpty else { return [] }
        var read: Set<UUID> = []
        for row in try db.query("""
            select q.id
              from notification_queue q
              join inbox i on i.user_id = q.recipient_user_id
                          and i.notification_key = coalesce(q.notification_group, q.id::text)
             where q.id = any(\(ids)::uuid[]) and (i.is_read or i.action is not null)
               and q.id in (select herald_waiting_copies(i.user_id, i.notification_key, i.queue_id))
            """) {
            if let id = row["id"].uuid { read.insert(id) }
        }
        return read
    }
}

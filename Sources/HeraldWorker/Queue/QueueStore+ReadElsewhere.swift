import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {
    /// Of a claimed batch, the rows that are copies of a notification the person has read or acted on
    /// (its entry `is_read`, or an action recorded) that is quiet once read — written while its type was
    /// (`inbox.quiet_once_read`) and its type still is, as the read's own trigger decides — as
    /// `herald_waiting_copies` names copies
    /// (sql/058_quiet_once_read.sql): read after the claim took them, so the read's own withdrawal left
    /// them to this pass, or enqueued into the notification after the read. The decision skips them
    /// `read_elsewhere`, recorded through the pass's fenced record like any decision.
    ///
    /// Read in the pass's own partition when it is pinned to one, and by recipient too, so a queue
    /// split by recipient is read only where the batch's rows are. While no type is quiet once read, the
    /// `exists` is false once for the statement and the server reads no entry at all.
    ///
    ///     try store.readElsewhere(batch)   // [the SMS copy's id] once the push was opened
    func readElsewhere(_ items: [QueueItem]) throws -> Set<UUID> {
        guard !items.isEmpty else { return [] }
        let ids = items.map(\.id)
        let recipients = Array(Set(items.map(\.recipientUserId)))
        var read: Set<UUID> = []
        for row in try db.query("""
            select q.id
              from \(queue) q
              join inbox i on i.user_id = q.recipient_user_id
                          and i.notification_key = coalesce(q.notification_group, q.id::text)
              join notification_types t on t.type = i.type and t.quiet_once_read
             where exists (select 1 from notification_types o where o.quiet_once_read)
               and q.id = any(\(ids)::uuid[]) and q.recipient_user_id = any(\(recipients)::uuid[])
               and (i.is_read or i.action is not null) and i.quiet_once_read
               and q.id in (select herald_waiting_copies(i.user_id, i.notification_key, i.queue_id))
            """) {
            if let id = row["id"].uuid { read.insert(id) }
        }
        return read
    }
}

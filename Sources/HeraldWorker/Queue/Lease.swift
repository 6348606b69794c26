import HeraldPostgres

/// A claimed row's lease, defined once, like `QueueStore.due`: the claim, lease recovery, the records'
/// fence, `herald status` and the operator verbs all ask through these, of a queue aliased `q`.
///
///     "select count(*) from notification_queue q where \(Lease.expired)"
enum Lease {
    /// Claimed and still held: its pass may still record it, and nothing else touches it.
    static let live: SQL = "(q.status = 'processing' and q.locked_until >= now())"
    /// Claimed, and its lease ran out: its pass died or overran; recovery returns it to the queue.
    static let expired: SQL = "(q.status = 'processing' and q.locked_until < now())"

    /// Held by `passId`: the fence of that pass's records (a pass that overran its lease cannot
    /// overwrite the work of the pass that took its rows over).
    static func heldBy(_ passId: String) -> SQL { "(q.status = 'processing' and q.locked_by = \(passId))" }

    /// Held under a live lease by a pass other than `passId`: the claim leaves their recipients out.
    static func heldByAnother(_ passId: String) -> SQL { "(\(live) and q.locked_by <> \(passId))" }
}

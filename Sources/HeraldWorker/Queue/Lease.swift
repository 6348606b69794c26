import HeraldPostgres

/// A claimed row's lease, defined once, like `QueueStore.due`: the claim, lease recovery, the records'
/// fence, `herald status` and the operator verbs all ask through these, of a queue aliased `q`.
///
/// A claim leaves a row `pending` and sets its lease (`locked_until`, `locked_by`): columns no index
/// holds, so the claim is a HOT update. A row the previous release claimed is `processing` with a
/// lease; it is read exactly as a pending leased row.
///
///     "select count(*) from notification_queue q where \(Lease.expired)"
enum Lease {
    /// The statuses a leased row has: `pending`, or `processing` from the previous release's claim.
    static let leasable: SQL = "q.status in ('pending', 'processing')"
    /// Claimed, by a lease live or expired: what `herald status` and `--status processing` show as
    /// processing.
    static let claimed: SQL = "(\(leasable) and q.locked_until is not null)"
    /// Claimed and still held: its pass may still record it, and nothing else touches it. Never null,
    /// so `not \(live)` holds for an unleased row.
    static let live: SQL = live(at: "now()")
    /// Claimed, and its lease ran out: its pass died or overran; recovery returns it to the queue.
    static let expired: SQL = "(\(leasable) and q.locked_until is not null and q.locked_until < now())"
    /// Not held under a live lease: what the claim may take (an expired lease is taken over).
    static let notLive: SQL = notLive(at: "now()")

    /// `live` at the lease time `time` (`PassClock.lease`: the database's `now()`, moved by a test).
    static func live(at time: SQL) -> SQL {
        "(\(leasable) and q.locked_until is not null and q.locked_until >= \(time))"
    }

    /// `notLive` at the lease time `time` (`PassClock.lease`).
    static func notLive(at time: SQL) -> SQL { "(q.locked_until is null or q.locked_until < \(time))" }

    /// The status as shown (`herald status`, `herald explain`, the operator verbs' `--status`): a
    /// claimed row is `processing`.
    static let shownStatus: SQL = "(case when \(claimed) then 'processing' else q.status end)"

    /// Held by the pass whose id `passColumn` holds (`r.pass` in the record): the fence of that pass's
    /// records (a pass that overran its lease cannot overwrite the work of the pass that took its rows
    /// over).
    static func heldBy(column passColumn: SQL) -> SQL { "(\(leasable) and q.locked_by = \(passColumn))" }

    /// Held under a live lease by a pass other than `passId`: the claim leaves their recipients out.
    static func heldByAnother(_ passId: String, at time: SQL = "now()") -> SQL {
        "(\(live(at: time)) and q.locked_by <> \(passId))"
    }
}

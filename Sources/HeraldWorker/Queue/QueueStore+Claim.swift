import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {

    /// A queue row as `item(_:)` reads it, by position: keep the two in the same order.
    static let itemColumns = """
        id, recipient_user_id, member_user_id, alert_state_id, channel, kind, severity, priority,
        payload::text as payload, scheduled_at, created_at, run_after, attempts, max_attempts, dedupe_key,
        notification_group
        """

    /// The names of `itemColumns`, in its order: what a select reads from a part that returned them.
    static let itemNames = """
        id, recipient_user_id, member_user_id, alert_state_id, channel, kind, severity, priority, payload,
        scheduled_at, created_at, run_after, attempts, max_attempts, dedupe_key, notification_group
        """

    /// The rows a claim may take at `now`, of a queue aliased `q`: the one definition of "due" for the
    /// claim, the dry run, the unroutable and paused counts and `herald status`. A row under a live
    /// lease (at the lease time `lease`, `PassClock.lease`) stays `pending` but is not due; one whose
    /// lease expired is taken over.
    static func due(_ now: Date, lease: SQL = "now()") -> SQL {
        "\(waiting) and q.run_after <= \(now) and \(Lease.notLive(at: lease))"
    }

    /// Rows a claim will take once their `run_after` comes: the notification_queue_due index's
    /// predicate, with tries left. Of a queue aliased `q`.
    static let waiting: SQL = "(q.status = 'pending' or (q.status = 'failed' and not q.permanent)) and q.attempts < q.max_attempts"

    /// Not held back by an operator's pause (`herald pause`): of a queue aliased `q`.
    static let notPaused: SQL = """
        not exists (select 1 from herald_pauses hp
                     where (hp.channel is null or hp.channel = q.channel) and (hp.kind is null or hp.kind = q.kind))
        """

    /// The channels herald knows. A row with any other channel is claimed whatever the routes, so the
    /// decision can fail it with a readable last_error instead of leaving it pending forever.
    static let knownChannels = Channel.allCases.map(\.rawValue)

    /// Claims up to `limit` due rows for this pass; see ``claim(limit:now:channels:leaseSeconds:)``.
    public func claimRows(limit: Int, now: Date, channels: [Channel], leaseSeconds: Int) throws -> [Claimed] {
        try claim(limit: limit, now: now, channels: channels, leaseSeconds: leaseSeconds).rows
    }

    /// Advisory lock class of the claim's per-recipient locks ("hrld"); the key is a bucket of the
    /// recipient's id, so a claim holds at most `recipientBuckets` locks whatever its size.
    static let recipientLockClass: Int32 = 0x6872_6C64
    static let recipientBuckets = 1024

    /// Claims up to `limit` due rows for this pass in one short transaction: SKIP LOCKED so concurrent
    /// passes split the queue, the `limit` inside the locking subquery (`… limit n for update skip
    /// locked`) so no more than `limit` rows are locked, and a lease so a dead pass's rows come back.
    /// The claim writes no trail row of its own: the record's event carries the attempt and the pass,
    /// and a pass that dies leaves its lease, which the `recovered` event names (one row written per
    /// claim instead of two). A claimed row stays `pending` (a retried `failed` one becomes `pending`):
    /// the claim sets only the lease and the attempt, which no index holds, so it is a HOT update.
    ///
    /// A recipient's rows are held by one pass at a time, so the per-recipient rate limits hold across
    /// concurrent passes: the first statement takes a transaction-level advisory lock on each
    /// candidate's recipient (bucket), skipping those another claim holds right now; the second — whose
    /// snapshot is taken after those locks, so it sees every claim committed before them — leases the
    /// rest, found again by `ctid`, but for the recipients with rows another pass holds under a live
    /// lease, which it reads first (a batch holding follow-up steps reads them in a statement of its
    /// own, before the steps are settled). The first statement already locks
    /// its candidates (SKIP LOCKED), so claims running at once take different rows instead of the same
    /// first `limit` rows, most of which the other would then leave. `contended` is true when due rows
    /// were left for that reason: the caller may try again shortly rather than take the queue for empty.
    ///
    /// `excluding` leaves out candidates of these recipients (left due, and `contended`): a pipelined
    /// pass claims batch N+1 while batch N's records are still being written on another connection,
    /// and passes batch N's recipients, so a recipient's next row is taken only once its record is
    /// known written — and the rate limits of that later batch read its sends.
    public func claim(limit: Int, now: Date, channels: [Channel], leaseSeconds: Int,
                      excluding: Set<UUID> = []) throws
        -> (rows: [Claimed], contended: Bool) {
        // The rest of the transaction reads rows whose pages were read a moment ago: priced as the
        // cache hits they are (not as reads from disk, PostgreSQL's default). `set local` ends with the
        // transaction, so a pooler in transaction mode is fine.
        try db.transaction(setLocal: ["random_page_cost": "1.1"]) { db in
            let (candidates, mine, steps) = try lockCandidates(db, limit: limit, now: now, channels: channels,
                                                               excluding: excluding)
            guard !mine.isEmpty else { return ([], candidates > 0) }
            try afterCandidates?()
            try leaseTimeForTheTrigger(db)
            let rows: [Claimed]
            if steps.isEmpty {
                rows = try lease(db, mine, leaseSeconds: leaseSeconds, leavingBusy: true)
            } else {
                // Follow-up steps are settled first (a step whose condition is met is skipped, not
                // sent), and only those of free recipients: the busy recipients are read on their own.
                let busy = try busyRecipients(db, Set(mine.map(\.recipient)))
                let settled = try QueueStore.settleFollowUps(
                    db, mine.filter { !busy.contains($0.recipient) && steps.contains($0.id) }.map(\.id), pass: passId)
                let free = mine.filter { !busy.contains($0.recipient) && !settled.contains($0.id) }
                guard !free.isEmpty else { return ([], true) }
                rows = try lease(db, free, leaseSeconds: leaseSeconds, leavingBusy: false)
            }
            return (rows, rows.count < candidates)
        }
    }

    /// A candidate the claim holds: its row, where the row is, its recipient.
    typealias Candidate = (id: UUID, tid: String, recipient: UUID)

    /// The claim's first statement: up to `limit` due rows locked (SKIP LOCKED), each with its
    /// recipient's advisory lock tried. Returns how many were found, those whose recipient lock this
    /// claim took (but not those of `excluding`), and which of them are follow-up steps.
    private func lockCandidates(_ db: PGConnection, limit: Int, now: Date, channels: [Channel],
                                excluding: Set<UUID>) throws -> (found: Int, mine: [Candidate], steps: Set<UUID>) {
        let candidates = try db.query("""
            select id, ctid, recipient_user_id, step, pg_try_advisory_xact_lock(\(QueueStore.recipientLockClass),
                     hashtext(recipient_user_id::text) & \(QueueStore.recipientBuckets - 1)) as mine
              from (select q.id, q.ctid, q.recipient_user_id, q.follow_up_of is not null as step from \(queue) q
                     where \(QueueStore.due(now, lease: clock.lease)) and \(QueueStore.notPaused)
                       and (q.channel = any(\(channels.map(\.rawValue))::text[]) or not q.channel = any(\(QueueStore.knownChannels)::text[]))
                     order by q.priority_rank, q.run_after, q.id
                     limit \(limit)
                     for update skip locked) c
            """)
        var mine: [Candidate] = []
        var steps: Set<UUID> = []  // follow-up steps, settled before the lease
        for row in candidates {
            // By position: id, ctid, recipient_user_id, step, mine.
            guard row.bool(at: 4) == true, let recipient = row.uuid(at: 2),
                  !excluding.contains(recipient), let id = row.uuid(at: 0), let tid = row.string(at: 1) else { continue }
            mine.append((id, tid, recipient))
            if row.bool(at: 3) == true { steps.insert(id) }
        }
        return (candidates.count, mine, steps)
    }

    /// Recipients with rows another pass holds under a live lease. Read after the recipient locks, in
    /// a statement of its own (or a part of the lease's), so its snapshot sees every claim committed
    /// before them. Read only while another pass's note in `herald_lease_holders` lasts past the lease
    /// time: a claim writes its pass's note with its leases, so a lease this snapshot sees comes with
    /// its note, and a pass alone on the queue skips the read, which would find nothing. One read for
    /// the batch, whatever plan the planner picks (as a per-candidate
    /// anti-join, it could rescan every leased row for each candidate: 6× slower with a million rows in
    /// the queue). A leased row is pending, so the status no longer narrows them: the candidates'
    /// waiting rows are read by recipient (notification_queue_waiting_recipient), 1.7 ms a batch of
    /// 1,000 against 5 ms for the plain scan the default costs pick on a queue of 20,000.
    private func busyRead(_ recipients: [UUID]) -> SQL {
        """
        select distinct q.recipient_user_id from \(queue) q
         where exists (select 1 from herald_lease_holders h where h.pass_id <> \(passId) and h.until >= \(clock.lease))
           and q.recipient_user_id = any(\(recipients)::uuid[]) and \(Lease.heldByAnother(passId, at: clock.lease))
        """
    }

    private func busyRecipients(_ db: PGConnection, _ recipients: Set<UUID>) throws -> Set<UUID> {
        Set(try db.query(busyRead(Array(recipients))).compactMap { $0["recipient_user_id"].uuid })
    }

    /// The claim's lease: the candidates updated where they are, found by their physical address and
    /// their key (in a partitioned queue a ctid names a row of each partition, so the id must match
    /// too). This transaction holds their row locks since the first statement, which found them due:
    /// none of them can have moved or changed since, so they are neither re-checked nor locked again
    /// (a pause an operator sets meanwhile is still honoured). `leavingBusy`: the busy recipients'
    /// rows are left out by the same statement (its `busyRead` part, evaluated once), which saves the
    /// batch a statement of its own. `updated_at` is left as it is: it is in the terminal rows' index,
    /// and the claim must stay a HOT update. Priced as cache hits, those lookups beat reading the whole
    /// table on small queues too (20,000 rows: 2.5 ms against 2–9 ms a batch of 1,000). The pass's note
    /// in `herald_lease_holders` (`busyRead`) goes in the same statement: the latest end of its leases.
    private func lease(_ db: PGConnection, _ rows: [Candidate], leaseSeconds: Int, leavingBusy: Bool) throws -> [Claimed] {
        let busy: SQL = leavingBusy
            ? "and not q.recipient_user_id = any(array(" + busyRead(Array(Set(rows.map(\.recipient)))) + "))"
            : ""
        let until: SQL = "\(clock.lease) + make_interval(secs => \(leaseSeconds))"
        let result = try db.query("""
            with u as (
              update \(queue) q
                 set status = 'pending', attempts = q.attempts + 1, locked_until = \(until), locked_by = \(passId)
               where ctid = any(\(rows.map(\.tid))::tid[]) and id = any(\(rows.map(\.id))::uuid[]) and \(QueueStore.notPaused)
                 \(busy)
              returning \(unescaped: QueueStore.itemColumns), priority_rank
            ), note as (
              insert into herald_lease_holders (pass_id, until) select \(passId), \(until) where exists (select 1 from u)
              on conflict (pass_id) do update set until = greatest(herald_lease_holders.until, excluded.until)
            )
            select \(unescaped: QueueStore.itemNames) from u
            order by priority_rank, run_after, id
            """)
        return result.compactMap { row in
            QueueStore.item(row).map { Claimed(item: $0, maxAttempts: row.int(at: 13) ?? 5) }
        }
    }

    /// Where a test moved the clock (`ClockShift`), tells the queue's `herald_queue_lease_held` trigger
    /// (sql/060) the lease time of this transaction, so that a lease expired at that time is taken
    /// over as at the database's own time. Nothing is sent outside tests.
    func leaseTimeForTheTrigger(_ db: PGConnection) throws {
        guard clock.shiftSeconds != 0 else { return }
        _ = try db.query("select set_config('herald.lease_shift', \(String(clock.shiftSeconds)), true)")
    }

    /// The rows a claim would take, without taking them: `--dry-run`.
    public func peekDue(limit: Int, now: Date, channels: [Channel]) throws -> [QueueItem] {
        let result = try db.query("""
            select \(unescaped: QueueStore.itemColumns) from \(queue) q
             where \(QueueStore.due(now, lease: clock.lease)) and \(QueueStore.notPaused)
               and (channel = any(\(channels.map(\.rawValue))::text[]) or not channel = any(\(QueueStore.knownChannels)::text[]))
             order by priority_rank, run_after, id
             limit \(limit)
            """)
        return result.compactMap(QueueStore.item)
    }

    /// Due rows of known channels that no adapter of this run serves: they stay pending and are reported.
    /// A run that serves every channel has none, and reads nothing.
    public func countUnroutable(now: Date, channels: [Channel]) throws -> [String: Int] {
        guard !Set(Channel.allCases).isSubset(of: channels) else { return [:] }
        let result = try db.query("""
            select channel, count(*)::int as n from \(queue) q
             where \(QueueStore.due(now, lease: clock.lease))
               and channel = any(\(QueueStore.knownChannels)::text[])
               and not (channel = any(\(channels.map(\.rawValue))::text[]))
             group by channel
            """)
        return QueueStore.countsByChannel(result)
    }

    /// `channel, n` rows as a dictionary.
    static func countsByChannel(_ result: PGResult) -> [String: Int] {
        var out: [String: Int] = [:]
        for row in result { out[row["channel"].string ?? "?"] = row["n"].int ?? 0 }
        return out
    }

    /// Due rows an operator's pause holds back, per channel: they stay pending. Without a pause nothing
    /// is counted: the count tests each due row against the pauses, and planned on an empty pause
    /// table's default size it costs enough for the server to compile it (JIT, 24 ms a pass of 20,000
    /// due rows).
    public func countPaused(now: Date) throws -> [String: Int] {
        guard try db.query("select exists (select 1 from herald_pauses) as paused").first?["paused"].bool == true else { return [:] }
        let result = try db.query("""
            select channel, count(*)::int as n from \(queue) q
             where \(QueueStore.due(now, lease: clock.lease)) and not \(QueueStore.notPaused)
             group by channel
            """)
        return QueueStore.countsByChannel(result)
    }

    /// A row of `itemColumns`, read by position (in `itemColumns`' order): a claimed batch's rows are
    /// read without looking up a column's name in each cell.
    static func item(_ row: PGRow) -> QueueItem? {
        guard let id = row.uuid(at: 0), let recipient = row.uuid(at: 1) else { return nil }
        let scheduled = row.date(at: 9) ?? row.date(at: 10) ?? Date(timeIntervalSince1970: 0)
        return QueueItem(
            id: id, recipientUserId: recipient, memberUserId: row.uuid(at: 2),
            alertStateId: row.uuid(at: 3), channelRaw: row.string(at: 4) ?? "",
            kindRaw: row.string(at: 5) ?? "", severity: row.string(at: 6).flatMap(Severity.init(rawValue:)),
            priority: row.string(at: 7).flatMap(Priority.init(rawValue:)) ?? .normal,
            payloadText: row.string(at: 8) ?? "{}", scheduledAt: scheduled,
            createdAt: row.date(at: 10), runAfter: row.date(at: 11),
            attempts: row.int(at: 12) ?? 1, dedupeKey: row.string(at: 14),
            notificationGroup: row.string(at: 15))
    }
}

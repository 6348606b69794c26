import Foundation
import HeraldCore
import HeraldPostgres

/// Which queue rows an operator verb acts on: ids, or a filter (every part given must match).
///
///     var filter = RowFilter()
///     filter.channel = "sms"; filter.status = "failed"
public struct RowFilter: Sendable {
    public var ids: [UUID] = []
    public var channel: String?
    public var kind: String?
    /// As shown: `processing` names the claimed rows (pending under a lease), `pending` the others.
    public var status: String?
    public var recipient: UUID?
    /// Only rows created before this instant (`--older-than`).
    public var createdBefore: Date?

    public init() {}

    /// True when nothing narrows the rows: a verb then refuses to act on the whole queue.
    public var isEmpty: Bool {
        ids.isEmpty && channel == nil && kind == nil && status == nil && recipient == nil && createdBefore == nil
    }

    var sql: SQL {
        """
        (cardinality(\(ids)::uuid[]) = 0 or q.id = any(\(ids)::uuid[]))
        and (\(channel)::text is null or q.channel = \(channel))
        and (\(kind)::text is null or q.kind = \(kind))
        and (\(status)::text is null or \(Lease.shownStatus) = \(status))
        and (\(recipient)::uuid is null or q.recipient_user_id = \(recipient))
        and (\(createdBefore)::timestamptz is null or q.created_at < \(createdBefore))
        """
    }
}

/// What an operator does to rows. Each verb acts only on the rows it applies to, never on a row a pass
/// holds under a live lease (the same fence as records), and writes a trail event with who and why.
public enum OperatorAction: Sendable, Equatable {
    /// Failed rows (retrying or failed for good) back to due now, attempts reset. Their scheduled time
    /// becomes now, so `--max-age` counts from the operator's decision, not the original time.
    case retry
    /// Rows waiting to be sent → skipped, reason `cancelled`.
    case cancel
    /// Rows waiting to be sent → due at this instant, which becomes their scheduled time (`--max-age`).
    case reschedule(Date)
    /// Rows whose lease expired (their pass died) → due now.
    case unlock

    public var event: QueueEvent {
        switch self {
        case .retry: .retried
        case .cancel: .cancelled
        case .reschedule: .rescheduled
        case .unlock: .unlocked
        }
    }

    /// The rows the verb applies to, whatever the filter.
    var applies: SQL {
        switch self {
        case .retry: "q.status = 'failed'"
        case .cancel, .reschedule: "(q.status = 'pending' or (q.status = 'failed' and not q.permanent))"
        case .unlock: Lease.expired
        }
    }

    var set: SQL {
        switch self {
        case .retry:
            // A row that reached a destination keeps one attempt: the next claim makes it attempt 2,
            // so its delivered destinations are looked up and not sent to again (`QueueStore.loadContext`).
            """
            status = 'pending', permanent = false, run_after = now(), scheduled_at = now(), skip_reason = null,
            attempts = case when exists (select from notification_deliveries d
                                          where d.queue_id = q.id and d.outcome = 'delivered') then 1 else 0 end
            """
        case .cancel:
            "status = 'skipped', skip_reason = 'cancelled', permanent = false, locked_until = null, locked_by = null"
        case .reschedule(let at):
            "status = 'pending', run_after = \(at), scheduled_at = \(at), locked_until = null, locked_by = null"
        case .unlock:
            "status = 'pending', run_after = now(), locked_until = null, locked_by = null"
        }
    }
}

/// Runs operator verbs and pauses against the queue.
///
///     let changed = try Operator(db: db, actor: "ops@host", reason: "key rotated")
///         .apply(.retry, to: filter, dryRun: false)
public struct Operator {
    public let db: PGConnection
    /// Who acts, for the trail ("alice@ops-1").
    public let actor: String
    public let reason: String?

    public init(db: PGConnection, actor: String, reason: String?) {
        self.db = db
        self.actor = actor
        self.reason = reason
    }

    /// The ids changed (or, with `dryRun`, that would be), in queue order.
    public func apply(_ action: OperatorAction, to filter: RowFilter, dryRun: Bool) throws -> [UUID] {
        // Rows a pass holds under a live lease are never touched: the same fence as a pass's records.
        let fence: SQL = "not \(Lease.live)"
        if dryRun {
            return try db.query("""
                select q.id from notification_queue q
                 where \(action.applies) and \(fence) and \(filter.sql)
                 order by q.run_after, q.id
                """).compactMap { $0[0].uuid }
        }
        let details = JSONValue.object(["by": .string(actor), "reason": reason.map(JSONValue.string) ?? .null]).pgJSONText
        return try db.transaction { db in
            try db.query("""
                with target as (
                  select q.id from notification_queue q
                   where \(action.applies) and \(fence) and \(filter.sql)
                   for update skip locked
                ), u as (
                  update notification_queue q set \(action.set), updated_at = now()
                    from target where q.id = target.id and \(action.applies)
                  returning q.id, q.run_after
                ), e as (
                  insert into notification_events (queue_id, event, reason, details)
                  select id, \(action.event.rawValue), \(reason), \(details)::jsonb from u
                )
                select id from u order by run_after, id
                """).compactMap { $0[0].uuid }
        }
    }

    /// Pauses a channel, a kind, or a kind on a channel for every pass on every host, until resumed.
    /// Returns false when that pause already exists.
    @discardableResult
    public func pause(channel: String?, kind: String?) throws -> Bool {
        guard channel != nil || kind != nil else { throw ConfigError("pause needs --channel or --kind") }
        return try db.execute("""
            insert into herald_pauses (channel, kind, reason, paused_by) values (\(channel), \(kind), \(reason), \(actor))
            on conflict do nothing
            """) == 1
    }

    /// Lifts the pause with exactly this scope. Returns false when there was none.
    @discardableResult
    public func resume(channel: String?, kind: String?) throws -> Bool {
        try db.execute("""
            delete from herald_pauses
             where coalesce(channel, '') = coalesce(\(channel)::text, '') and coalesce(kind, '') = coalesce(\(kind)::text, '')
            """) > 0
    }

    /// The pauses in force.
    public static func pauses(_ db: PGConnection) throws -> [JSONValue] {
        try db.query("select channel, kind, reason, paused_by, paused_at from herald_pauses order by paused_at").map { row in
            .object(["channel": row["channel"].string.map(JSONValue.string) ?? .null,
                     "kind": row["kind"].string.map(JSONValue.string) ?? .null,
                     "reason": row["reason"].string.map(JSONValue.string) ?? .null,
                     "paused_by": row["paused_by"].string.map(JSONValue.string) ?? .null,
                     "paused_at": row["paused_at"].date.map { .string(ISO8601.string($0)) } ?? .null])
        }
    }
}

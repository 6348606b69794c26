import Foundation
import HeraldCore
import HeraldPostgres

/// The queue's SQL: claim, context, record, housekeeping. Every value is a bound parameter; every
/// statement works on a whole batch; no statement here is ever run while a network request is in flight
/// inside the same transaction.
/// A claimed row and how many attempts it may use.
public struct Claimed: Sendable {
    public var item: QueueItem
    public var maxAttempts: Int
}

public struct QueueStore {
    public let db: PGConnection
    public let passId: String

    public init(db: PGConnection, passId: String) {
        self.db = db
        self.passId = passId
    }

    /// Advisory lock keys: housekeeping that only one pass at a time should do.
    static let housekeepingLock = 0x6865_7261_6C64_01  // "herald" + 1

    // MARK: - Housekeeping

    /// Returns rows whose lease expired (their pass died or overran) to the due set, or fails them for
    /// good when their attempts are used up. Runs only in the pass that wins the advisory lock.
    @discardableResult
    public func recoverExpiredLeases() throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(QueueStore.housekeepingLock)) as ok")
                .first?["ok"].bool == true else { return 0 }
            let rows = try db.query("""
                with expired as (
                  select id from notification_queue
                   where status = 'processing' and locked_until < now()
                   for update skip locked
                ), x as (
                  update notification_queue q
                     set status = case when q.attempts >= q.max_attempts then 'failed' else 'pending' end,
                         permanent = q.attempts >= q.max_attempts,
                         last_error = 'lease expired: pass ' || coalesce(q.locked_by, '?')
                                      || ' did not record attempt ' || q.attempts,
                         locked_until = null, locked_by = null, updated_at = now()
                    from expired where q.id = expired.id
                  returning q.id, q.attempts, q.status
                ), e as (
                  insert into notification_events (queue_id, pass_id, event, reason, details)
                  select id, \(passId), 'recovered', 'lease_expired',
                         jsonb_build_object('attempts', attempts, 'status', status) from x
                )
                select count(*)::int as n from x
                """)
            return rows.first?["n"].int ?? 0
        }
    }

    /// Deletes terminal rows (sent, skipped, failed for good) untouched for `retentionDays`, a chunk at a
    /// time so one pass never holds many locks. Their deliveries and events go with them.
    @discardableResult
    public func pruneTerminal(retentionDays: Int, limit: Int = 5000) throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(QueueStore.housekeepingLock + 1)) as ok")
                .first?["ok"].bool == true else { return 0 }
            return try db.execute("""
                delete from notification_queue where id in (
                  select id from notification_queue
                   where (status in ('sent', 'skipped') or (status = 'failed' and permanent))
                     and updated_at < now() - make_interval(days => \(retentionDays))
                   limit \(limit)
                   for update skip locked)
                """)
        }
    }

    // MARK: - Claim

    static let itemColumns = """
        id, recipient_user_id, member_user_id, alert_state_id, channel, kind, severity, priority,
        payload::text as payload, scheduled_at, created_at, run_after, attempts, max_attempts, dedupe_key
        """

    /// The channels herald knows. A row with any other channel is claimed whatever the routes, so the
    /// decision can fail it with a readable last_error instead of leaving it pending forever.
    static let knownChannels = Channel.allCases.map(\.rawValue)

    /// Claims up to `limit` due rows for this pass in one short transaction: SKIP LOCKED so concurrent
    /// passes split the queue, a materialised CTE so no more than `limit` rows are locked, and a lease
    /// so a dead pass's rows come back. Appends a `claimed` event per row in the same statement.
    public func claimRows(limit: Int, now: Date, channels: [String], leaseSeconds: Int) throws -> [Claimed] {
        let result = try db.query("""
            with c as materialized (
              select id from notification_queue
               where (status = 'pending' or (status = 'failed' and not permanent))
                 and run_after <= \(now) and attempts < max_attempts
                 and (channel = any(\(channels)::text[]) or not channel = any(\(QueueStore.knownChannels)::text[]))
               order by priority_rank, run_after, id
               limit \(limit)
               for update skip locked
            ), u as (
              update notification_queue q
                 set status = 'processing', attempts = q.attempts + 1,
                     locked_until = now() + make_interval(secs => \(leaseSeconds)),
                     locked_by = \(passId), updated_at = now()
                from c where q.id = c.id
              returning q.*
            ), e as (
              insert into notification_events (queue_id, pass_id, event, details)
              select id, \(passId), 'claimed', jsonb_build_object('attempt', attempts) from u
            )
            select \(unescaped: QueueStore.itemColumns) from u
            order by priority_rank, run_after, id
            """)
        return result.compactMap { row in
            QueueStore.item(row).map { Claimed(item: $0, maxAttempts: row["max_attempts"].int ?? 5) }
        }
    }

    /// The rows a claim would take, without taking them: `--dry-run`.
    public func peekDue(limit: Int, now: Date, channels: [String]) throws -> [QueueItem] {
        let result = try db.query("""
            select \(unescaped: QueueStore.itemColumns) from notification_queue
             where (status = 'pending' or (status = 'failed' and not permanent))
               and run_after <= \(now) and attempts < max_attempts
               and (channel = any(\(channels)::text[]) or not channel = any(\(QueueStore.knownChannels)::text[]))
             order by priority_rank, run_after, id
             limit \(limit)
            """)
        return result.compactMap(QueueStore.item)
    }

    /// Due rows of known channels that no adapter of this run serves: they stay pending and are reported.
    public func countUnroutable(now: Date, channels: [String]) throws -> [String: Int] {
        let result = try db.query("""
            select channel, count(*)::int as n from notification_queue
             where (status = 'pending' or (status = 'failed' and not permanent))
               and run_after <= \(now) and attempts < max_attempts
               and channel = any(\(QueueStore.knownChannels)::text[])
               and not (channel = any(\(channels)::text[]))
             group by channel
            """)
        var out: [String: Int] = [:]
        for row in result { out[row["channel"].string ?? "?"] = row["n"].int ?? 0 }
        return out
    }

    static func item(_ row: PGRow) -> QueueItem? {
        guard let id = row["id"].uuid, let recipient = row["recipient_user_id"].uuid else { return nil }
        let scheduled = row["scheduled_at"].date ?? row["created_at"].date ?? Date(timeIntervalSince1970: 0)
        return QueueItem(
            id: id, recipientUserId: recipient, memberUserId: row["member_user_id"].uuid,
            alertStateId: row["alert_state_id"].uuid, channelRaw: row["channel"].string ?? "",
            kindRaw: row["kind"].string ?? "", severity: row["severity"].string.flatMap(Severity.init(rawValue:)),
            priority: row["priority"].string.flatMap(Priority.init(rawValue:)) ?? .normal,
            payloadText: row["payload"].string ?? "{}", scheduledAt: scheduled,
            createdAt: row["created_at"].date, runAfter: row["run_after"].date,
            attempts: row["attempts"].int ?? 1, dedupeKey: row["dedupe_key"].string)
    }

    // MARK: - Record

    /// Writes one flush in one transaction: first the rows' outcomes, fenced — only rows still
    /// `processing` under this pass's lease are touched, so a pass that overran its lease cannot
    /// overwrite the work of the pass that took the row over — then, for the rows actually recorded,
    /// their trail, deliveries, inbox entries, dead tokens, opted-out channels, receipts to check and
    /// forecast flags. Two statements, neither joining one batch-sized set to another, so the cost
    /// stays linear in the batch. Returns the ids recorded.
    @discardableResult
    public func record(_ batch: RecordBatch) throws -> Set<UUID> {
        guard !batch.isEmpty else { return [] }
        return try db.transaction { db in
            // pgJSONText: delivery errors quote providers, whose answers may hold NULs (jsonb refuses \u0000).
            let rows = JSONValue.array(batch.rows.map(\.json)).pgJSONText
            let recorded = Set(try db.query("""
                update notification_queue q
                   set status = r.status, permanent = r.permanent, last_error = r.last_error,
                       skip_reason = r.skip_reason, run_after = coalesce(r.run_after, q.run_after),
                       sent_at = coalesce(r.sent_at, q.sent_at),
                       provider_message_id = coalesce(r.provider_message_id, q.provider_message_id),
                       attempts = greatest(q.attempts + r.attempts_delta, 0),
                       locked_until = null, locked_by = null, updated_at = now()
                  from jsonb_to_recordset(\(rows)::jsonb) as r(
                    id uuid, status text, permanent boolean, last_error text, skip_reason text,
                    run_after timestamptz, sent_at timestamptz, provider_message_id text, attempts_delta int)
                 where q.id = r.id and q.status = 'processing' and q.locked_by = \(passId)
                returning q.id
                """).compactMap { $0["id"].uuid })
            guard !recorded.isEmpty else { return [] }
            let kept = batch.keeping(recorded)
            func json<T>(_ xs: [T], _ f: (T) -> JSONValue) -> String { JSONValue.array(xs.map(f)).pgJSONText }
            try db.execute("""
                with ev as (
                  insert into notification_events (queue_id, pass_id, event, reason, details)
                  select r.id, \(passId), r.event, r.reason, r.details
                    from jsonb_to_recordset(\(json(kept.rows) { $0.json })::jsonb) as r(id uuid, event text, reason text, details jsonb)
                ), d as (
                  insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination,
                    device_token_id, outcome, http_status, provider_error_code, provider_message_id, error, latency_ms)
                  select x.queue_id, \(passId), x.attempt, x.channel, x.provider, x.destination, x.device_token_id,
                         x.outcome, x.http_status, x.provider_error_code, x.provider_message_id, x.error, x.latency_ms
                    from jsonb_to_recordset(\(json(kept.deliveries) { $0.json })::jsonb) as x(
                      queue_id uuid, attempt int, channel text, provider text, destination text,
                      device_token_id uuid, outcome text, http_status int, provider_error_code text,
                      provider_message_id text, error text, latency_ms int)
                ), i as (
                  insert into inbox (user_id, queue_id, type, priority, title, body, deep_link, data)
                  select x.user_id, x.queue_id, x.type, x.priority, x.title, x.body, x.deep_link, x.data
                    from jsonb_to_recordset(\(json(kept.inbox) { $0.json })::jsonb) as x(
                      queue_id uuid, user_id uuid, type text, priority text, title text, body text,
                      deep_link text, data jsonb)
                  on conflict (queue_id) do nothing
                ), t as (
                  update device_tokens dt
                     set is_active = false, deactivated_at = now(), deactivated_reason = x.reason, updated_at = now()
                    from jsonb_to_recordset(\(json(kept.deactivations) { $0.json })::jsonb) as x(id uuid, reason text)
                   where dt.id = x.id and dt.is_active
                ), o as (
                  update user_profiles p
                     set notify_sms = case when x.channel = 'sms' then false else p.notify_sms end,
                         notify_sms_disabled_reason = case when x.channel = 'sms' then x.reason else p.notify_sms_disabled_reason end,
                         notify_whatsapp = case when x.channel = 'whatsapp' then false else p.notify_whatsapp end,
                         notify_whatsapp_disabled_reason = case when x.channel = 'whatsapp' then x.reason else p.notify_whatsapp_disabled_reason end,
                         notify_email = case when x.channel = 'email' then false else p.notify_email end,
                         champion_notify_email = case when x.channel = 'email' then false else p.champion_notify_email end,
                         notify_email_disabled_reason = case when x.channel = 'email' then x.reason else p.notify_email_disabled_reason end,
                         updated_at = now()
                    from jsonb_to_recordset(\(json(kept.optOuts) { $0.json })::jsonb) as x(user_id uuid, channel text, reason text)
                   where p.user_id = x.user_id
                ), k as (
                  insert into push_receipts (queue_id, provider, ticket_id, device_token_id, created_at)
                  select x.queue_id, x.provider, x.ticket_id, x.device_token_id, coalesce(x.created_at, now())
                    from jsonb_to_recordset(\(json(kept.tickets) { $0.json })::jsonb) as x(
                      queue_id uuid, provider text, ticket_id text, device_token_id uuid, created_at timestamptz)
                  on conflict (ticket_id) do nothing
                )
                update daily_forecasts df
                   set notification_sent = true, notification_sent_at = now(), updated_at = now()
                  from jsonb_to_recordset(\(json(kept.forecastsSent) { $0.json })::jsonb) as x(user_id uuid, date date)
                 where df.user_id = x.user_id and df.forecast_date = x.date and not df.notification_sent
                """)
            return recorded
        }
    }
}

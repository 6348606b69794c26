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
    /// The partition a pinned pass (`--shard K/N`) works in; nil: the whole queue.
    public let shard: Shard?
    /// Runs inside the claim, once its candidates are locked and before they are updated: where a
    /// test does what an operator or another pass could do at that moment. Nil outside tests.
    var afterCandidates: (() throws -> Void)?

    public init(db: PGConnection, passId: String, shard: Shard? = nil) {
        self.db = db
        self.passId = passId
        self.shard = shard
    }

    /// The table this pass claims, reads and records in: the queue, or its shard's partition — so each
    /// statement of a pinned pass touches one partition (on Citus, one shard).
    var queue: SQL { SQL(unescaped: shard?.table ?? "notification_queue") }

    /// A housekeeping lock key of this pass's part of the queue: pinned passes of different shards do
    /// their partitions' housekeeping side by side.
    func lockKey(_ base: Int) -> Int { base + (shard.map { ($0.index + 1) << 8 } ?? 0) }

    /// Whether the database's queue has `shard.count` partitions; throws a readable error if not.
    public static func checkShard(_ shard: Shard, db: PGConnection) throws {
        let partitions = try db.query("select herald_queue_partitions() as n").first?["n"].int ?? 1
        guard partitions == shard.count else {
            throw ShardMismatch(shard: shard, partitions: partitions)
        }
    }

    /// Advisory lock keys: housekeeping that only one pass at a time should do.
    static let housekeepingLock = 0x6865_7261_6C64_01  // "herald" + 1

    // MARK: - Housekeeping

    /// Returns rows whose lease expired (their pass died or overran) to the due set, or fails them for
    /// good when their attempts are used up. Runs only in the pass that wins the advisory lock.
    @discardableResult
    public func recoverExpiredLeases() throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(lockKey(QueueStore.housekeepingLock))) as ok")
                .first?["ok"].bool == true else { return 0 }
            let rows = try db.query("""
                with expired as (
                  select id from \(queue)
                   where status = 'processing' and locked_until < now()
                   for update skip locked
                ), x as (
                  update \(queue) q
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
    /// time so one pass never holds many locks. Their trail and deliveries stay (kept for the audit
    /// retention): each row leaves a `pruned` event with what it was, without its payload. Then drops
    /// `notification_history` entries older than `historyRetentionDays` at the pass's `now` (a chunk of
    /// `limit` too): their `delivered_time` is the pass's clock too, so a pass run with `--now` in the
    /// past never takes the history it has just written for a month old.
    @discardableResult
    public func pruneTerminal(retentionDays: Int, now: Date, limit: Int = 5000) throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(lockKey(QueueStore.housekeepingLock + 1))) as ok")
                .first?["ok"].bool == true else { return 0 }
            let pruned = try db.query("""
                with d as (
                  delete from \(queue) where id in (
                    select id from \(queue)
                     where (status in ('sent', 'skipped') or (status = 'failed' and permanent))
                       and updated_at < now() - make_interval(days => \(retentionDays))
                     limit \(limit)
                     for update skip locked)
                  returning id, recipient_user_id, member_user_id, channel, kind, severity, priority, status,
                            skip_reason, attempts, max_attempts, permanent, last_error, scheduled_at, sent_at,
                            created_at, provider_message_id
                ), e as (
                  insert into notification_events (queue_id, pass_id, event, reason, details)
                  select id, \(passId), 'pruned', status, jsonb_strip_nulls(jsonb_build_object(
                           'recipient_user_id', recipient_user_id, 'member_user_id', member_user_id,
                           'channel', channel, 'kind', kind, 'severity', severity, 'priority', priority,
                           'status', status, 'skip_reason', skip_reason, 'attempts', attempts,
                           'max_attempts', max_attempts, 'permanent', permanent, 'last_error', last_error,
                           'scheduled_at', scheduled_at, 'sent_at', sent_at, 'created_at', created_at,
                           'provider_message_id', provider_message_id))
                    from d
                )
                select count(*)::int as n from d
                """).first?["n"].int ?? 0
            // Seed 001 §Storage: the notification history is kept 30 days, whatever the queue's retention.
            try db.execute("""
                delete from notification_history where id in (
                  select id from notification_history
                   where delivered_time < \(now)::timestamptz - make_interval(days => \(QueueStore.historyRetentionDays))
                   limit \(limit))
                """)
            return pruned
        }
    }

    /// How long `notification_history` keeps a notification (seed 001 §Storage).
    public static let historyRetentionDays = 30

    /// The audit trail's tables, in monthly partitions named `<table>_YYYY_MM` (sql/011).
    static let auditTables = ["notification_events", "notification_deliveries"]

    /// Whether `maintainAuditTrail` has anything to do: a partition of this month or the next three
    /// missing, or one named for a month that ended more than `retentionDays` ago. One plain catalog
    /// read, where the upkeep's functions cost a pass with nothing to do about 3 ms of its ~9 ms of
    /// server time. (A partition named otherwise is dropped by the upkeep when a month turns.)
    func auditTrailNeedsUpkeep(retentionDays: Int) throws -> Bool {
        try db.query("""
            select exists (
                     select 1 from unnest(\(QueueStore.auditTables)::text[]) as t(name),
                                   generate_series(date_trunc('month', now()), date_trunc('month', now()) + interval '3 months',
                                                   interval '1 month') as m(month)
                      where to_regclass(t.name || '_' || to_char(m.month, 'YYYY_MM')) is null)
                or exists (
                     select 1 from pg_inherits i join pg_class c on c.oid = i.inhrelid
                      where i.inhparent in (select to_regclass(name) from unnest(\(QueueStore.auditTables)::text[]) as t(name))
                        and c.relname ~ '_[0-9]{4}_(0[1-9]|1[0-2])$'
                        and to_date(right(c.relname, 7), 'YYYY_MM') + interval '1 month'
                            <= now() - make_interval(days => \(retentionDays))) as due
            """).first?["due"].bool ?? true
    }

    /// Keeps the audit trail's monthly partitions: creates those of the next three months, and drops
    /// the ones that ended more than `retentionDays` ago (whole partitions, no row deletes). Runs in
    /// the pass that wins the advisory lock, and waits at most 2 s for the tables' locks.
    /// Returns the partitions dropped.
    @discardableResult
    public func maintainAuditTrail(retentionDays: Int) throws -> Int {
        guard try auditTrailNeedsUpkeep(retentionDays: retentionDays) else { return 0 }
        return try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(QueueStore.housekeepingLock + 2)) as ok")
                .first?["ok"].bool == true else { return 0 }
            try db.execute("set local lock_timeout = '2s'")
            var dropped = 0
            for table in QueueStore.auditTables {
                _ = try db.query("""
                    select herald_audit_partitions(\(table)::regclass, now()::date, now()::date, 3)
                    """)
                dropped += try db.query("""
                    select herald_audit_drop_before(\(table)::regclass, now() - make_interval(days => \(retentionDays))) as n
                    """).first?["n"].int ?? 0
            }
            return dropped
        }
    }

    // MARK: - Claim

    static let itemColumns = """
        id, recipient_user_id, member_user_id, alert_state_id, channel, kind, severity, priority,
        payload::text as payload, scheduled_at, created_at, run_after, attempts, max_attempts, dedupe_key,
        notification_group
        """

    /// The rows a claim may take at `now`, of a queue aliased `q`: the one definition of "due" for the
    /// claim, the dry run, the unroutable and paused counts and `herald status`.
    static func due(_ now: Date) -> SQL {
        "(q.status = 'pending' or (q.status = 'failed' and not q.permanent)) and q.run_after <= \(now) and q.attempts < q.max_attempts"
    }

    /// Not held back by an operator's pause (`herald pause`): of a queue aliased `q`.
    static let notPaused: SQL = """
        not exists (select 1 from herald_pauses hp
                     where (hp.channel is null or hp.channel = q.channel) and (hp.kind is null or hp.kind = q.kind))
        """

    /// The channels herald knows. A row with any other channel is claimed whatever the routes, so the
    /// decision can fail it with a readable last_error instead of leaving it pending forever.
    static let knownChannels = Channel.allCases.map(\.rawValue)

    /// Claims up to `limit` due rows for this pass; see ``claim(limit:now:channels:leaseSeconds:)``.
    public func claimRows(limit: Int, now: Date, channels: [String], leaseSeconds: Int) throws -> [Claimed] {
        try claim(limit: limit, now: now, channels: channels, leaseSeconds: leaseSeconds).rows
    }

    /// Advisory lock class of the claim's per-recipient locks ("hrld"); the key is a bucket of the
    /// recipient's id, so a claim holds at most `recipientBuckets` locks whatever its size.
    static let recipientLockClass: Int32 = 0x6872_6C64
    static let recipientBuckets = 1024

    /// Claims up to `limit` due rows for this pass in one short transaction: SKIP LOCKED so concurrent
    /// passes split the queue, a materialised CTE so no more than `limit` rows are locked, and a lease
    /// so a dead pass's rows come back. The claim writes no trail row of its own: the record's event
    /// carries the attempt and the pass, and a pass that dies leaves its lease, which the `recovered`
    /// event names (one row written per claim instead of two).
    ///
    /// A recipient's rows are held by one pass at a time, so the per-recipient rate limits hold across
    /// concurrent passes: the first statement takes a transaction-level advisory lock on each
    /// candidate's recipient (bucket), skipping those another claim holds right now; the second — whose
    /// snapshot is taken after those locks, so it sees every claim committed before them — reads which
    /// of those recipients have rows another pass holds under a live lease, and they are left out; the
    /// third updates the rest, found again by `ctid`. The first statement already locks
    /// its candidates (SKIP LOCKED), so claims running at once take different rows instead of the same
    /// first `limit` rows, most of which the other would then leave. `contended` is true when due rows
    /// were left for that reason: the caller may try again shortly rather than take the queue for empty.
    ///
    /// `excluding` leaves out candidates of these recipients (left due, and `contended`): a pipelined
    /// pass claims batch N+1 while batch N's records are still being written on another connection,
    /// and passes batch N's recipients, so a recipient's next row is taken only once its record is
    /// known written — and the rate limits of that later batch read its sends.
    public func claim(limit: Int, now: Date, channels: [String], leaseSeconds: Int,
                      excluding: Set<UUID> = []) throws
        -> (rows: [Claimed], contended: Bool) {
        try db.transaction { db in
            let candidates = try db.query("""
                select id, ctid, recipient_user_id, pg_try_advisory_xact_lock(\(QueueStore.recipientLockClass),
                         hashtext(recipient_user_id::text) & \(QueueStore.recipientBuckets - 1)) as mine
                  from (select q.id, q.ctid, q.recipient_user_id from \(queue) q
                         where \(QueueStore.due(now)) and \(QueueStore.notPaused)
                           and (q.channel = any(\(channels)::text[]) or not q.channel = any(\(QueueStore.knownChannels)::text[]))
                         order by q.priority_rank, q.run_after, q.id
                         limit \(limit)
                         for update skip locked) c
                """)
            var mine: [(id: UUID, tid: String, recipient: UUID)] = []
            for row in candidates {
                guard row["mine"].bool == true, let recipient = row["recipient_user_id"].uuid,
                      !excluding.contains(recipient), let id = row["id"].uuid, let tid = row["ctid"].string else { continue }
                mine.append((id, tid, recipient))
            }
            guard !mine.isEmpty else { return ([], candidates.count > 0) }
            try afterCandidates?()
            // Recipients with rows another pass holds under a live lease: this statement's snapshot is
            // taken after the locks above, so it sees every claim committed before them. One read for
            // the batch, whatever plan the planner picks (as a per-candidate anti-join, it could rescan
            // every leased row for each candidate: 6× slower with a million rows in the queue).
            let busy = Set(try db.query("""
                select distinct recipient_user_id from \(queue)
                 where status = 'processing' and recipient_user_id = any(\(Array(Set(mine.map(\.recipient))))::uuid[])
                   and locked_by <> \(passId) and locked_until > now()
                """).compactMap { $0["recipient_user_id"].uuid })
            let free = mine.filter { !busy.contains($0.recipient) }
            guard !free.isEmpty else { return ([], true) }
            let ids = free.map(\.id), tids = free.map(\.tid)
            // The candidates are updated where they are, found by their physical address and their key
            // (in a partitioned queue a ctid names a row of each partition, so the id must match too).
            // This transaction holds their row locks since the first statement, which found them due:
            // none of them can have moved or changed since, so they are neither re-checked nor locked
            // again (a pause an operator sets meanwhile is still honoured). Their pages were read a
            // moment ago: priced as the cache hits they are (not as reads from disk, PostgreSQL's
            // default), those lookups beat reading the whole table on small queues too (20,000 rows:
            // 2.5 ms against 2–9 ms a batch of 1,000). `set local` ends with the transaction, so a
            // pooler in transaction mode is fine.
            try db.execute("set local random_page_cost = 1.1")
            let result = try db.query("""
                with u as (
                  update \(queue) q
                     set status = 'processing', attempts = q.attempts + 1,
                         locked_until = now() + make_interval(secs => \(leaseSeconds)),
                         locked_by = \(passId), updated_at = now()
                   where ctid = any(\(tids)::tid[]) and id = any(\(ids)::uuid[]) and \(QueueStore.notPaused)
                  returning q.*
                )
                select \(unescaped: QueueStore.itemColumns) from u
                order by priority_rank, run_after, id
                """)
            let rows = result.compactMap { row in
                QueueStore.item(row).map { Claimed(item: $0, maxAttempts: row["max_attempts"].int ?? 5) }
            }
            return (rows, rows.count < candidates.count)
        }
    }

    /// The rows a claim would take, without taking them: `--dry-run`.
    public func peekDue(limit: Int, now: Date, channels: [String]) throws -> [QueueItem] {
        let result = try db.query("""
            select \(unescaped: QueueStore.itemColumns) from \(queue) q
             where \(QueueStore.due(now)) and \(QueueStore.notPaused)
               and (channel = any(\(channels)::text[]) or not channel = any(\(QueueStore.knownChannels)::text[]))
             order by priority_rank, run_after, id
             limit \(limit)
            """)
        return result.compactMap(QueueStore.item)
    }

    /// Due rows of known channels that no adapter of this run serves: they stay pending and are reported.
    public func countUnroutable(now: Date, channels: [String]) throws -> [String: Int] {
        let result = try db.query("""
            select channel, count(*)::int as n from \(queue) q
             where \(QueueStore.due(now))
               and channel = any(\(QueueStore.knownChannels)::text[])
               and not (channel = any(\(channels)::text[]))
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

    /// Due rows an operator's pause holds back, per channel: they stay pending.
    public func countPaused(now: Date) throws -> [String: Int] {
        let result = try db.query("""
            select channel, count(*)::int as n from \(queue) q
             where \(QueueStore.due(now)) and not \(QueueStore.notPaused)
             group by channel
            """)
        return QueueStore.countsByChannel(result)
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
            attempts: row["attempts"].int ?? 1, dedupeKey: row["dedupe_key"].string,
            notificationGroup: row["notification_group"].string)
    }

    // MARK: - Record

    /// Writes one flush in one statement, in one transaction: first the rows' outcomes, fenced — only
    /// rows still `processing` under this pass's lease are touched, so a pass that overran its lease
    /// cannot overwrite the work of the pass that took the row over — then, for the rows actually
    /// recorded, their trail (the event carries the attempt: the claim writes none of its own),
    /// deliveries, inbox entries, history entries (rows sent, from the updated rows themselves), dead
    /// tokens, opted-out channels, receipts to check and forecast flags. No part joins one batch-sized
    /// set to another but through the recorded ids, so the cost stays linear in the batch. Returns the
    /// ids recorded.
    @discardableResult
    public func record(_ batch: RecordBatch) throws -> Set<UUID> {
        guard !batch.isEmpty else { return [] }
        // pgJSONText…: delivery errors quote providers, whose answers may hold NULs (jsonb refuses \u0000).
        func json<T>(_ xs: [T], _ f: (T) -> JSONValue) -> String { JSONValue.array(xs.map(f)).pgJSONTextAnyOrder }
        let rows = RowColumns(batch.rows), deliveries = DeliveryColumns(batch.deliveries)
        return try db.transaction { db in
            let recorded = Set(try db.query("""
                with r as materialized (
                  select * from unnest(\(rows.ids)::uuid[], \(rows.statuses)::text[], \(rows.permanent)::boolean[],
                                       \(rows.lastErrors)::text[], \(rows.skipReasons)::text[], \(rows.runAfter)::timestamptz[],
                                       \(rows.sentAt)::timestamptz[], \(rows.providerMessageIds)::text[],
                                       \(rows.attemptsDeltas)::int[], \(rows.events)::text[], \(rows.reasons)::text[],
                                       \(rows.details)::text[], \(rows.titles)::text[], \(rows.bodies)::text[])
                    as r(id, status, permanent, last_error, skip_reason, run_after, sent_at, provider_message_id,
                         attempts_delta, event, reason, details, title, body)
                ), u as (
                  update \(queue) q
                     set status = r.status, permanent = r.permanent, last_error = r.last_error,
                         skip_reason = r.skip_reason, run_after = coalesce(r.run_after, q.run_after),
                         sent_at = coalesce(r.sent_at, q.sent_at),
                         provider_message_id = coalesce(r.provider_message_id, q.provider_message_id),
                         attempts = greatest(q.attempts + r.attempts_delta, 0),
                         locked_until = null, locked_by = null, updated_at = now()
                    from r
                   where q.id = r.id and q.status = 'processing' and q.locked_by = \(passId)
                  returning q.id, q.recipient_user_id, q.channel, q.kind, q.scheduled_at, q.sent_at, q.created_at,
                            q.related_entity_id, q.related_entity_type, q.attempts - r.attempts_delta as attempt,
                            r.status, r.event, r.reason, r.details, r.title, r.body
                ), ev as (
                  insert into notification_events (queue_id, pass_id, event, reason, details)
                  -- The attempt goes first in the details' text, so one parse makes the jsonb (a key of the
                  -- details' own named attempt comes later and wins, as with jsonb's ||).
                  select u.id, \(passId), u.event, u.reason,
                         case when u.details is null then jsonb_build_object('attempt', u.attempt)
                              else ('{"attempt":' || u.attempt || ',' || substr(u.details, 2))::jsonb end
                    from u
                ), d as (
                  insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination,
                    device_token_id, outcome, http_status, provider_error_code, provider_message_id, error, latency_ms)
                  select x.queue_id, \(passId), x.attempt, x.channel, x.provider, x.destination, x.device_token_id,
                         x.outcome, x.http_status, x.provider_error_code, x.provider_message_id, x.error, x.latency_ms
                    from unnest(\(deliveries.queueIds)::uuid[], \(deliveries.attempts)::int[], \(deliveries.channels)::text[],
                                \(deliveries.providers)::text[], \(deliveries.destinations)::text[],
                                \(deliveries.deviceTokenIds)::uuid[], \(deliveries.outcomes)::text[],
                                \(deliveries.httpStatuses)::int[], \(deliveries.errorCodes)::text[],
                                \(deliveries.messageIds)::text[], \(deliveries.errors)::text[], \(deliveries.latencies)::int[])
                      as x(queue_id, attempt, channel, provider, destination, device_token_id, outcome, http_status,
                           provider_error_code, provider_message_id, error, latency_ms)
                   where x.queue_id in (select id from u)
                ), i as (
                  -- The in-app copy's id is its queue row's: one id for the push payload's queue_id,
                  -- the inbox and notification_history.
                  insert into inbox (id, user_id, queue_id, type, priority, title, body, deep_link, data,
                                     title_en, title_ar, body_en, body_ar, image_url)
                  select x.queue_id, x.user_id, x.queue_id, x.type, x.priority, x.title, x.body, x.deep_link, x.data,
                         x.title_en, x.title_ar, x.body_en, x.body_ar, x.image_url
                    from jsonb_to_recordset(\(json(batch.inbox) { $0.json })::jsonb) as x(
                      queue_id uuid, user_id uuid, type text, priority text, title text, body text,
                      deep_link text, data jsonb, title_en text, title_ar text, body_en text, body_ar text,
                      image_url text)
                   where x.queue_id in (select id from u)
                  on conflict do nothing
                ), h as (
                  -- Seed 001's history: every row sent, on any channel, kept 30 days (pruneTerminal).
                  insert into notification_history (id, user_id, channel, notification_type, title, body,
                    scheduled_time, delivered_time, related_entity_id, related_entity_type, created_at)
                  select u.id, u.recipient_user_id, u.channel, u.kind, u.title, u.body, u.scheduled_at,
                         coalesce(u.sent_at, now()), u.related_entity_id, u.related_entity_type, u.created_at
                    from u where u.status = 'sent'
                  -- No conflict target: a repeat is skipped whichever unique key the history has.
                  on conflict do nothing
                ), t as (
                  -- Dead destinations are facts about the destination, whoever recorded the row (but
                  -- only written by a flush that recorded something, as before).
                  update device_tokens dt
                     set is_active = false, deactivated_at = now(), deactivated_reason = x.reason, updated_at = now()
                    from jsonb_to_recordset(\(json(batch.deactivations) { $0.json })::jsonb) as x(id uuid, reason text, before timestamptz)
                   where dt.id = x.id and dt.is_active and exists (select 1 from u)
                     and (dt.last_used_at is null or dt.last_used_at <= x.before)  -- registered again since: kept
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
                    from jsonb_to_recordset(\(json(batch.optOuts) { $0.json })::jsonb) as x(user_id uuid, channel text, reason text)
                   where p.user_id = x.user_id and exists (select 1 from u)
                ), k as (
                  insert into push_receipts (queue_id, provider, ticket_id, device_token_id, created_at)
                  select x.queue_id, x.provider, x.ticket_id, x.device_token_id, coalesce(x.created_at, now())
                    from jsonb_to_recordset(\(json(batch.tickets) { $0.json })::jsonb) as x(
                      queue_id uuid, provider text, ticket_id text, device_token_id uuid, created_at timestamptz)
                   where x.queue_id in (select id from u)
                  on conflict (ticket_id) do nothing
                ), f as (
                  update daily_forecasts df
                     set notification_sent = true, notification_sent_at = now(), updated_at = now()
                    from jsonb_to_recordset(\(json(batch.forecastsSent) { $0.json })::jsonb) as x(
                      queue_id uuid, user_id uuid, date date)
                   where df.user_id = x.user_id and df.forecast_date = x.date and not df.notification_sent
                     and x.queue_id in (select id from u)
                )
                select id from u
                """).compactMap { $0["id"].uuid })
            guard !recorded.isEmpty else { return [] }
            // Escalations of the rows recorded here: their dedupe keys make a repeat a no-op.
            try Enqueuer.insert(batch.keeping(recorded).escalations, db: db, passId: passId)
            return recorded
        }
    }
}

/// `--shard K/N` against a queue that does not have N partitions.
public struct ShardMismatch: Error, CustomStringConvertible {
    public let shard: Shard
    public let partitions: Int

    public var description: String {
        partitions == 1
            ? "--shard \(shard) needs a queue in \(shard.count) partitions, but it is one table: run `herald migrate --queue-partitions \(shard.count)` first"
            : "--shard \(shard) needs a queue in \(shard.count) partitions, but it has \(partitions): pass --shard K/\(partitions)"
    }
}

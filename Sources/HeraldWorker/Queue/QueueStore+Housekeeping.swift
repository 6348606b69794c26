import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {

    /// Returns rows whose lease expired (their pass died or overran) to the due set, or fails them for
    /// good when their attempts are used up. Runs only in the pass that wins the advisory lock.
    @discardableResult
    public func recoverExpiredLeases() throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(lockKey(QueueStore.housekeepingLock))) as ok")
                .first?["ok"].bool == true else { return 0 }
            let rows = try db.query("""
                with expired as (
                  select q.id from \(queue) q
                   where \(Lease.expired)
                   for update of q skip locked
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
            // The notification history is kept 30 days, whatever the queue's retention.
            try db.execute("""
                delete from notification_history where id in (
                  select id from notification_history
                   where delivered_time < \(now)::timestamptz - make_interval(days => \(QueueStore.historyRetentionDays))
                   limit \(limit))
                """)
            return pruned
        }
    }

    /// How long `notification_history` keeps a notification, in days.
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
}

import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {

    /// Returns rows whose lease expired (their pass died or overran) to the due set, or fails them for
    /// good when their attempts are used up. Runs only in the pass that wins the advisory lock.
    ///
    /// A leased row is pending (or `processing`, leased by the previous release), and no index holds
    /// its lease: the pending ones are found among the rows due by `now` (a claim leases only due rows)
    /// through the notification_queue_due index, the `processing` ones through seed 000's
    /// `(status, created_at)` index. A claim may also take an expired lease over by itself.
    @discardableResult
    public func recoverExpiredLeases(now: Date = Date()) throws -> Int {
        try db.transaction { db in
            guard try db.query("select pg_try_advisory_xact_lock(\(lockKey(QueueStore.housekeepingLock))) as ok")
                .first?["ok"].bool == true else { return 0 }
            let rows = try db.query("""
                with leased as (
                  select q.id from \(queue) q
                   where q.status = 'pending' and q.priority_rank in (0, 1, 2)
                     and q.run_after <= greatest(\(clock.lease), \(now)::timestamptz) and q.locked_until < \(clock.lease)
                   for update of q skip locked
                ), processing as (
                  select q.id from \(queue) q
                   where q.status = 'processing' and q.locked_until < \(clock.lease)
                   for update of q skip locked
                ), x as (
                  update \(queue) q
                     set status = case when q.attempts >= q.max_attempts then 'failed' else 'pending' end,
                         permanent = q.attempts >= q.max_attempts,
                         last_error = 'lease expired: pass ' || coalesce(q.locked_by, '?')
                                      || ' did not record attempt ' || q.attempts,
                         locked_until = null, locked_by = null, updated_at = now()
                   where q.id in (select id from leased union all select id from processing)
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
    /// retention): each row leaves a `pruned` event with what it was, without its payload, and a sent
    /// row's delivery is folded into its notification's entry. Then drops the users' notification
    /// entries delivered more than `historyRetentionDays` before the pass's `now` (a chunk of `limit`
    /// too), and those never delivered whose queue rows are gone; then the digests' windows closed that
    /// long ago whose entries are gone, with their items; and the lease notes of passes whose leases
    /// ran out a day ago (`herald_lease_holders`).
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
                            created_at, provider_message_id, notification_group
                ), f as (
                  -- A sent notification's entry keeps when and how it was delivered once its rows go.
                  update inbox i set delivered_at = g.at, channel = coalesce(i.channel, g.channel)
                    from (select recipient_user_id, coalesce(notification_group, id::text) as k,
                                 min(coalesce(sent_at, scheduled_at)) as at,
                                 (array_agg(channel order by sent_at, id))[1] as channel
                            from d where status = 'sent' group by 1, 2) g
                   where i.user_id = g.recipient_user_id and i.notification_key = g.k and i.delivered_at is null
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
            try db.execute(agedEntries(now: now, limit: limit))
            // A digest's window and its items go once its entry has, closed more than those 30 days ago
            // (whichever way the entry went): nothing fires on a delete from inbox.
            try db.execute("""
                delete from notification_digests where id in (
                  select d.id from notification_digests d
                   where d.closed_at < \(now)::timestamptz - make_interval(days => \(QueueStore.historyRetentionDays))
                     and not exists (select 1 from inbox i
                                      where i.user_id = d.user_id and i.notification_key = d.notification_group)
                   order by d.closed_at
                   limit \(limit))
                """)
            // Notes of passes that ended without taking theirs away: past, they no longer count.
            try db.execute("delete from herald_lease_holders where until < now() - interval '1 day'")
            return pruned
        }
    }

    /// The prune's delete of users' notification entries: kept 30 days after their delivery, whatever
    /// the queue's retention; one never delivered goes once its queue row has (it never listed), a
    /// chunk of `limit` each. Each part reads its index (inbox_delivered, inbox_undelivered) from the
    /// oldest entry, so a pass reads only what it deletes: without the order, a planner that takes the
    /// old entries for many (an inbox not analyzed yet) scans every entry for them, 147 ms for a million.
    func agedEntries(now: Date, limit: Int) -> SQL {
        """
        delete from inbox where id in (
          (select id from inbox
            where delivered_at < \(now)::timestamptz - make_interval(days => \(QueueStore.historyRetentionDays))
            order by delivered_at
            limit \(limit))
          union all
          (select i.id from inbox i
            where i.delivered_at is null
              and i.created_at < \(now)::timestamptz - make_interval(days => \(QueueStore.historyRetentionDays))
              and not exists (select 1 from \(queue) q where q.id = i.queue_id)
              and not exists (select 1 from \(queue) q where q.recipient_user_id = i.user_id
                                and q.notification_group = i.notification_key)
            order by i.created_at
            limit \(limit)))
        """
    }

    /// How long a user's notification entry is kept after its delivery, in days.
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

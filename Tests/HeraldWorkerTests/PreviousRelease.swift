import Foundation
import HeraldPostgres

/// The previous release's own statements on the queue, as its passes run them while this release's
/// migrations are applied and until they end: its claim (to `processing`, every column it set then),
/// its record of a send (fenced on `processing`, a trail event and a delivery row per row) and its lease
/// recovery. Copied from that release's `QueueStore`, reduced to sends on the log adapter.
///
///     let ids = try PreviousRelease.claim(db, passId: "old-1", limit: 50, now: seedInstant)
///     try PreviousRelease.recordSent(db, passId: "old-1", ids: ids, now: seedInstant)
enum PreviousRelease {
    /// Claims up to `limit` due rows to `processing`: the candidates with their recipient locks, the
    /// recipients another pass holds (by `processing` alone), then the update found again by `ctid`.
    static func claim(_ db: PGConnection, passId: String, limit: Int, now: Date, leaseSeconds: Int = 600) throws -> [UUID] {
        try db.transaction { db in
            let candidates = try db.query("""
                select id, ctid::text as tid, recipient_user_id,
                       pg_try_advisory_xact_lock(\(Int32(0x6872_6C64)), hashtext(recipient_user_id::text) & 1023) as mine
                  from (select q.id, q.ctid, q.recipient_user_id from notification_queue q
                         where (q.status = 'pending' or (q.status = 'failed' and not q.permanent))
                           and q.attempts < q.max_attempts and q.run_after <= \(now)
                         order by q.priority_rank, q.run_after, q.id
                         limit \(limit)
                         for update skip locked) c
                """)
            let mine = candidates.filter { $0["mine"].bool == true }
            guard !mine.isEmpty else { return [] }
            let busy = Set(try db.query("""
                select distinct q.recipient_user_id from notification_queue q
                 where q.recipient_user_id = any(\(mine.compactMap { $0["recipient_user_id"].uuid })::uuid[])
                   and (q.status = 'processing' and q.locked_until >= now()) and q.locked_by <> \(passId)
                """).compactMap { $0["recipient_user_id"].uuid })
            let free = mine.filter { !busy.contains($0["recipient_user_id"].uuid ?? UUID()) }
            guard !free.isEmpty else { return [] }
            return try db.query("""
                update notification_queue q
                   set status = 'processing', attempts = q.attempts + 1,
                       locked_until = now() + make_interval(secs => \(leaseSeconds)), locked_by = \(passId),
                       updated_at = now()
                 where ctid = any(\(free.compactMap { $0["tid"].string })::tid[])
                   and id = any(\(free.compactMap { $0["id"].uuid })::uuid[])
                returning q.id
                """).compactMap { $0["id"].uuid }
        }
    }

    /// Records `ids` sent, only where this pass still holds them `processing`: the queue row, a `sent`
    /// event carrying the attempt, a delivery row. Returns the ids recorded.
    @discardableResult
    static func recordSent(_ db: PGConnection, passId: String, ids: [UUID], now: Date) throws -> [UUID] {
        try db.transaction { db in
            try db.query("""
                with r as materialized (select * from unnest(\(ids)::uuid[]) as r(id)), u as (
                  update notification_queue q
                     set status = 'sent', permanent = false, last_error = null, skip_reason = null,
                         sent_at = \(now), attempts = greatest(q.attempts, 0),
                         locked_until = null, locked_by = null, updated_at = now()
                    from r
                   where q.id = r.id and (q.status = 'processing' and q.locked_by = \(passId))
                  returning q.id, q.attempts as attempt, q.recipient_user_id
                ), ev as (
                  insert into notification_events (queue_id, pass_id, event, reason, details)
                  select u.id, \(passId), 'sent', 'log', jsonb_build_object('attempt', u.attempt) from u
                ), d as (
                  insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination,
                                                       outcome, latency_ms)
                  select u.id, \(passId), u.attempt, 'in_app', 'log', u.recipient_user_id::text, 'delivered', 0 from u
                )
                select id from u
                """).compactMap { $0["id"].uuid }
        }
    }

    /// Returns `processing` rows whose lease expired to the queue, with a `recovered` event each.
    @discardableResult
    static func recover(_ db: PGConnection, passId: String) throws -> Int {
        try db.query("""
            with expired as (
              select q.id from notification_queue q
               where (q.status = 'processing' and q.locked_until < now())
               for update of q skip locked
            ), x as (
              update notification_queue q
                 set status = case when q.attempts >= q.max_attempts then 'failed' else 'pending' end,
                     permanent = q.attempts >= q.max_attempts,
                     last_error = 'lease expired: pass ' || coalesce(q.locked_by, '?') || ' did not record attempt ' || q.attempts,
                     locked_until = null, locked_by = null, updated_at = now()
                from expired where q.id = expired.id
              returning q.id, q.attempts, q.status
            ), e as (
              insert into notification_events (queue_id, pass_id, event, reason, details)
              select id, \(passId), 'recovered', 'lease_expired', jsonb_build_object('attempts', attempts, 'status', status) from x
            )
            select count(*)::int as n from x
            """).first?["n"].int ?? 0
    }
}

import Foundation
import HeraldPostgres

extension QueueStore {
    /// Returns to the queue every row this pass holds, with no attempt charged, each with a `released`
    /// event (reason `database_connection_ended`); returns how many. For a pass whose connection ended
    /// between a claim and its sends (the claim may even have committed with its answer lost): once it
    /// is connected again, and only while it has no send in flight, the rows it claimed and never sent
    /// go back at once rather than at the end of their lease, with the attempt their claim charged given
    /// back (as a record of a release gives it back); the queue's trigger notifies the followers.
    @discardableResult
    public func releaseHeld() throws -> Int {
        try db.transaction { db in
            try db.query("""
                with x as (
                  update \(queue) q
                     set status = 'pending', attempts = greatest(q.attempts - 1, 0),
                         locked_until = null, locked_by = null, updated_at = now()
                   where q.locked_by = \(passId) and \(Lease.leasable)
                  returning q.id, q.attempts + 1 as attempts
                ), e as (
                  insert into notification_events (queue_id, pass_id, event, reason, details)
                  select id, \(passId), 'released', 'database_connection_ended',
                         jsonb_build_object('attempt', attempts) from x
                )
                select count(*)::int as n from x
                """).first?["n"].int ?? 0
        }
    }

    /// Takes this pass's note in `herald_lease_holders` away: every row it claimed has been recorded
    /// or released, so it holds no lease, and other passes' claims may skip reading the recipients it
    /// held. A pass that ends otherwise leaves its note until its leases have run out.
    public func leasesEnded() throws {
        try db.execute("delete from herald_lease_holders where pass_id = \(passId)")
    }
}

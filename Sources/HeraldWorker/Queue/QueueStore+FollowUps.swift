import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {
    /// A follow-up step fires only if its condition still fails at its time: of the claimed candidates
    /// `ids` that are follow-up steps (locked by the claim), those the notification's chain has already
    /// satisfied — read, acted on, or delivered, as the step says — are skipped `follow_up_satisfied`
    /// with what satisfied it, in the claim's own transaction (sql/057, `herald_follow_up_settle`).
    /// Returns their ids, which the claim leaves out. No statement at all when no candidate is a step,
    /// so a claim of rows without a policy costs nothing more.
    static func settleFollowUps(_ db: PGConnection, _ ids: [UUID], pass: String) throws -> Set<UUID> {
        guard !ids.isEmpty else { return [] }
        let result = try db.query("select unnest(public.herald_follow_up_settle(\(ids)::uuid[], \(pass))) as id")
        return Set(result.compactMap { $0["id"].uuid })
    }
}

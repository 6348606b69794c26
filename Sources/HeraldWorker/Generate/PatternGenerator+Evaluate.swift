import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// One batch of the patterns phase: lock the users, evaluate their metrics against their episodes,
/// write the changes, tell the admins, and mark the users evaluated — all in one transaction.
extension PatternGenerator {
    /// One batch of users, inside one transaction. `evaluations`, read before the lock, must hold
    /// every user of `chunk` (they are read after the candidates, so they are at least as new as the
    /// scan's marks); nil reads and evaluates them here.
    func evaluate(_ chunk: [UUID], evaluations: PatternEvaluations?, scan: Scan, db: PGConnection) throws -> Result {
        var result = Result()
        let evaluatedThrough = try lock(chunk, db: db)
        result.skipped = chunk.filter { evaluatedThrough[$0] == nil }
        guard !evaluatedThrough.isEmpty else { return result }
        let users = Array(evaluatedThrough.keys)
        guard let earliestLatest = users.compactMap({ scan.latest[$0] }).min() else { return result }

        // Another pass may have evaluated these users between our candidate list and our lock.
        let due = users.filter { u in (scan.marks[u]?.newest ?? .distantPast) > (evaluatedThrough[u] ?? .distantPast) }
        guard !due.isEmpty else { return result }
        result.users = due.count
        let evaluations = try evaluations ?? PatternEvaluations(
            MetricWindows.read(users: due, latest: scan.latest, metrics: scan.metrics, db: db),
            latest: scan.latest, thresholds: scan.thresholds)

        // Their episodes, and what today's values make of them, decided in memory.
        let store = EpisodeStore(db: db, now: now, thresholdsVersion: thresholdsVersion)
        let stored = try store.load(users: due, since: earliestLatest.adding(days: -PatternEvaluator.windowDays))
        result.failedUsers = reportPoisoned(evaluations.poisoned)
        let changes = changes(of: due, evaluations, stored: stored, scan: scan)
        result.episodesOpened = changes.opened
        result.episodesResolved = changes.resolve.count
        try store.resolve(changes.resolve)
        let ids = try store.upsert(changes.writes)
        let notices = Self.notices(changes.writes, ids: ids)
        if !notices.isEmpty {
            result.enqueued = try notifyAdmins(notices, db: db)
        }
        try markEvaluated(due, scan: scan, db: db)
        return result
    }

    /// Locks the `pattern_evaluations` rows of `chunk` that no other pass holds (SKIP LOCKED):
    /// each locked user's `evaluated_through`.
    private func lock(_ chunk: [UUID], db: PGConnection) throws -> [UUID: Date] {
        let locked = try db.query("""
            select user_id, evaluated_through from pattern_evaluations
             where user_id = any(\(chunk)::uuid[]) for update skip locked
            """)
        var evaluatedThrough: [UUID: Date] = [:]
        for row in locked { if let id = row["user_id"].uuid { evaluatedThrough[id] = row["evaluated_through"].date ?? .distantPast } }
        return evaluatedThrough
    }

    /// One user's corrupt row fails that user's evaluation, not the phase: warns about such users
    /// and returns how many. They count as evaluated through their newest row, so a corrected row (a
    /// newer update) is evaluated again.
    private func reportPoisoned(_ poisoned: Set<UUID>) -> Int {
        guard !poisoned.isEmpty else { return 0 }
        logger.warning("metrics that are not finite numbers (NaN, infinite, or beyond float8); those users were not evaluated",
                       metadata: ["users": .stringConvertible(poisoned.count),
                                  "examples": .string(poisoned.prefix(3).map(\.lowercased).joined(separator: ","))])
        return poisoned.count
    }

    /// What a batch's evaluations make of its users' episodes.
    struct EpisodeChanges {
        /// Episodes to resolve.
        var resolve: [UUID] = []
        /// Episodes to open or continue, each with the level to tell (none in shadow mode).
        var writes: [EpisodeStore.Write] = []
        /// How many of `writes` open a new episode.
        var opened = 0
    }

    /// Plans each due user's episodes, per threshold, from their stored ones and their evaluation
    /// (`Episodes.plan`). Poisoned users are left out.
    private func changes(of due: [UUID], _ evaluations: PatternEvaluations,
                         stored: [UUID: [String: EpisodeStore.Stored]], scan: Scan) -> EpisodeChanges {
        var changes = EpisodeChanges()
        for user in due where !evaluations.poisoned.contains(user) {
            guard let l = scan.latest[user], let evaluated = evaluations[user] else { continue }
            for (t, evaluation) in zip(scan.thresholds, evaluated) {
                let episodes = stored[user]?[t.metric + "/" + t.pattern.rawValue] ?? EpisodeStore.Stored()
                let plan = Episodes.plan(active: episodes.active, resolved: episodes.resolved, evaluation: evaluation)
                changes.resolve += plan.resolve
                guard let e = plan.upsert else { continue }
                if plan.continuing == nil { changes.opened += 1 }
                // In shadow mode nothing is told, so no level counts as notified.
                changes.writes.append(EpisodeStore.Write(user: user, threshold: t, evaluation: e, latest: l,
                                                         notifiedLevel: shadowMode ? nil : plan.notifyLevel))
            }
        }
        return changes
    }

    /// Marks the users evaluated through their newest update, or `settled` if that is earlier: a user
    /// whose newest update may not have committed at the scan is evaluated once more by a later pass.
    private func markEvaluated(_ due: [UUID], scan: Scan, db: PGConnection) throws {
        var evaluated: [UUID] = [], through: [Date] = []
        for u in due {
            guard let mark = scan.marks[u] else { continue }
            evaluated.append(u)
            through.append(min(mark.newest, scan.settled))
        }
        try db.execute("""
            update pattern_evaluations e set evaluated_through = x.through, evaluated_at = now(),
                   thresholds_version = \(thresholdsVersion)
              from unnest(\(evaluated)::uuid[], \(through)::timestamptz[]) as x(user_id, through)
             where e.user_id = x.user_id
            """)
    }
}

import Foundation
import HeraldCore

/// What the pattern rules make of each user's metric windows, per threshold: the episode reaching the
/// user's latest day, or none. Made where the windows were read (on the metric reader's thread), so
/// the windows, 120 days of every metric per user, are dropped as soon as they are evaluated and the
/// pass's connection only plans and writes.
///
///     let windows = try MetricWindows.read(users: chunk, latest: latest, metrics: metrics, db: db)
///     let evaluations = PatternEvaluations(windows, latest: latest, thresholds: thresholds)
///     evaluations[user]?[0]      // thresholds[0]'s episode for `user`: .some(nil) when none
struct PatternEvaluations: Sendable {
    /// Per user that was read, one entry per threshold (in the order given): nil where no episode
    /// reaches L. Users not read (no L), and poisoned ones, have no entry.
    private var byUser: [UUID: [EpisodeEvaluation?]] = [:]
    /// Users with a value no rule can use (NaN, infinite, beyond float8): their evaluation fails.
    let poisoned: Set<UUID>

    init(_ windows: MetricWindows, latest: [UUID: LocalDate], thresholds: [PatternThreshold]) {
        poisoned = windows.poisoned
        byUser.reserveCapacity(windows.users.count)
        for user in windows.users where !poisoned.contains(user) {
            guard let l = latest[user] else { continue }
            var row: [EpisodeEvaluation?] = []
            row.reserveCapacity(thresholds.count)
            for t in thresholds {
                row.append(windows[user, t.metric].flatMap { PatternEvaluator.evaluate(window: $0, latest: l, threshold: t) })
            }
            byUser[user] = row
        }
    }

    /// `user`'s evaluations, one per threshold; nil if the user was not read or is poisoned.
    subscript(user: UUID) -> [EpisodeEvaluation?]? { byUser[user] }
}

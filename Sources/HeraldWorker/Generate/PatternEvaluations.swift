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
        let metric = thresholds.map { windows.metricPosition($0.metric) }
        for (slot, user) in windows.users.enumerated() where poisoned.isEmpty || !poisoned.contains(user) {
            // A user listed twice has their rows in their first slot.
            guard let l = latest[user], byUser[user] == nil else { continue }
            var row: [EpisodeEvaluation?] = []
            row.reserveCapacity(thresholds.count)
            for (t, m) in zip(thresholds, metric) {
                row.append(m.flatMap { PatternEvaluator.evaluate(window: windows.window(slot: slot, metric: $0), latest: l, threshold: t) })
            }
            byUser[user] = row
        }
    }

    /// `user`'s evaluations, one per threshold; nil if the user was not read or is poisoned.
    subscript(user: UUID) -> [EpisodeEvaluation?]? { byUser[user] }
}

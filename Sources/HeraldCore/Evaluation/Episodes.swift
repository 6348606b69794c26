import Foundation

/// A stored active row of `pattern_alert_state`, as the episode plan needs it.
public struct StoredEpisode: Sendable, Equatable {
    public var id: UUID
    public var activeSince: LocalDate
    public var level: Int
    public var lastNotifiedLevel: Int

    public init(id: UUID, activeSince: LocalDate, level: Int, lastNotifiedLevel: Int) {
        self.id = id
        self.activeSince = activeSince
        self.level = level
        self.lastNotifiedLevel = lastNotifiedLevel
    }
}

/// What to write for one (user, metric, pattern) after today's evaluation.
public struct EpisodePlan: Sendable, Equatable {
    /// Active episodes whose run no longer reaches L, or that a later run replaced: mark them resolved.
    public var resolve: [UUID]
    /// The continuing (same `active_since`) or new episode to upsert.
    public var upsert: EpisodeEvaluation?
    /// The stored episode that continues, if any (nil: `upsert` opens a new row).
    public var continuing: UUID?
    /// Set when the level rose above the continuing episode's `last_notified_level` (0 for a new one):
    /// notify at this level and raise `last_notified_level` to it.
    public var notifyLevel: Int?

    public init(resolve: [UUID] = [], upsert: EpisodeEvaluation? = nil, continuing: UUID? = nil,
                notifyLevel: Int? = nil) {
        self.resolve = resolve
        self.upsert = upsert
        self.continuing = continuing
        self.notifyLevel = notifyLevel
    }
}

/// The episode bookkeeping of pattern alerts, pure: a continuing run keeps its row, a run that no longer
/// reaches L resolves its episode, a later run opens a new one, and a level is notified once.
///
///     let plan = Episodes.plan(active: [stored], evaluation: PatternEvaluator.evaluate(values, latest: l, threshold: t))
///     // stored.activeSince == evaluation.activeSince, level 7 > lastNotifiedLevel 3:
///     // EpisodePlan(resolve: [], upsert: evaluation, continuing: stored.id, notifyLevel: 7)
///
/// `resolved` are earlier episodes of the same metric and pattern that were resolved. When corrected
/// data joins a run up again so that it starts on a resolved episode's day, that row is reopened
/// (the upsert meets it) and the levels it already notified are not notified again.
public enum Episodes {
    public static func plan(active: [StoredEpisode], resolved: [StoredEpisode] = [],
                            evaluation: EpisodeEvaluation?) -> EpisodePlan {
        guard let evaluation else {
            return EpisodePlan(resolve: active.map(\.id))
        }
        let continuing = active.first { $0.activeSince == evaluation.activeSince }
        let reopened = continuing == nil ? resolved.first { $0.activeSince == evaluation.activeSince } : nil
        let resolve = active.filter { $0.id != continuing?.id }.map(\.id)
        let notified = (continuing ?? reopened)?.lastNotifiedLevel ?? 0
        return EpisodePlan(resolve: resolve, upsert: evaluation, continuing: continuing?.id,
                           notifyLevel: evaluation.level > notified ? evaluation.level : nil)
    }
}

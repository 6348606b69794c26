/// What a follower did, in the summary as `"follow": {"mode": …, "wakes": …, "notified": …, "generator_runs": …}`.
public struct FollowReport: Sendable, Equatable {
    /// The mode it ended in (after a lost LISTEN connection, `poll`).
    public var mode: FollowMode
    /// Waits that ended: on a notification, a due time, the interval, a stop or the deadline.
    public var wakes = 0
    /// Notifications received from the queue.
    public var notified = 0
    /// Times a time-driven generator ran while following (at its instant, or after an app's change);
    /// what they made is in the summary's `generated`.
    public var generatorRuns = 0

    public init(mode: FollowMode) { self.mode = mode }
}

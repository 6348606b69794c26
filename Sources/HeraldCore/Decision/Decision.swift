import Foundation

/// What the pass does with one claimed row; `Decider` picks it, the first of its rules that applies winning.
public enum Decision: Equatable, Sendable {
    case send
    case skip(SkipReason)
    /// Move `run_after` to the instant, without using an attempt.
    case deferUntil(Date, DeferReason)
    /// Permanent failure, with a readable `last_error` (unknown channel, malformed payload, …).
    case fail(String)
}

/// What the worker loaded for one row.
public struct DecisionContext: Sendable {
    /// The recipient's `user_profiles` row; nil fails the row.
    public var preferences: Preferences?
    /// The linked episode, when the row links one (nil while the row links one fails the row).
    public var alert: AlertState?
    /// Active destinations for this row's channel, already resolved by the worker.
    public var destinations: [Destination]
    /// The recipient's unread in-app count, for the badge.
    public var unreadInApp: Int
    /// False for a family's alert (a pattern alert about another member) whose recipient is, at send
    /// time, no longer an admin of a family of that member; true otherwise.
    public var recipientIsFamilyAdmin: Bool
    /// The person has read or acted on this notification (its entry), on any channel or device: a copy
    /// not yet sent is not sent.
    public var readElsewhere: Bool

    public init(preferences: Preferences?, alert: AlertState? = nil, destinations: [Destination] = [],
                unreadInApp: Int = 0, recipientIsFamilyAdmin: Bool = true, readElsewhere: Bool = false) {
        self.preferences = preferences
        self.alert = alert
        self.destinations = destinations
        self.unreadInApp = unreadInApp
        self.recipientIsFamilyAdmin = recipientIsFamilyAdmin
        self.readElsewhere = readElsewhere
    }
}

public struct DecisionOptions: Sendable {
    /// Rows older than this (from `scheduledAt`) are skipped `expired`.
    public var maxAge: TimeInterval
    /// The notification types: which kinds a row may name, their defaults and rate limits.
    public var types: NotificationTypes
    /// The pass's clock (`--now`); nothing in the decision reads the real clock.
    public var now: Date

    public init(maxAge: TimeInterval = 24 * 3600, types: NotificationTypes = .builtIn, now: Date) {
        self.maxAge = maxAge
        self.types = types
        self.now = now
    }
}

/// A decision and the inputs that decided it (stored in `notification_events`, printed by `herald explain`).
///
/// The trail is an object with `rule` (the reason code: `send`, a skip or defer reason, or a failure code
/// such as `unknown_timezone`) and, as far as the decision got: `recipient_local_time`
/// ("2026-01-25T22:00:00"), `timezone`, `quiet_window` ("22:00:00-07:00:00" or null), `quiet_level`,
/// `quiet_action`, `in_quiet_hours`, `severity` (effective), `counters` and `until` for deferrals.
public struct DecisionResult: Sendable {
    public var decision: Decision
    public var trail: JSONValue

    public init(decision: Decision, trail: JSONValue) {
        self.decision = decision
        self.trail = trail
    }

    /// The reason code stored in `skip_reason` / the event's reason.
    public var rule: String { trail["rule"]?.stringValue ?? "" }
}

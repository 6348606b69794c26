import Foundation

/// How often one recipient may be notified, for one notification type (`notification_types`): by
/// default at most 10 notifications a local day, an hour between two of the type, and 100 rows a minute.
///
/// A *notification* is one logical item: its copies on several channels (a pattern alert to push,
/// in-app and email) share a notification group and count once. A *type* is the kind, and for
/// reminders the reminder type (`reminder:dose`, `reminder:daily`), whose limits are the kind's.
public struct RateLimits: Sendable, Equatable {
    /// At most this many notifications per recipient per local day (the recipient's zone), across channels,
    /// counting every type with a cap. Nil: no daily cap, and the type's sends count towards none.
    public var perDay: Int?
    /// At least this long between two notifications of the same type to the same recipient, across
    /// channels; 0: no spacing.
    public var sameTypeSpacing: TimeInterval
    /// At most this many rows per recipient per `minuteWindow`, across channels and types (a throughput
    /// guard: it counts rows, not notifications). Nil: no such limit.
    public var perMinute: Int?
    public var minuteWindow: TimeInterval = 60
    /// Neither held back by nor counted towards the daily cap and the spacing (prompts, which the user
    /// asks for in a number of their own). Quiet hours, toggles and the per-minute guard still apply.
    public var exempt: Bool

    public init(perDay: Int? = 10, sameTypeSpacing: TimeInterval = 3600, perMinute: Int? = 100,
                minuteWindow: TimeInterval = 60, exempt: Bool = false) {
        self.perDay = perDay
        self.sameTypeSpacing = sameTypeSpacing
        self.perMinute = perMinute
        self.minuteWindow = minuteWindow
        self.exempt = exempt
    }

    /// The earlier spelling (the cap was per channel, the spacing per kind).
    public init(perChannelPerDay: Int, sameKindSpacing: TimeInterval = 3600, perMinute: Int = 100) {
        self.init(perDay: perChannelPerDay, sameTypeSpacing: sameKindSpacing, perMinute: perMinute)
    }

    /// The cap of 10 a day, an hour between two of a type, 100 a minute.
    public static let capped = RateLimits()
    /// 100 a minute only: the limit of a type an app adds.
    public static let perMinuteOnly = RateLimits(perDay: nil, sameTypeSpacing: 0)
    /// Exempt from the cap and the spacing; 100 a minute.
    public static let exempt = RateLimits(perDay: nil, sameTypeSpacing: 0, exempt: true)

    /// Whether a send of this type counts towards the daily cap.
    var countsTowardsDailyCap: Bool { perDay != nil && !exempt }
}

/// The rate limits of each type; a type it does not know gets `fallback`.
public struct RatePolicy: Sendable, Equatable {
    public var byType: [String: RateLimits]
    public var fallback: RateLimits

    public init(byType: [String: RateLimits] = [:], fallback: RateLimits = .capped) {
        self.byType = byType
        self.fallback = fallback
    }

    /// One set of limits for every type, prompts exempt.
    public static func uniform(_ limits: RateLimits) -> RatePolicy {
        RatePolicy(byType: ["prompt": .exempt], fallback: limits)
    }

    /// The limits of a rate type: `reminder:dose` has the limits of `reminder`.
    public func limits(for rateType: String) -> RateLimits {
        if let own = byType[rateType] { return own }
        if let colon = rateType.firstIndex(of: ":"), let kind = byType[String(rateType[..<colon])] { return kind }
        return fallback
    }
}

/// One row that was sent (from recently sent rows, or decided in this pass).
public struct SentRecord: Sendable, Equatable {
    public var recipient: UUID
    public var channel: Channel
    /// The rate type: the kind, or `reminder:<type>` (see `QueueItem.rateType`).
    public var kind: String
    /// The notification group; nil: the row is a notification of its own.
    public var group: String?
    public var at: Date

    public init(recipient: UUID, channel: Channel, kind: String, group: String? = nil, at: Date) {
        self.recipient = recipient
        self.channel = channel
        self.kind = kind
        self.group = group
        self.at = at
    }
}

/// The counts a rate check looked at; they go into the decision trail.
public struct RateCounters: Sendable, Equatable {
    /// Notifications (groups, not rows) sent to this recipient on the recipient's local date of `now`,
    /// exempt types left out.
    public var sentToday: Int
    /// Whole minutes since the last send of the same type (another notification); nil when there was none.
    public var minutesSinceLastSameType: Int?
    /// Rows sent to this recipient, on any channel, in the minute ending at `now`.
    public var sentLastMinute: Int
    /// Another copy of this notification was already sent: it is not a new one.
    public var groupAlreadySent: Bool = false

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "sent_today": .number(Double(sentToday)),
            "minutes_since_last_same_type": minutesSinceLastSameType.map { .number(Double($0)) } ?? .null,
            "sent_last_minute": .number(Double(sentLastMinute))]
        if groupAlreadySent { o["group_already_sent"] = .bool(true) }
        return .object(o)
    }
}

/// The answer of a rate check: allowed, or deferred to the first instant every limit allows.
public struct RateCheck: Sendable, Equatable {
    /// When deferred: the first instant every limit allows, and the limit that decided it. Nil when allowed.
    public var until: Date?
    public var reason: DeferReason?
    public var counters: RateCounters

    public var isAllowed: Bool { until == nil }
}

/// Counts sends per recipient and answers "may this one go now?".
///
///     var limiter = RateLimiter(limits: RateLimits(), history: recentlySent)
///     let check = limiter.check(recipient: id, channel: .push, kind: "reminder:dose", group: "reminder:…", now: now, zone: tz)
///     if check.isAllowed { limiter.record(SentRecord(recipient: id, channel: .push, kind: "reminder:dose", group: "reminder:…", at: now)) }
///
/// - The daily cap counts notification groups: a group already sent today (another channel's copy) is
///   let through, and is not counted twice.
/// - The spacing is per type across channels, against other groups only.
/// - Exempt types (prompts) are neither held back by nor counted towards the cap and the spacing.
/// - Critical notifications are not blocked (the caller does not ask), but they are recorded and count.
/// - Only sends at or before `now` count, so replays with an earlier `--now` see the history of their time
///   — except that sends up to ``clockSkew`` ahead count as sent now: another pass's clock (another host,
///   or another process started a moment apart with the same `--now`) may run a little ahead of this one,
///   and its sends must hold this pass back.
public struct RateLimiter: Sendable {
    /// How far ahead of `now` a recorded send still counts (as sent at `now`).
    public static let clockSkew: TimeInterval = 600

    public var policy: RatePolicy
    private var byRecipient: [UUID: [SentRecord]] = [:]

    public init(policy: RatePolicy, history: [SentRecord] = []) {
        self.policy = policy
        for r in history { record(r) }
    }

    /// One set of limits for every type, prompts exempt.
    public init(limits: RateLimits = RateLimits(), history: [SentRecord] = []) {
        self.init(policy: .uniform(limits), history: history)
    }

    /// Counts a send (the pass calls this when it decides to send).
    public mutating func record(_ r: SentRecord) {
        byRecipient[r.recipient, default: []].append(r)
    }

    public func check(recipient: UUID, channel: Channel, kind: String, group: String? = nil, now: Date,
                      zone: TimeZone) -> RateCheck {
        let sent = (byRecipient[recipient] ?? []).compactMap { r -> SentRecord? in
            guard r.at <= now.addingTimeInterval(Self.clockSkew) else { return nil }
            var r = r
            r.at = min(r.at, now)
            return r
        }
        let limits = policy.limits(for: kind)
        // Nothing sent to this recipient: every count is zero, and with limits above zero none holds
        // the row back (the same answer as below, without working out the recipient's local day).
        if sent.isEmpty, limits.perDay ?? 1 > 0, limits.perMinute ?? 1 > 0 {
            return RateCheck(until: nil, reason: nil,
                             counters: RateCounters(sentToday: 0, minutesSinceLastSameType: nil, sentLastMinute: 0))
        }
        var deferrals: [(until: Date, reason: DeferReason)] = []
        let exempt = limits.exempt
        let counted = sent.filter { policy.limits(for: $0.kind).countsTowardsDailyCap }

        // Per local day, notifications counted once across channels: defer to the next local midnight.
        let today = Zone.localDate(now, in: zone)
        let midnight = LocalTime(hour: 0, minute: 0)
        let dayStart = Zone.instant(of: today, midnight, in: zone)
        let nextMidnight = Zone.instant(of: today.adding(days: 1), midnight, in: zone)
        let todays = counted.filter { $0.at >= dayStart && $0.at < nextMidnight }
        var groups = Set<String>()
        var ungrouped = 0
        for r in todays { if let g = r.group { groups.insert(g) } else { ungrouped += 1 } }
        let sentToday = groups.count + ungrouped
        let groupAlreadySent = group.map { g in sent.contains { $0.group == g } } ?? false
        if !exempt && !groupAlreadySent, let cap = limits.perDay, sentToday >= cap {
            deferrals.append((nextMidnight, .dailyLimit))
        }

        // Same type, another notification, any channel: defer to the last one + spacing.
        let last = sent.filter { $0.kind == kind && (group == nil || $0.group != group) }.map(\.at).max()
        if !exempt && !groupAlreadySent, let last, now.timeIntervalSince(last) < limits.sameTypeSpacing {
            deferrals.append((last.addingTimeInterval(limits.sameTypeSpacing), .kindSpacing))
        }

        // Per minute across channels, rows: defer until enough of the window's sends have aged out.
        let window = sent.map(\.at).filter { now.timeIntervalSince($0) < limits.minuteWindow }.sorted()
        if let perMinute = limits.perMinute, window.count >= perMinute, perMinute > 0 {
            let leaving = window[window.count - perMinute]    // the oldest, when exactly at the limit
            deferrals.append((leaving.addingTimeInterval(limits.minuteWindow), .perMinute))
        }

        let counters = RateCounters(
            sentToday: sentToday,
            minutesSinceLastSameType: last.map { Int(now.timeIntervalSince($0) / 60) },
            sentLastMinute: window.count, groupAlreadySent: groupAlreadySent)
        let latest = deferrals.max { $0.until < $1.until }
        return RateCheck(until: latest?.until, reason: latest?.reason, counters: counters)
    }
}

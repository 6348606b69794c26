import Foundation

/// How often one recipient may be notified (seeds 001 and 003).
public struct RateLimits: Sendable, Equatable {
    /// At most this many per recipient per channel per local day (the recipient's zone).
    public var perChannelPerDay: Int = 10
    /// At least this long between two of the same kind to the same recipient on the same channel.
    public var sameKindSpacing: TimeInterval = 3600
    /// At most this many per recipient per `minuteWindow`, across channels.
    public var perMinute: Int = 100
    public var minuteWindow: TimeInterval = 60

    public init(perChannelPerDay: Int = 10, sameKindSpacing: TimeInterval = 3600, perMinute: Int = 100,
                minuteWindow: TimeInterval = 60) {
        self.perChannelPerDay = perChannelPerDay
        self.sameKindSpacing = sameKindSpacing
        self.perMinute = perMinute
        self.minuteWindow = minuteWindow
    }
}

/// One notification that was sent (from recently sent rows, or decided in this pass).
public struct SentRecord: Sendable, Equatable {
    public var recipient: UUID
    public var channel: Channel
    public var kind: String
    public var at: Date

    public init(recipient: UUID, channel: Channel, kind: String, at: Date) {
        self.recipient = recipient
        self.channel = channel
        self.kind = kind
        self.at = at
    }
}

/// The counts a rate check looked at; they go into the decision trail.
public struct RateCounters: Sendable, Equatable {
    /// Sent to this recipient on this channel on the recipient's local date of `now`.
    public var sentToday: Int
    /// Whole minutes since the last send of the same kind on this channel; nil when there was none.
    public var minutesSinceLastSameKind: Int?
    /// Sent to this recipient, on any channel, in the minute ending at `now`.
    public var sentLastMinute: Int

    public var json: JSONValue {
        ["sent_today": .number(Double(sentToday)),
         "minutes_since_last_same_kind": minutesSinceLastSameKind.map { .number(Double($0)) } ?? .null,
         "sent_last_minute": .number(Double(sentLastMinute))]
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
///     let check = limiter.check(recipient: id, channel: .push, kind: "reminder", now: now, zone: tz)
///     if check.isAllowed { limiter.record(SentRecord(recipient: id, channel: .push, kind: "reminder", at: now)) }
///
/// Critical notifications are not blocked (the caller does not ask), but they are recorded and count.
/// Only sends at or before `now` count, so replays with an earlier `--now` see the history of their time.
public struct RateLimiter: Sendable {
    public var limits: RateLimits
    private var byRecipient: [UUID: [SentRecord]] = [:]

    public init(limits: RateLimits = RateLimits(), history: [SentRecord] = []) {
        self.limits = limits
        for r in history { record(r) }
    }

    /// Counts a send (the pass calls this when it decides to send).
    public mutating func record(_ r: SentRecord) {
        byRecipient[r.recipient, default: []].append(r)
    }

    public func check(recipient: UUID, channel: Channel, kind: String, now: Date, zone: TimeZone) -> RateCheck {
        let sent = (byRecipient[recipient] ?? []).filter { $0.at <= now }
        var deferrals: [(until: Date, reason: DeferReason)] = []

        // Per channel per local day: defer to the next local midnight.
        let today = Zone.localDate(now, in: zone)
        let midnight = LocalTime(hour: 0, minute: 0)
        let dayStart = Zone.instant(of: today, midnight, in: zone)
        let nextMidnight = Zone.instant(of: today.adding(days: 1), midnight, in: zone)
        let sentToday = sent.filter { $0.channel == channel && $0.at >= dayStart && $0.at < nextMidnight }.count
        if sentToday >= limits.perChannelPerDay {
            deferrals.append((nextMidnight, .dailyLimit))
        }

        // Same kind on the same channel: defer to the last one + spacing.
        let last = sent.filter { $0.channel == channel && $0.kind == kind }.map(\.at).max()
        if let last, now.timeIntervalSince(last) < limits.sameKindSpacing {
            deferrals.append((last.addingTimeInterval(limits.sameKindSpacing), .kindSpacing))
        }

        // Per minute across channels: defer until enough of the window's sends have aged out.
        let window = sent.map(\.at).filter { now.timeIntervalSince($0) < limits.minuteWindow }.sorted()
        if window.count >= limits.perMinute {
            let leaving = window[window.count - limits.perMinute]    // the oldest, when exactly at the limit
            deferrals.append((leaving.addingTimeInterval(limits.minuteWindow), .perMinute))
        }

        let counters = RateCounters(
            sentToday: sentToday,
            minutesSinceLastSameKind: last.map { Int(now.timeIntervalSince($0) / 60) },
            sentLastMinute: window.count)
        let latest = deferrals.max { $0.until < $1.until }
        return RateCheck(until: latest?.until, reason: latest?.reason, counters: counters)
    }
}

import Foundation

/// Decides, row by row, what a pass does with a batch of claimed rows. One per batch: it carries the
/// rate limiter, so a send decided for one row counts against the next (the 11th row of a day is deferred).
///
///     var decider = Decider(options: DecisionOptions(now: now), history: recentlySent)
///     for (item, context) in batch {
///         let result = decider.decide(item, context)     // .send / .skip / .deferUntil / .fail + trail
///     }
///
/// Rules, in order; the first that applies wins (DESIGN §4):
/// 0. validation: unknown channel or kind, payload not an object, no profile, unknown timezone,
///    linked episode missing → fail
/// 1. expired: older than `maxAge`, or a daily forecast for another local date
/// 2. alert episode: dismissed, snoozed, resolved, superseded by a higher level
/// 3. the type's toggle is off (a reminder type, forecasts, prompts) → type_disabled
/// 4. the channel's toggle is off → channel_disabled
/// 5. no destination
/// 6. quiet hours: a dose reminder whose dose is within the hour goes through when
///    `quiet_hours_allow_critical` (seed 001); otherwise the level (seed 000) decides; a held-back row is
///    skipped or deferred to the window's end — a critical reminder is always deferred, never skipped
/// 7. rate limits, unless critical → defer
/// 8. send
public struct Decider: Sendable {
    public let options: DecisionOptions
    public private(set) var limiter: RateLimiter

    public init(options: DecisionOptions, history: [SentRecord]) {
        self.options = options
        self.limiter = RateLimiter(limits: options.rateLimits, history: history)
    }

    /// The largest `level` a pattern-alert payload may carry (levels are 3, 7, 14 and 21 days).
    public static let maxLevel = 1_000

    /// Decides one row. A `.send` is counted into the rate limiter.
    public mutating func decide(_ item: QueueItem, _ context: DecisionContext) -> DecisionResult {
        let now = options.now
        var trail: [String: JSONValue] = [:]
        trail.reserveCapacity(16)  // a dozen keys at most: no rehash as they come
        func result(_ d: Decision, _ rule: String) -> DecisionResult {
            trail["rule"] = .string(rule)
            return DecisionResult(decision: d, trail: .object(trail))
        }

        // 0. Validation: a bad row fails permanently with a readable message; the pass goes on.
        guard let channel = item.channel else {
            return result(.fail("unknown channel '\(item.channelRaw)'"), "unknown_channel")
        }
        guard let kind = item.kind else {
            return result(.fail("unknown kind '\(item.kindRaw)'"), "unknown_kind")
        }
        guard let payload = item.payload else {
            // Says what the payload is, never what it holds: it may carry health details, and this
            // message reaches last_error and a warning.
            return result(.fail("malformed payload: not a JSON object (\(Redaction.describeJSON(item.payloadText)))"),
                          "malformed_payload")
        }
        var forecastDate: LocalDate? = nil
        if kind == .dailyForecast, let raw = payload["date"] {
            guard let text = raw.stringValue, let d = LocalDate(text) else {
                return result(.fail("malformed payload: daily_forecast date \(Self.quotedDate(raw)) is not YYYY-MM-DD"),
                              "malformed_payload")
            }
            forecastDate = d
        }
        // An alert's level is a number of days; one that is not a small whole number (1e300, 7.5,
        // "seven") cannot be compared with the episode's, so the row cannot be judged.
        var level: Int? = nil
        if kind == .patternAlert, let raw = payload["level"], raw != .null {
            guard let n = raw.intValue, (0...Decider.maxLevel).contains(n) else {
                return result(.fail("malformed payload: pattern_alert level \(raw.jsonText.prefix(40)) is not a whole number of days (0–\(Decider.maxLevel))"),
                              "malformed_payload")
            }
            level = n
        }
        guard let prefs = context.preferences else {
            return result(.fail("recipient \(item.recipientUserId.uuidString.lowercased()) has no user_profiles row"),
                          "missing_profile")
        }
        trail["timezone"] = .string(prefs.timezone)
        guard let zone = Zone.named(prefs.timezone) else {
            return result(.fail("unknown timezone '\(prefs.timezone)' for recipient \(item.recipientUserId.uuidString.lowercased())"),
                          "unknown_timezone")
        }
        let alert = context.alert
        if let id = item.alertStateId, alert == nil {
            return result(.fail("alert episode \(id.uuidString.lowercased()) not found"), "alert_not_found")
        }

        let wall = Zone.local(now, in: zone)
        let window = QuietWindow(start: prefs.quietHoursStart, end: prefs.quietHoursEnd)
        let inQuiet = window.contains(wall.time)
        let severity = alert?.severity ?? item.severity ?? .watch
        trail["recipient_local_time"] = .string(wall.description)
        trail["quiet_window"] = window.trailText.map(JSONValue.string) ?? .null
        trail["quiet_level"] = .string(prefs.quietLevel.rawValue)
        trail["quiet_action"] = .string(prefs.quietAction.rawValue)
        trail["in_quiet_hours"] = .bool(inQuiet)
        trail["severity"] = .string(severity.rawValue)

        // 1. Expired.
        if now.timeIntervalSince(item.scheduledAt) > options.maxAge {
            return result(.skip(.expired), SkipReason.expired.rawValue)
        }
        if let d = forecastDate, d != wall.date {
            return result(.skip(.expired), SkipReason.expired.rawValue)
        }

        // 2. The alert episode.
        if let alert {
            if alert.dismissedAt != nil { return result(.skip(.alertDismissed), SkipReason.alertDismissed.rawValue) }
            if let until = alert.snoozeUntil, wall.date <= until {
                return result(.skip(.alertSnoozed), SkipReason.alertSnoozed.rawValue)
            }
            if alert.episodeStatus == .resolved || alert.resolvedAt != nil {
                return result(.skip(.alertResolved), SkipReason.alertResolved.rawValue)
            }
            if let level, level < alert.currentLevel {
                return result(.skip(.superseded), SkipReason.superseded.rawValue)
            }
        }

        // 3. The type's toggle.
        if !Decider.typeEnabled(item, prefs) {
            if let t = item.reminderType { trail["reminder_type"] = .string(t.rawValue) }
            return result(.skip(.typeDisabled), SkipReason.typeDisabled.rawValue)
        }

        // 4. The channel's toggle.
        if !Decider.channelEnabled(channel, prefs, aboutAnotherMember: item.isAboutAnotherMember) {
            return result(.skip(.channelDisabled), SkipReason.channelDisabled.rawValue)
        }

        // 5. Somewhere to deliver it.
        if context.destinations.isEmpty {
            return result(.skip(.noDestination), SkipReason.noDestination.rawValue)
        }

        // 6. Quiet hours.
        if inQuiet {
            if prefs.quietAllowCritical, let doseAt = Decider.doseWithinTheHour(item, now: now) {
                trail["quiet_override"] = .string("dose_within_hour")
                trail["dose_at"] = .string(iso(doseAt))
            } else if !Decider.quietLets(severity, through: prefs.quietLevel) {
                // A critical reminder is never dropped: held back, it waits for the window's end.
                let criticalReminder = kind == .reminder && severity == .critical
                if prefs.quietAction == .skip && !criticalReminder {
                    return result(.skip(.quietHours), SkipReason.quietHours.rawValue)
                }
                let until = window.end(after: now, in: zone)
                trail["until"] = .string(iso(until))
                if criticalReminder && prefs.quietAction == .skip { trail["critical_deferred"] = .bool(true) }
                return result(.deferUntil(until, .quietHours), DeferReason.quietHours.rawValue)
            }
        }

        // 7. Rate limits; critical notifications are not held back, but they count.
        let check = limiter.check(recipient: item.recipientUserId, channel: channel, kind: item.rateType,
                                  group: item.group, now: now, zone: zone)
        trail["counters"] = check.counters.json
        if severity != .critical, let until = check.until, let reason = check.reason {
            trail["until"] = .string(iso(until))
            return result(.deferUntil(until, reason), reason.rawValue)
        }

        // 8. Send.
        limiter.record(SentRecord(recipient: item.recipientUserId, channel: channel, kind: item.rateType,
                                  group: item.group, at: now))
        return result(.send, "send")
    }

    /// A daily forecast's unreadable `date`, for last_error: quoted when it looks like a date written
    /// another way ('25/01/2026'), otherwise only described, since the payload may hold health details.
    static func quotedDate(_ raw: JSONValue) -> String {
        if let text = raw.stringValue, text.count <= 32,
           text.allSatisfy({ $0.isASCII && ($0.isNumber || "-/.: TZ+".contains($0)) }) {
            return "'\(text)'"
        }
        return "(\(Redaction.describe(raw)))"
    }

    /// Rule 4: the recipient's toggle for this channel (`Channel.isEnabled`).
    public static func channelEnabled(_ channel: Channel, _ p: Preferences, aboutAnotherMember: Bool) -> Bool {
        channel.isEnabled(p, aboutAnotherMember: aboutAnotherMember)
    }

    /// Rule 3: the recipient's toggle for this type. Pattern alerts and system notifications have none.
    /// A reminder without a known type (written by hand) counts as a daily reminder.
    public static func typeEnabled(_ item: QueueItem, _ p: Preferences) -> Bool {
        switch item.kind {
        case .dailyForecast: return p.forecastNotificationsEnabled
        case .prompt: return p.promptNotificationsEnabled
        case .reminder:
            switch item.reminderType ?? .daily {
            case .daily: return p.dailyReminderEnabled
            case .dose: return p.doseReminderEnabled
            case .washout: return p.washoutNotificationsEnabled
            case .testStart: return p.testStartReminderEnabled
            }
        case .patternAlert, .system, nil: return true
        }
    }

    /// Seed 001's critical override: a dose reminder (payload `dose_at`, the dose's instant) whose dose
    /// is at most an hour ahead of `now`, or passed at most `doseGrace` ago (a reminder held up a few
    /// minutes still helps with a dose just due; one hours late is no reason to break quiet hours).
    /// Returns the dose's instant.
    public static func doseWithinTheHour(_ item: QueueItem, now: Date) -> Date? {
        guard item.reminderType == .dose, let text = item.payload?["dose_at"]?.stringValue,
              let at = ISO8601.parse(text) else { return nil }
        let ahead = at.timeIntervalSince(now)
        return ahead <= 3600 && ahead >= -doseGrace ? at : nil
    }

    /// How long after its dose a dose reminder still goes through quiet hours: 15 minutes.
    public static let doseGrace: TimeInterval = 15 * 60

    /// Rule 6: whether quiet hours at `level` let a notification of `severity` through.
    public static func quietLets(_ severity: Severity, through level: QuietLevel) -> Bool {
        switch level {
        case .all: true
        case .criticalOnly: severity == .critical
        case .none: false
        }
    }

    private func iso(_ d: Date) -> String {
        let z = Zone.local(d, in: TimeZone(secondsFromGMT: 0)!)
        return "\(z)Z"
    }
}

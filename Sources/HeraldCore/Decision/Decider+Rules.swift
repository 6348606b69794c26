import Foundation

/// Rules 1 to 7 of `Decider`: what may hold a valid row back.
extension Decider {
    /// A checked row as the recipient's clock sees it now: their wall time, their quiet window and
    /// whether it holds, and the severity the rules go by.
    ///
    ///     let local = LocalView(row, now: now)
    ///     local.inQuiet   // true at 23:00 in a 22:00–07:00 window
    struct LocalView {
        let wall: LocalDateTime
        let window: QuietWindow
        let inQuiet: Bool
        let severity: Severity

        init(_ row: CheckedRow, now: Date) {
            wall = Zone.local(now, in: row.zone)
            window = QuietWindow(start: row.prefs.quietHoursStart, end: row.prefs.quietHoursEnd)
            inQuiet = window.contains(wall.time)
            severity = row.severity
        }

        /// Writes what every rule after validation goes by into the trail.
        func note(_ row: CheckedRow, in trail: inout Trail) {
            trail["recipient_local_time"] = .string(wall.description)
            trail["quiet_window"] = window.trailText.map(JSONValue.string) ?? .null
            trail["quiet_level"] = .string(row.prefs.quietLevel.rawValue)
            trail["quiet_action"] = .string(row.prefs.quietAction.rawValue)
            trail["in_quiet_hours"] = .bool(inQuiet)
            trail["severity"] = .string(severity.rawValue)
        }
    }

    /// Rules 1 to 6, in order: the verdict of the first that holds the row back, or nil.
    func holdBack(_ row: CheckedRow, _ local: LocalView, trail: inout Trail) -> Verdict? {
        // 1. Expired.
        if isExpired(row, local) { return .skip(.expired) }
        // 1. Read or acted on elsewhere: the person has seen it.
        if row.context.readElsewhere { return .skip(.readElsewhere) }
        // 2. The alert episode.
        if let verdict = Self.episodeRule(row, local) { return verdict }
        // 3. The type's toggle.
        if !Self.typeEnabled(row.item, row.prefs) {
            if let t = row.item.reminderType { trail["reminder_type"] = .string(t.rawValue) }
            return .skip(.typeDisabled)
        }
        // 4. The channel's toggle.
        if !Self.channelEnabled(row.channel, row.prefs, aboutAnotherMember: row.item.isAboutAnotherMember) {
            Self.noteToggle(row, in: &trail)
            return .skip(.channelDisabled)
        }
        // 5. Somewhere to deliver it.
        if row.context.destinations.isEmpty { return .skip(.noDestination) }
        // 6. Quiet hours; a badge correction makes no sound and shows nothing, so they do not hold it.
        return local.inQuiet && row.item.kindRaw != NotificationType.badgeSync ? quietHours(row, local, trail: &trail) : nil
    }

    /// Rule 1: older than `maxAge`, or a daily forecast for another date than the recipient's today.
    /// (Rule 1 also skips a row whose notification the person read or acted on: `read_elsewhere`.)
    func isExpired(_ row: CheckedRow, _ local: LocalView) -> Bool {
        if options.now.timeIntervalSince(row.item.scheduledAt) > options.maxAge { return true }
        if let date = row.forecastDate, date != local.wall.date { return true }
        return false
    }

    /// Rule 2: a family's alert whose recipient is no longer an admin of the member's family; the
    /// linked episode was dismissed, is snoozed through the recipient's today, was resolved, or stands
    /// at a higher level than the row's.
    static func episodeRule(_ row: CheckedRow, _ local: LocalView) -> Verdict? {
        if !row.context.recipientIsFamilyAdmin { return .skip(.notFamilyAdmin) }
        guard let alert = row.alert else { return nil }
        if alert.dismissedAt != nil { return .skip(.alertDismissed) }
        if let until = alert.snoozeUntil, local.wall.date <= until { return .skip(.alertSnoozed) }
        if alert.episodeStatus == .resolved || alert.resolvedAt != nil { return .skip(.alertResolved) }
        if let level = row.level, level < alert.currentLevel { return .skip(.superseded) }
        return nil
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

    /// Rule 4's trail: the column that decided (`decided_by`, e.g. `user_profiles.notify_push`) and,
    /// for push, the value it holds (null: never set, and the person has no active device).
    static func noteToggle(_ row: CheckedRow, in trail: inout Trail) {
        guard let column = row.channel.decidingColumn(aboutAnotherMember: row.item.isAboutAnotherMember) else { return }
        trail["decided_by"] = .string("user_profiles.\(column)")
        if row.channel == .push {
            trail["notify_push"] = row.prefs.pushNeverSet ? .null : .bool(row.prefs.notifyPush)
        }
    }

    /// Rule 4: the recipient's toggle for this channel (`Channel.isEnabled`).
    public static func channelEnabled(_ channel: Channel, _ p: Preferences, aboutAnotherMember: Bool) -> Bool {
        channel.isEnabled(p, aboutAnotherMember: aboutAnotherMember)
    }

    /// Rule 6, inside the quiet window. With `quiet_hours_allow_critical`, a dose reminder whose dose
    /// is near goes through (the dose override); otherwise what the quiet level holds back is skipped,
    /// or deferred to the window's end. A critical reminder is never dropped: held back, it waits for
    /// the window's end. Nil lets the row through.
    func quietHours(_ row: CheckedRow, _ local: LocalView, trail: inout Trail) -> Verdict? {
        let now = options.now
        if row.prefs.quietAllowCritical, let doseAt = Self.doseWithinTheHour(row.item, now: now) {
            trail["quiet_override"] = .string("dose_within_hour")
            trail["dose_at"] = .string(Self.iso(doseAt))
            return nil
        }
        if Self.quietLets(local.severity, through: row.prefs.quietLevel) { return nil }
        let criticalReminder = row.kind == .reminder && local.severity == .critical
        // A follow-up step is held until the window ends, never dropped: the chain waits for it.
        let heldStep = row.item.isFollowUpStep && local.severity != .critical
        if heldStep { trail["follow_up_held"] = .bool(true) }
        if row.prefs.quietAction == .skip && !criticalReminder && !heldStep { return .skip(.quietHours) }
        let until = local.window.end(after: now, in: row.zone)
        trail["until"] = .string(Self.iso(until))
        if criticalReminder && row.prefs.quietAction == .skip { trail["critical_deferred"] = .bool(true) }
        return Verdict(decision: .deferUntil(until, .quietHours), rule: DeferReason.quietHours.rawValue)
    }

    /// The dose override of quiet hours: a dose reminder (payload `dose_at`, the dose's instant) whose
    /// dose is at most an hour ahead of `now`, or passed at most `doseGrace` ago (a reminder held up a
    /// few minutes still helps with a dose just due; one hours late is no reason to break quiet hours).
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

    /// Rule 7: the rate limits defer the row when a window is full. Critical notifications are not
    /// held back, but they count.
    func rateLimit(_ row: CheckedRow, _ local: LocalView, trail: inout Trail) -> Verdict? {
        let check = limiter.check(recipient: row.item.recipientUserId, channel: row.channel, kind: row.item.rateType,
                                  group: row.item.group, now: options.now, zone: row.zone)
        trail["counters"] = check.counters.json
        guard local.severity != .critical, let until = check.until, let reason = check.reason else { return nil }
        trail["until"] = .string(Self.iso(until))
        return Verdict(decision: .deferUntil(until, reason), rule: reason.rawValue)
    }
}

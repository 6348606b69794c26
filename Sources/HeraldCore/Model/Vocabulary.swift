/// The closed vocabularies of the queue. Their raw values are what the database stores.

/// Where a notification goes.
public enum Channel: String, CaseIterable, Sendable, Codable {
    case push, sms, whatsapp, email, webhook
    case inApp = "in_app"
}

/// What a notification is about; templates and rate limits are chosen by kind.
public enum Kind: String, CaseIterable, Sendable, Codable {
    case patternAlert = "pattern_alert"
    case dailyForecast = "daily_forecast"
    case prompt
    case reminder
    case system
}

/// How serious a notification is. Quiet hours at level `critical_only` let `critical` through.
public enum Severity: String, CaseIterable, Sendable, Codable, Comparable {
    case watch, attention, critical

    /// Levels 3 → watch, 7 → attention, 14 and 21 → critical.
    public init(level: Int) {
        switch level {
        case ..<7: self = .watch
        case 7..<14: self = .attention
        default: self = .critical
        }
    }

    private var rank: Int {
        switch self { case .watch: 0; case .attention: 1; case .critical: 2 }
    }
    public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
}

/// Delivery urgency. High claims first and maps to the providers' immediate priority.
public enum Priority: String, CaseIterable, Sendable, Codable {
    case high, normal, low
}

/// What quiet hours let through.
public enum QuietLevel: String, CaseIterable, Sendable, Codable {
    /// Nothing gets through.
    case none
    /// Only `critical` gets through.
    case criticalOnly = "critical_only"
    /// Everything gets through: quiet hours are informational.
    case all
}

/// What happens to a notification held back by quiet hours.
public enum QuietAction: String, CaseIterable, Sendable, Codable {
    /// Skip it (`quiet_hours`).
    case skip
    /// Deliver it when the window ends.
    case `defer`
}

/// The status of a queue row.
public enum QueueStatus: String, CaseIterable, Sendable, Codable {
    case pending, processing, sent, failed, skipped
}

/// Why a row was skipped; stored in `skip_reason`. The cases follow the order in which `Decider` checks them.
public enum SkipReason: String, CaseIterable, Sendable, Codable {
    case expired
    /// A family's alert whose recipient is no longer an admin of a family of the member it is about
    /// (removed from the family, or made a plain member) since it was enqueued.
    case notFamilyAdmin = "not_family_admin"
    case alertDismissed = "alert_dismissed"
    case alertSnoozed = "alert_snoozed"
    case alertResolved = "alert_resolved"
    case superseded
    /// The recipient turned this type of notification off (a per-type toggle).
    case typeDisabled = "type_disabled"
    case channelDisabled = "channel_disabled"
    case noDestination = "no_destination"
    case quietHours = "quiet_hours"
    /// Not sent because the recipient's adherence made it unnecessary (`AdherenceAnalyzer`);
    /// recorded by the reminders phase, not by the decision.
    case adaptiveFrequency = "adaptive_frequency"
    /// Withdrawn before it was sent: its reminder was cancelled, disabled, deleted or rescheduled, or an
    /// operator cancelled it.
    case cancelled
    /// A copy on another channel, withdrawn because the person read or acted on the notification
    /// elsewhere (sql/058_quiet_once_read.sql), or found read when a pass decides it.
    case readElsewhere = "read_elsewhere"
    /// Collected into its type's digest (`notification_type_digests`): the digest's own row carries it;
    /// recorded when the row is written, never by the decision.
    case digested
    /// A follow-up step whose condition the notification's chain met before its time: read, acted on
    /// or delivered (the trail says which, by whom, when).
    case followUpSatisfied = "follow_up_satisfied"
}

/// The reminder types (`reminders.reminder_type`, and `reminder_type` in a reminder row's payload).
public enum ReminderType: String, CaseIterable, Sendable, Codable {
    /// A daily reminder (to log the day).
    case daily
    /// A dose reminder, `dose_reminder_advance_minutes` before the dose of a test step.
    case dose
    /// A washout period's start or end.
    case washout
    /// A test step starting.
    case testStart = "test_start"
}

/// When a reminder repeats (`reminders.schedule`; the reminders design's `NotificationTrigger.type`,
/// whose `date` is `once`).
public enum ReminderTrigger: String, CaseIterable, Sendable, Codable {
    /// Once, at the instant `at`.
    case once
    /// Every local day at `local_time`.
    case daily
    /// Once a week, on `weekday`, at `local_time`.
    case weekly
}

/// How many reminders adaptive frequency lets through (`AdherenceAnalyzer.recommend`).
public enum NotificationFrequency: String, CaseIterable, Sendable, Codable {
    case full, reduced, minimal
}

/// Why a row was deferred (its `run_after` moved later without using an attempt).
public enum DeferReason: String, CaseIterable, Sendable, Codable {
    case quietHours = "quiet_hours"
    case dailyLimit = "rate_limit_daily"
    case kindSpacing = "rate_limit_kind_spacing"
    case perMinute = "rate_limit_per_minute"
}

/// An entry of the decision trail (`notification_events.event`).
public enum QueueEvent: String, CaseIterable, Sendable {
    case enqueued, claimed, sent, skipped, deferred, failed, superseded, recovered
    /// Never sent (stop signal, failed record flush, throttled provider): back to due, attempt refunded.
    case released
    /// Operator verbs.
    case retried, cancelled, rescheduled, unlocked
    /// The queue row was pruned; the event keeps what it was.
    case pruned
    /// A critical notification that could not reach its recipient was enqueued on another channel.
    case escalated
}

/// Where a pattern-alert episode stands (`pattern_alert_state.episode_status`).
public enum EpisodeStatus: String, CaseIterable, Sendable, Codable {
    case active, resolved
}

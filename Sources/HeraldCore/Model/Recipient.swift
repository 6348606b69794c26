import Foundation

/// A recipient's notification preferences: one row of `user_profiles`.
public struct Preferences: Sendable, Equatable {
    public var userId: UUID
    /// IANA identifier, e.g. "America/New_York". Validated when used: an unknown one fails the row.
    public var timezone: String
    /// "en", "ar" or "pt-BR" (any "ar…" is Arabic, any "pt…" Portuguese); anything else is written in English.
    public var locale: String
    public var email: String?
    public var phoneE164: String?
    public var notifyInApp: Bool
    /// Whether the person is pushed: `user_profiles.notify_push`, or, where they never set it (null),
    /// whether they have an active device token (a registered device is consent to push).
    public var notifyPush: Bool
    /// `user_profiles.notify_push` is null: the person never set it, and `notifyPush` follows their
    /// devices.
    public var pushNeverSet: Bool = false
    public var notifyEmail: Bool
    public var notifySMS: Bool
    public var notifyWhatsApp: Bool
    /// Used instead of notifyEmail / notifySMS when the notification is about another family member.
    public var championNotifyEmail: Bool
    public var championNotifySMS: Bool
    public var quietHoursStart: LocalTime?
    public var quietHoursEnd: LocalTime?
    public var quietLevel: QuietLevel
    public var quietAction: QuietAction
    /// Critical override: a dose reminder whose dose is due within the hour goes through quiet hours
    /// whatever the level.
    public var quietAllowCritical: Bool = true
    /// Per-type toggles: each reminder type, forecasts and prompts.
    public var dailyReminderEnabled: Bool = true
    public var doseReminderEnabled: Bool = true
    public var washoutNotificationsEnabled: Bool = true
    public var testStartReminderEnabled: Bool = true
    public var forecastNotificationsEnabled: Bool = true
    public var promptNotificationsEnabled: Bool = true

    public init(userId: UUID, timezone: String = "UTC", locale: String = "en", email: String? = nil,
                phoneE164: String? = nil, notifyInApp: Bool = true, notifyPush: Bool = false,
                notifyEmail: Bool = false, notifySMS: Bool = false, notifyWhatsApp: Bool = false,
                championNotifyEmail: Bool = true, championNotifySMS: Bool = false,
                quietHoursStart: LocalTime? = nil, quietHoursEnd: LocalTime? = nil,
                quietLevel: QuietLevel = .none, quietAction: QuietAction = .skip) {
        self.userId = userId
        self.timezone = timezone
        self.locale = locale
        self.email = email
        self.phoneE164 = phoneE164
        self.notifyInApp = notifyInApp
        self.notifyPush = notifyPush
        self.notifyEmail = notifyEmail
        self.notifySMS = notifySMS
        self.notifyWhatsApp = notifyWhatsApp
        self.championNotifyEmail = championNotifyEmail
        self.championNotifySMS = championNotifySMS
        self.quietHoursStart = quietHoursStart
        self.quietHoursEnd = quietHoursEnd
        self.quietLevel = quietLevel
        self.quietAction = quietAction
    }
}

/// The episode a pattern-alert row links to: one row of `pattern_alert_state`.
public struct AlertState: Sendable, Equatable {
    public var id: UUID
    public var episodeStatus: EpisodeStatus
    public var currentLevel: Int
    public var lastNotifiedLevel: Int
    public var severity: Severity
    /// Snoozed while the recipient's local date is on or before this date.
    public var snoozeUntil: LocalDate?
    public var dismissedAt: Date?
    public var resolvedAt: Date?

    public init(id: UUID, episodeStatus: EpisodeStatus = .active, currentLevel: Int = 3, lastNotifiedLevel: Int = 0,
                severity: Severity = .watch, snoozeUntil: LocalDate? = nil, dismissedAt: Date? = nil,
                resolvedAt: Date? = nil) {
        self.id = id
        self.episodeStatus = episodeStatus
        self.currentLevel = currentLevel
        self.lastNotifiedLevel = lastNotifiedLevel
        self.severity = severity
        self.snoozeUntil = snoozeUntil
        self.dismissedAt = dismissedAt
        self.resolvedAt = resolvedAt
    }
}

extension AlertState {
    /// The same, with the status as the database stores it (`pattern_alert_state.episode_status`); a
    /// value the schema's check would refuse reads as active.
    public init(id: UUID, episodeStatus raw: String, currentLevel: Int = 3, lastNotifiedLevel: Int = 0,
                severity: Severity = .watch, snoozeUntil: LocalDate? = nil, dismissedAt: Date? = nil,
                resolvedAt: Date? = nil) {
        self.init(id: id, episodeStatus: EpisodeStatus(rawValue: raw) ?? .active, currentLevel: currentLevel,
                  lastNotifiedLevel: lastNotifiedLevel, severity: severity, snoozeUntil: snoozeUntil,
                  dismissedAt: dismissedAt, resolvedAt: resolvedAt)
    }
}

/// One place a notification can be delivered: a device token, a phone, an address, an endpoint.
public struct Destination: Hashable, Sendable {
    /// The provider that serves it: a device token's issuer, the channel's provider, `.inbox`, `.log`.
    public var provider: Provider
    /// The token, phone number, address or URL. Never logged above debug.
    public var address: String
    /// The device token's row id, when the destination is a device token (so it can be deactivated).
    public var deviceTokenId: UUID?
    public var locale: String?

    public init(provider: Provider, address: String, deviceTokenId: UUID? = nil, locale: String? = nil) {
        self.provider = provider
        self.address = address
        self.deviceTokenId = deviceTokenId
        self.locale = locale
    }
}

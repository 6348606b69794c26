/// A notification type's defaults, as a row of `notification_types` holds them: the type a queue row's
/// `kind` names. herald's own kinds (``Kind``) are types; an app adds its own with one insert.
///
///     let types = NotificationTypes([NotificationType("appointment", priority: .high)])
///     types["appointment"]?.limits.perMinute    // 100
public struct NotificationType: Sendable, Equatable {
    /// The type's name: a lowercase slug (`appointment`, `daily_forecast`).
    public var name: String
    /// The priority of a row written without one.
    public var priority: Priority
    /// The Android notification channel of its pushes, when the type names one.
    public var androidChannelId: String?
    /// The iOS category (and Expo `categoryId`) of its pushes, when the type names one.
    public var iosCategory: String?
    /// Rows of this type are critical unless they say otherwise: quiet hours at `critical_only` let them
    /// through and the rate limits do not hold them back.
    public var critical: Bool
    public var limits: RateLimits
    /// Once the person reads or acts on one copy, the copies not yet sent are withdrawn.
    public var quietOnceRead = false

    public init(_ name: String, priority: Priority = .normal, androidChannelId: String? = nil,
                iosCategory: String? = nil, critical: Bool = false, limits: RateLimits = .perMinuteOnly) {
        self.name = name
        self.priority = priority
        self.androidChannelId = androidChannelId
        self.iosCategory = iosCategory
        self.critical = critical
        self.limits = limits
    }

    /// Whether `name` may name a type: a lowercase letter, then up to 62 lowercase letters, digits and `_`
    /// (the table's check).
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (97...122).contains(first), name.utf8.count <= 63 else { return false }
        return name.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 95 }
    }

    /// The built-in kind of this name, if it is one of herald's own.
    public var kind: Kind? { Kind(rawValue: name) }

    /// The type of a badge correction (sql/058_quiet_once_read.sql): a silent push, asked for when the
    /// person reads or acts on a notification, whose `data.badge` is their unread count.
    public static let badgeSync = "badge_sync"
}

/// The types a pass knows, by name: read from `notification_types` once a pass.
public struct NotificationTypes: Sendable, Equatable {
    public private(set) var byName: [String: NotificationType]

    public init(_ types: [NotificationType]) {
        byName = Dictionary(types.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    public subscript(name: String) -> NotificationType? { byName[name] }

    /// Whether any type is quiet once read: when none is, no copy can have been read elsewhere.
    public var anyQuietOnceRead: Bool { byName.values.contains { $0.quietOnceRead } }

    /// The rate limits of every type, for ``RateLimiter``.
    public var ratePolicy: RatePolicy { RatePolicy(byType: byName.mapValues(\.limits)) }

    /// The rows `herald migrate` writes: herald's own kinds and a backend's five. Reminders keep the cap
    /// of 10 a day and an hour between two of a type; prompts (asked for in a number of the user's own)
    /// are exempt; the backend's types are held only to 100 a minute per recipient.
    public static let builtIn = NotificationTypes([
        NotificationType("pattern_alert", priority: .high, limits: .capped),
        NotificationType("daily_forecast", limits: .capped),
        NotificationType("prompt", limits: .exempt),
        NotificationType("reminder", limits: .capped),
        NotificationType("system"),
        NotificationType("assignment", priority: .high),
        NotificationType("calendar"),
        NotificationType("signal", priority: .high),
        NotificationType("message"),
        NotificationType(NotificationType.badgeSync, priority: .low, limits: .exempt),
    ])

    /// Every type given `limits` (a test's relaxed limits, or a table of one policy).
    public func withLimits(_ limits: RateLimits) -> NotificationTypes {
        var copy = self
        for name in byName.keys { copy.byName[name]?.limits = limits }
        return copy
    }
}

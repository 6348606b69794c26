/// A notification ready for an adapter: texts in the recipient's language, deep link, badge, data.
public struct RenderedNotification: Sendable, Equatable {
    public var title: String
    public var body: String
    /// Sent alongside (push `data`, webhook body): kind, queue_id, deep_link and the kind's fields.
    public var data: [String: JSONValue]
    /// e.g. "herald://alerts/<alert_state_id>".
    public var deepLink: String?
    /// The notification category (iOS `category`, seed 002's "PROMPT_CATEGORY").
    public var category: String?
    /// Unread in-app count + 1 (seed 003).
    public var badge: Int
    /// "en" or "ar".
    public var locale: String
    /// "default", or nil for a silent (low priority) notification.
    public var sound: String?

    public init(title: String, body: String, data: [String: JSONValue] = [:], deepLink: String? = nil,
                category: String? = nil, badge: Int = 1, locale: String = "en", sound: String? = "default") {
        self.title = title
        self.body = body
        self.data = data
        self.deepLink = deepLink
        self.category = category
        self.badge = badge
        self.locale = locale
        self.sound = sound
    }
}

public struct RenderOptions: Sendable, Equatable {
    /// Opt-in: put health detail ("Sleep is down 25% for 7 days") on the lock screen. Off by default
    /// (seed 001: generic text; details stay in the app).
    public var detailedLockScreen: Bool = false
    /// The app's URL scheme for deep links.
    public var deepLinkScheme: String = "herald"

    public init(detailedLockScreen: Bool = false, deepLinkScheme: String = "herald") {
        self.detailedLockScreen = detailedLockScreen
        self.deepLinkScheme = deepLinkScheme
    }
}

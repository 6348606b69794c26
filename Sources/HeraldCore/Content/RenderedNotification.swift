import Foundation

/// A notification ready for an adapter: texts in the recipient's language, deep link, badge, data.
public struct RenderedNotification: Sendable, Equatable {
    public var title: String
    public var body: String
    /// Sent alongside (push `data`, webhook body): kind, notification_type, queue_id (= notification_id),
    /// deep_link, the kind's fields and the sender's own `data` keys.
    public var data: [String: JSONValue]
    /// e.g. "herald://alerts/<alert_state_id>".
    public var deepLink: String?
    /// The notification category (iOS `category`, e.g. "PROMPT_CATEGORY" for prompts).
    public var category: String?
    /// The app icon's badge: the recipient's unread in-app count + the payload's `badge_increment`
    /// (default 1).
    public var badge: Int
    /// "en", "ar" or "pt-BR".
    public var locale: String
    /// "default", the app's custom sound (the payload's `"sound": "custom"`), or nil for none (a
    /// low-priority notification, or the payload's `"sound": null`).
    public var sound: String?
    /// A data-only ("background", "silent") push: no title, body, sound or badge reach the device; the
    /// app wakes and reads `data` (APNs `content-available`, Expo `_contentAvailable`, FCM data-only).
    public var silent: Bool
    /// The payload's `image_url` (an https URL), shown as the notification's picture where supported.
    public var imageURL: String?
    /// The action buttons, from the payload's `actions`.
    public var actions: [NotificationAction]
    /// The Android notification channel the notification's type names (`notification_types`), if any.
    public var androidChannel: String?

    public init(title: String, body: String, data: [String: JSONValue] = [:], deepLink: String? = nil,
                category: String? = nil, badge: Int = 1, locale: String = "en", sound: String? = "default",
                silent: Bool = false, imageURL: String? = nil, actions: [NotificationAction] = [],
                androidChannel: String? = nil) {
        self.title = title
        self.body = body
        self.data = data
        self.deepLink = deepLink
        self.category = category
        self.badge = badge
        self.locale = locale
        self.sound = sound
        self.silent = silent
        self.imageURL = imageURL
        self.actions = actions
        self.androidChannel = androidChannel
    }
}

/// An action button on a notification ({id, title, action}). Push providers cannot define buttons in a
/// payload (iOS buttons come from the category the app registers): the buttons travel in `data.actions`
/// and the category names them.
public struct NotificationAction: Sendable, Equatable {
    public var id: String
    public var title: String
    /// What the app does ("dose_marked_taken", "snoozed", a deep link, …); the id when absent.
    public var action: String

    public init(id: String, title: String, action: String? = nil) {
        self.id = id
        self.title = title
        self.action = action ?? id
    }

    public var json: JSONValue {
        ["id": .string(id), "title": .string(title), "action": .string(action)]
    }

    /// The buttons of a payload's `actions` array; entries without a non-empty `id` and `title` are
    /// dropped, and at most `limit` are kept (iOS shows four, Android three).
    public static func parse(_ value: JSONValue?, title titleKey: String = "title", limit: Int = 4) -> [NotificationAction] {
        guard case .array(let list)? = value else { return [] }
        var out: [NotificationAction] = []
        for entry in list {
            guard let id = entry["id"]?.stringValue, !id.isEmpty,
                  let title = entry[titleKey]?.stringValue ?? entry["title"]?.stringValue, !title.isEmpty else { continue }
            // Cut: a push's payload is 4 KB in all, and an action button shows a few words.
            out.append(NotificationAction(id: Truncation.prefix(id, maxUTF8Bytes: 64), title: Truncation.prefix(title, maxUTF8Bytes: 64),
                                          action: entry["action"]?.stringValue.map { Truncation.prefix($0, maxUTF8Bytes: 64) }))
            if out.count == limit { break }
        }
        return out
    }
}

public struct RenderOptions: Sendable, Equatable {
    /// Opt-in: put health detail ("Sleep is down 25% for 7 days") on the lock screen. Off by default
    /// (the lock screen shows generic text; health details stay in the app).
    public var detailedLockScreen: Bool = false
    /// The app's URL scheme for deep links.
    public var deepLinkScheme: String = "herald"
    /// Kinds always sent as silent data-only pushes (HERALD_SILENT_KINDS, e.g. ["prompt"]). A payload's
    /// `"silent": true` makes one notification silent too.
    public var silentKinds: Set<String> = []
    /// The notification types, for their iOS category and Android channel.
    public var types: NotificationTypes = .builtIn
    /// The sound file a payload's `"sound": "custom"` plays (HERALD_CUSTOM_SOUND): a file the app bundles.
    public var customSound: String = "custom.wav"

    public init(detailedLockScreen: Bool = false, deepLinkScheme: String = "herald", silentKinds: Set<String> = [],
                types: NotificationTypes = .builtIn, customSound: String = "custom.wav") {
        self.detailedLockScreen = detailedLockScreen
        self.deepLinkScheme = deepLinkScheme
        self.silentKinds = silentKinds
        self.types = types
        self.customSound = customSound
    }
}

extension RenderedNotification {
    /// Title and body as one line of text, for channels without a title (SMS, WhatsApp parameters):
    /// "Title: body", or whichever is not empty, or just the body when it already starts with the title.
    public var titleAndBody: String {
        let title = self.title.trimmingCharacters(in: .whitespacesAndNewlines)
        let body = self.body.trimmingCharacters(in: .whitespacesAndNewlines)
        if title.isEmpty { return body }
        if body.isEmpty { return title }
        return body.hasPrefix(title) ? body : "\(title): \(body)"
    }
}

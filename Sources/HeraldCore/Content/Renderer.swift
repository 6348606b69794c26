import Foundation

/// Turns a queue row into the words a person sees, in their language.
///
///     let r = Renderer(options: RenderOptions())
///     let n = r.render(item, preferences: prefs, unreadInApp: 2)
///     n.title    // "Health update" (no health detail on the lock screen unless opted in)
///     n.badge    // 3 (the unread count + the payload's `badge_increment`, default 1)
///     n.deepLink // "herald://alerts/<alert_state_id>"
public struct Renderer: Sendable {
    public var options: RenderOptions

    public init(options: RenderOptions = RenderOptions()) {
        self.options = options
    }

    public func render(_ item: QueueItem, preferences: Preferences, unreadInApp: Int) -> RenderedNotification {
        render(item, preferences: preferences, unreadInApp: unreadInApp, locale: preferences.locale)
    }

    /// The same for one destination: a device token's own locale wins over the profile's for push
    /// (`Renderer.locale(profile:destination:)`).
    public func render(_ item: QueueItem, preferences: Preferences, unreadInApp: Int,
                       destination: Destination) -> RenderedNotification {
        render(item, preferences: preferences, unreadInApp: unreadInApp,
               locale: Renderer.locale(profile: preferences.locale, destination: destination))
    }

    /// The locale a notification is written in: the device token's (`device_tokens.locale`) for a push
    /// destination that has one, else the profile's.
    ///
    ///     Renderer.locale(profile: "en", destination: Destination(provider: .expo, address: t, locale: "pt-BR"))  // "pt-BR"
    public static func locale(profile: String, destination: Destination?) -> String {
        guard let destination, destination.provider.issuesDeviceTokens,
              let own = destination.locale?.trimmingCharacters(in: .whitespaces), !own.isEmpty else { return profile }
        return own
    }

    /// The languages templates exist for, as locale tags: "en", "ar", "pt-BR".
    public static let languages = Templates.Language.allCases.map(\.rawValue)

    /// The template language for a locale: "ar…" → "ar", "pt…" → "pt-BR", anything else → "en".
    public static func language(for locale: String) -> String { Templates.language(locale).rawValue }

    /// A local time as the locale writes it: "8:30 PM" (en, 12 h), "20:30" (ar, pt-BR, 24 h).
    public static func formatTime(_ time: LocalTime, locale: String) -> String {
        Templates.time(time, Templates.language(locale))
    }

    /// Renders in `locale` (any tag; "ar…", "pt…", else English), whatever the profile says.
    public func render(_ item: QueueItem, preferences: Preferences, unreadInApp: Int,
                       locale: String) -> RenderedNotification {
        let lang = Templates.language(locale)
        let payload = item.payload ?? [:]
        let id = JSONValue.string(item.id.lowercased)
        var data: [String: JSONValue] = [
            "kind": .string(item.kindRaw),
            "type": .string(item.kindRaw),
            "notification_type": .string(item.kindRaw),
            "queue_id": id,
            "notification_id": id,
        ]
        let draft: Draft
        switch item.kind {
        case _ where Renderer.isDigest(payload): draft = digestDraft(payload, lang, data: &data)
        case .patternAlert: draft = alertDraft(item, payload, lang, data: &data)
        case .dailyForecast: draft = forecastDraft(payload, lang, data: &data)
        case .prompt: draft = promptDraft(lang)
        case .reminder, .system, nil: draft = reminderDraft(item, payload, lang)
        }
        let type = options.types[item.kindRaw]
        var category = draft.category ?? type?.iosCategory ?? item.kind.flatMap { Renderer.defaultCategory[$0] }
        if let own = payload["category"]?.stringValue, Renderer.isIdentifier(own) { category = own }
        let rich = RichContent(payload, lang)
        rich.add(to: &data)

        data["deep_link"] = draft.deepLink.map(JSONValue.string) ?? .null
        let extras = Extras(payload, customSound: options.customSound)
        extras.add(to: &data)
        let silent = isSilent(item, payload)
        let badge = extras.badge(unreadInApp: unreadInApp)
        // A silent push sets no badge itself: the app sets its icon's from `data.badge`.
        if silent { data["badge"] = .number(Double(badge)) }
        return RenderedNotification(
            title: draft.title, body: draft.body, data: data, deepLink: draft.deepLink, category: category,
            badge: badge, locale: lang.rawValue,
            sound: extras.sound(priority: item.priority),
            silent: silent, imageURL: rich.imageURL, actions: rich.actions,
            androidChannel: type?.androidChannelId)
    }

    /// Silent (data-only) when the kind is in `silentKinds` or the payload says `"silent": true`; never
    /// for a critical notification, which must be seen.
    func isSilent(_ item: QueueItem, _ payload: [String: JSONValue]) -> Bool {
        guard item.severity != .critical else { return false }
        return options.silentKinds.contains(item.kindRaw) || payload["silent"]?.boolValue == true
    }

    /// The category (iOS `category`, Expo `categoryId`) of each kind, unless its type names one; a
    /// payload's `category` wins.
    public static let defaultCategory: [Kind: String] = [
        .patternAlert: "ALERT_CATEGORY",
        .dailyForecast: "FORECAST_CATEGORY",
        .prompt: "PROMPT_CATEGORY",
        .reminder: "REMINDER_CATEGORY",
        .system: "SYSTEM_CATEGORY",
    ]

    /// A category name: 1–64 characters of letters, digits, `_`, `-`, `.`.
    static func isIdentifier(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }
    }

    /// The longest deep link a payload may give (bytes).
    public static let maxDeepLinkBytes = 512
    /// The longest text an alert's or forecast's field is copied into `data` with (bytes): the push
    /// payload is 4 KB in all, and only its title and body are cut to fit.
    public static let maxDataValueBytes = 128

    /// A payload field as it goes into `data`: a finite number, a boolean, or a string cut to
    /// `maxDataValueBytes`; anything else (objects, arrays) is left out.
    static func dataValue(_ v: JSONValue) -> JSONValue? {
        switch v {
        case .number(let n): return n.isFinite ? v : nil
        case .bool: return v
        case .string(let s): return .string(Truncation.prefix(s, maxUTF8Bytes: maxDataValueBytes))
        default: return nil
        }
    }
}

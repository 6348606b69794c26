import Foundation

/// Turns a queue row into the words a person sees, in their language.
///
///     let r = Renderer(options: RenderOptions())
///     let n = r.render(item, preferences: prefs, unreadInApp: 2)
///     n.title    // "Health update" (no health detail on the lock screen unless opted in)
///     n.badge    // 3
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
        var data: [String: JSONValue] = [
            "kind": .string(item.kindRaw),
            "type": .string(item.kindRaw),
            "queue_id": .string(item.id.uuidString.lowercased()),
        ]
        var title: String, body: String
        var deepLink: String? = nil
        var category: String? = nil

        switch item.kind {
        case .patternAlert:
            (title, body) = alertText(payload, lang)
            if let id = item.alertStateId {
                deepLink = link("alerts/\(id.uuidString.lowercased())")
                data["alert_state_id"] = .string(id.uuidString.lowercased())
            } else {
                deepLink = link("alerts")
            }
            for (key, names) in Renderer.alertFields {
                if let v = names.lazy.compactMap({ payload[$0] }).first.flatMap(Renderer.dataValue) { data[key] = v }
            }
            if let member = item.memberUserId { data["member_user_id"] = .string(member.uuidString.lowercased()) }

        case .dailyForecast:
            let risk = payload["risk_level"]?.stringValue.map { Truncation.prefix($0, maxUTF8Bytes: Renderer.maxDataValueBytes) } ?? "UNKNOWN"
            let own: String? = switch lang {
            case .ar: payload["summary_ar"]?.stringValue
            case .ptBR: (payload["summary_pt"] ?? payload["summary_pt_br"])?.stringValue
            case .en: nil
            }
            let summary = [own, payload["summary"]?.stringValue, payload["forecast_summary"]?.stringValue]
                .lazy.compactMap { $0 }.first { !$0.isEmpty }
            title = Templates.forecastTitle(lang)
            if let summary {
                body = Templates.forecastBody(lang, risk: risk, summary: summary)
            } else {
                // A forecast made from the weather has no summary: seed 004's text for its risk level.
                body = Templates.forecastBody(lang, risk: risk, summary: Templates.forecastSummary(lang, risk: risk), cut: false)
            }
            let date = payload["date"]?.stringValue.map { Truncation.prefix($0, maxUTF8Bytes: Renderer.maxDataValueBytes) }
            deepLink = link(date.map { "forecast/\($0)" } ?? "forecast")
            data["date"] = date.map(JSONValue.string) ?? .null
            data["risk_level"] = .string(risk)

        case .prompt:
            (title, body) = Templates.prompt(lang)
            category = "PROMPT_CATEGORY"
            deepLink = link("prompt")

        case .reminder, .system, nil:
            let time = payload["time"]?.stringValue.flatMap(LocalTime.init)
            let type = payload["reminder_type"]?.stringValue.flatMap(ReminderType.init(rawValue:))
            let fallback = item.kind != .reminder ? Templates.genericSystem(lang)
                : type.map { Templates.typedReminder(lang, type: $0, washoutEnds: payload["washout_event"]?.stringValue == "end") }
                    ?? time.map { Templates.timedReminder(lang, at: $0) } ?? Templates.genericReminder(lang)
            title = text(payload, "title", lang) ?? fallback.title
            body = text(payload, "body", lang) ?? fallback.body
            if let time {
                let local = Templates.time(time, lang)
                title = title.replacingOccurrences(of: "{time}", with: local)
                body = body.replacingOccurrences(of: "{time}", with: local)
            }
            deepLink = payload["deep_link"]?.stringValue.flatMap(ownLink) ?? link("inbox")
        }
        if category == nil { category = item.kind.flatMap { Renderer.defaultCategory[$0] } }
        if let own = payload["category"]?.stringValue, Renderer.isIdentifier(own) { category = own }

        // Rich content (seed 003 `image_url`, seed 001 `actionButtons`): passed to each provider's field
        // and kept in `data` for the app.
        let image = payload["image_url"]?.stringValue.flatMap(Renderer.imageURL)
        if let image { data["image_url"] = .string(image) }
        let titleKey: String
        switch lang {
        case .ar: titleKey = "title_ar"
        case .ptBR: titleKey = "title_pt"
        case .en: titleKey = "title_en"
        }
        let actions = NotificationAction.parse(payload["actions"] ?? payload["action_buttons"], title: titleKey)
        if !actions.isEmpty { data["actions"] = .array(actions.map(\.json)) }

        data["deep_link"] = deepLink.map(JSONValue.string) ?? .null
        return RenderedNotification(
            title: title, body: body, data: data, deepLink: deepLink, category: category,
            badge: max(0, unreadInApp) + 1, locale: lang.rawValue,
            sound: item.priority == .low ? nil : "default",
            silent: isSilent(item, payload), imageURL: image, actions: actions)
    }

    /// Silent (data-only) when the kind is in `silentKinds` or the payload says `"silent": true`; never
    /// for a critical notification, which must be seen.
    func isSilent(_ item: QueueItem, _ payload: [String: JSONValue]) -> Bool {
        guard item.severity != .critical else { return false }
        return options.silentKinds.contains(item.kindRaw) || payload["silent"]?.boolValue == true
    }

    /// The category (iOS `category`, Expo `categoryId`) of each kind; a payload's `category` wins.
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

    /// An image URL is passed on only when it is https, without spaces, at most 1,024 bytes.
    static func imageURL(_ s: String) -> String? {
        guard s.lowercased().hasPrefix("https://"), s.utf8.count <= 1024, !s.contains(where: { $0.isWhitespace }),
              let url = URL(string: s), url.host?.isEmpty == false else { return nil }
        return s
    }

    // MARK: Helpers

    /// The payload keys copied into an alert's `data` (first key present wins).
    static let alertFields: [(String, [String])] = [
        ("metric", ["metric_type", "metric"]),
        ("pattern", ["pattern_type", "pattern"]),
        ("level", ["level"]),
        ("severity", ["severity"]),
        ("baseline", ["baseline_value", "baseline"]),
        ("recent", ["recent_value", "recent"]),
        ("deviation", ["deviation_percent", "deviation"]),
    ]

    /// The most a detailed alert states: a payload number beyond these (or not a number) gets the
    /// generic text, never a trap nor "up 1000000000000000019884624838656%".
    static let maxDetailedPercent: Double = 100_000
    static let maxDetailedDays = 1_000

    private func alertText(_ p: [String: JSONValue], _ lang: Templates.Language) -> (title: String, body: String) {
        guard options.detailedLockScreen,
              let metric = (p["metric_type"] ?? p["metric"])?.stringValue,
              let deviation = (p["deviation_percent"] ?? p["deviation"])?.doubleValue,
              deviation.isFinite, abs(deviation) <= Renderer.maxDetailedPercent,
              let days = p["level"]?.intValue, (1...Renderer.maxDetailedDays).contains(days)
        else { return Templates.genericAlert(lang) }
        let pattern = (p["pattern_type"] ?? p["pattern"])?.stringValue
        let rising = pattern.map { $0.hasPrefix("rise") } ?? (deviation > 0)
        return Templates.detailedAlert(lang, metric: metric, rising: rising,
                                       percent: Int(abs(deviation).rounded()), days: days)
    }

    /// The payload's text in the recipient's language: `title_ar` for Arabic, `title_pt` (or
    /// `title_pt_br`) for Portuguese, `title_en` for English when present, else `title`.
    private func text(_ p: [String: JSONValue], _ key: String, _ lang: Templates.Language) -> String? {
        let own: String? = switch lang {
        case .ar: p["\(key)_ar"]?.stringValue
        case .ptBR: (p["\(key)_pt"] ?? p["\(key)_pt_br"])?.stringValue
        case .en: p["\(key)_en"]?.stringValue
        }
        let value = own ?? p[key]?.stringValue
        return value?.isEmpty == false ? value : nil
    }

    private func link(_ path: String) -> String { "\(options.deepLinkScheme)://\(path)" }

    /// A payload-supplied deep link is kept only when it uses the app's own scheme (seed 003: validate
    /// deep links), is printable ASCII (no controls, bidi overrides or spaces) and fits in `maxDeepLinkBytes`;
    /// anything else falls back to the inbox. A push's payload is 4 KB in all: a longer link would fail it.
    private func ownLink(_ s: String) -> String? {
        s.hasPrefix("\(options.deepLinkScheme)://") && s.utf8.count <= Renderer.maxDeepLinkBytes
            && s.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) ? s : nil
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

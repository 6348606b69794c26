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
        let lang = Templates.language(preferences.locale)
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
                if let v = names.lazy.compactMap({ payload[$0] }).first { data[key] = v }
            }
            if let member = item.memberUserId { data["member_user_id"] = .string(member.uuidString.lowercased()) }

        case .dailyForecast:
            let risk = payload["risk_level"]?.stringValue ?? "UNKNOWN"
            let summary = (lang == .ar ? payload["summary_ar"]?.stringValue : nil)
                ?? payload["summary"]?.stringValue ?? payload["forecast_summary"]?.stringValue
            title = Templates.forecastTitle(lang)
            body = Templates.forecastBody(lang, risk: risk, summary: summary)
            let date = payload["date"]?.stringValue
            deepLink = link(date.map { "forecast/\($0)" } ?? "forecast")
            data["date"] = date.map(JSONValue.string) ?? .null
            data["risk_level"] = .string(risk)

        case .prompt:
            (title, body) = Templates.prompt(lang)
            category = "PROMPT_CATEGORY"
            deepLink = link("prompt")

        case .reminder, .system, nil:
            let fallback = item.kind == .reminder ? Templates.genericReminder(lang) : Templates.genericSystem(lang)
            title = text(payload, "title", lang) ?? fallback.title
            body = text(payload, "body", lang) ?? fallback.body
            deepLink = payload["deep_link"]?.stringValue.flatMap(ownLink) ?? link("inbox")
        }

        data["deep_link"] = deepLink.map(JSONValue.string) ?? .null
        return RenderedNotification(
            title: title, body: body, data: data, deepLink: deepLink, category: category,
            badge: max(0, unreadInApp) + 1, locale: lang.rawValue,
            sound: item.priority == .low ? nil : "default")
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

    /// The payload's text in the recipient's language: `title_ar` for Arabic when present, else `title`.
    private func text(_ p: [String: JSONValue], _ key: String, _ lang: Templates.Language) -> String? {
        let own = lang == .ar ? p["\(key)_ar"]?.stringValue : p["\(key)_en"]?.stringValue
        let value = own ?? p[key]?.stringValue
        return value?.isEmpty == false ? value : nil
    }

    private func link(_ path: String) -> String { "\(options.deepLinkScheme)://\(path)" }

    /// A payload-supplied deep link is kept only when it uses the app's own scheme (seed 003: validate
    /// deep links); anything else falls back to the inbox.
    private func ownLink(_ s: String) -> String? {
        s.hasPrefix("\(options.deepLinkScheme)://") && !s.contains(where: { $0.isWhitespace }) ? s : nil
    }
}

import Foundation

/// What each kind of notification says: its title and body, its deep link, and the fields it adds to
/// `data`. `Renderer.render` picks one by the row's kind and adds what every kind has.
extension Renderer {
    /// One kind's words and link, before what every kind adds (the default category, rich content).
    ///
    ///     let draft = promptDraft(.en)   // title and body of a prompt, "herald://prompt", PROMPT_CATEGORY
    struct Draft {
        var title: String
        var body: String
        var deepLink: String?
        /// Nil: the kind's `defaultCategory`.
        var category: String? = nil
    }

    /// A pattern alert: the generic text unless the lock screen may show details, a link to its
    /// episode, and the payload's alert fields (`alertFields`) in `data`.
    func alertDraft(_ item: QueueItem, _ payload: [String: JSONValue], _ lang: Templates.Language,
                    data: inout [String: JSONValue]) -> Draft {
        let (title, body) = alertText(payload, lang)
        let deepLink: String
        if let id = item.alertStateId {
            deepLink = link("alerts/\(id.lowercased)")
            data["alert_state_id"] = .string(id.lowercased)
        } else {
            deepLink = link("alerts")
        }
        for (key, names) in Renderer.alertFields {
            if let v = names.lazy.compactMap({ payload[$0] }).first.flatMap(Renderer.dataValue) { data[key] = v }
        }
        if let member = item.memberUserId { data["member_user_id"] = .string(member.lowercased) }
        return Draft(title: title, body: body, deepLink: deepLink)
    }

    /// A daily forecast: its risk level and summary in the recipient's language (a forecast made from
    /// the weather has no summary: the fixed text for its risk level), a link to its date.
    ///
    /// A forecast herald made carries its words' language (`summary_locale`): its summary is the body's,
    /// whole, where that is the recipient's language; elsewhere the fixed text for the risk level in
    /// theirs. A backend's own summary (no `summary_locale`) keeps the design's first 50 characters.
    func forecastDraft(_ payload: [String: JSONValue], _ lang: Templates.Language,
                       data: inout [String: JSONValue]) -> Draft {
        let risk = payload["risk_level"]?.stringValue.map { Truncation.prefix($0, maxUTF8Bytes: Renderer.maxDataValueBytes) } ?? "UNKNOWN"
        let date = payload["date"]?.stringValue.map { Truncation.prefix($0, maxUTF8Bytes: Renderer.maxDataValueBytes) }
        data["date"] = date.map(JSONValue.string) ?? .null
        data["risk_level"] = .string(risk)
        let deepLink = link(date.map { "forecast/\($0)" } ?? "forecast")
        if let locale = payload["summary_locale"]?.stringValue {
            let own = Templates.language(locale) == lang ? payload["summary"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } : nil
            let summary = own ?? Templates.forecastSummary(lang, risk: risk)
            return Draft(title: Templates.forecastTitle(lang), body: Templates.forecastBody(lang, risk: risk, summary: summary, cut: false),
                         deepLink: deepLink)
        }
        let own: String? = switch lang {
        case .ar: payload["summary_ar"]?.stringValue
        case .ptBR: (payload["summary_pt"] ?? payload["summary_pt_br"])?.stringValue
        case .en: nil
        }
        let summary = [own, payload["summary"]?.stringValue, payload["forecast_summary"]?.stringValue]
            .lazy.compactMap { $0 }.first { !$0.isEmpty }
        let body = if let summary {
            Templates.forecastBody(lang, risk: risk, summary: summary)
        } else {
            Templates.forecastBody(lang, risk: risk, summary: Templates.forecastSummary(lang, risk: risk), cut: false)
        }
        return Draft(title: Templates.forecastTitle(lang), body: body, deepLink: deepLink)
    }

    /// A prompt: the fixed question, a link to answer it.
    func promptDraft(_ lang: Templates.Language) -> Draft {
        let (title, body) = Templates.prompt(lang)
        return Draft(title: title, body: body, deepLink: link("prompt"), category: "PROMPT_CATEGORY")
    }

    /// A reminder or a system notification: the payload's own title and body in the recipient's
    /// language, else the text of its reminder type (or its time); `{time}` becomes the payload's
    /// `time` as the locale writes it. The payload's deep link when it is the app's own, else the inbox.
    func reminderDraft(_ item: QueueItem, _ payload: [String: JSONValue], _ lang: Templates.Language) -> Draft {
        let time = payload["time"]?.stringValue.flatMap(LocalTime.init)
        let type = payload["reminder_type"]?.stringValue.flatMap(ReminderType.init(rawValue:))
        let fallback = item.kind != .reminder ? Templates.genericSystem(lang)
            : type.map { Templates.typedReminder(lang, type: $0, washoutEnds: payload["washout_event"]?.stringValue == "end") }
                ?? time.map { Templates.timedReminder(lang, at: $0) } ?? Templates.genericReminder(lang)
        var title = text(payload, "title", lang) ?? fallback.title
        var body = text(payload, "body", lang) ?? fallback.body
        if let time {
            let local = Templates.time(time, lang)
            title = title.replacingOccurrences(of: "{time}", with: local)
            body = body.replacingOccurrences(of: "{time}", with: local)
        }
        return Draft(title: title, body: body, deepLink: payload["deep_link"]?.stringValue.flatMap(ownLink) ?? link("inbox"))
    }

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
    /// `title_pt_br`) for Portuguese, `title_en` for English; when that is missing or empty, the English
    /// text (`title_en`), then the plain `title`. The first non-empty one wins.
    ///
    ///     text(["title_en": "New", "title_ar": ""], "title", .ar)   // "New"
    func text(_ p: [String: JSONValue], _ key: String, _ lang: Templates.Language) -> String? {
        let own: [String] = switch lang {
        case .ar: ["\(key)_ar"]
        case .ptBR: ["\(key)_pt", "\(key)_pt_br"]
        case .en: []
        }
        return (own + ["\(key)_en", key]).lazy.compactMap { p[$0]?.stringValue }.first { !$0.isEmpty }
    }

    private func link(_ path: String) -> String { "\(options.deepLinkScheme)://\(path)" }

    /// A payload-supplied deep link is kept only when it uses the app's own scheme, is printable ASCII
    /// (no controls, bidi overrides or spaces) and fits in `maxDeepLinkBytes`; anything else falls back
    /// to the inbox. A push's payload is 4 KB in all: a longer link would fail it.
    private func ownLink(_ s: String) -> String? {
        s.hasPrefix("\(options.deepLinkScheme)://") && s.utf8.count <= Renderer.maxDeepLinkBytes
            && s.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) ? s : nil
    }
}

import Foundation

/// Rule 0, validation: a row the other rules cannot judge fails, with a message for `last_error`.
extension Decider {
    /// Why a row fails validation: a readable message (never the payload's content, which may carry
    /// health details) and the rule's name for the trail.
    struct RowFailure: Error {
        let message: String
        let rule: String

        init(_ message: String, rule: String) {
            self.message = message
            self.rule = rule
        }
    }

    /// A row that passed validation, with what the later rules read from it.
    ///
    ///     let row = try CheckedRow(item, context, trail: &trail)   // or throws RowFailure(…, rule: "unknown_timezone")
    ///     row.zone                                                 // the recipient's time zone
    struct CheckedRow {
        let item: QueueItem
        let context: DecisionContext
        let channel: Channel
        /// herald's own kind, when the row's type is one; nil for a type an app added.
        let kind: Kind?
        let type: NotificationType
        let prefs: Preferences
        let zone: TimeZone
        /// A daily forecast's local date (payload `date`).
        let forecastDate: LocalDate?
        /// A pattern alert's level, in days (payload `level`).
        let level: Int?

        /// The linked alert episode, if the row links one.
        var alert: AlertState? { context.alert }

        /// The severity the rules go by: the episode's, else the row's, else `critical` for a critical
        /// type and `watch` for the others.
        var severity: Severity { alert?.severity ?? item.severity ?? (type.critical ? .critical : .watch) }

        /// Reads the row, or throws why it fails: unknown channel or type (not in `types`), payload not an object (or a
        /// forecast's date or an alert's level unreadable), no profile, unknown time zone, linked episode
        /// missing. Notes the recipient's time zone in `trail` as soon as it is known.
        init(_ item: QueueItem, _ context: DecisionContext, types: NotificationTypes,
             trail: inout Trail) throws(RowFailure) {
            guard let channel = item.channel else {
                throw RowFailure("unknown channel '\(item.channelRaw)'", rule: "unknown_channel")
            }
            guard let type = types[item.kindRaw] else {
                throw RowFailure("unknown notification type '\(item.kindRaw.prefix(64))'", rule: "unknown_kind")
            }
            let kind = type.kind
            guard let payload = item.payload else {
                // Says what the payload is, never what it holds: it may carry health details, and this
                // message reaches last_error and a warning.
                throw RowFailure("malformed payload: not a JSON object (\(Redaction.describeJSON(item.payloadText)))",
                                 rule: "malformed_payload")
            }
            forecastDate = try Self.forecastDate(kind, payload)
            level = try Self.level(kind, payload)
            let recipient = item.recipientUserId.lowercased
            guard let prefs = context.preferences else {
                throw RowFailure("recipient \(recipient) has no user_profiles row", rule: "missing_profile")
            }
            trail["timezone"] = .string(prefs.timezone)
            guard let zone = Zone.named(prefs.timezone) else {
                throw RowFailure("unknown timezone '\(prefs.timezone)' for recipient \(recipient)", rule: "unknown_timezone")
            }
            if let id = item.alertStateId, context.alert == nil {
                throw RowFailure("alert episode \(id.lowercased) not found", rule: "alert_not_found")
            }
            (self.item, self.context, self.channel, self.kind, self.type) = (item, context, channel, kind, type)
            (self.prefs, self.zone) = (prefs, zone)
        }

        /// A daily forecast's `date`, which must read as YYYY-MM-DD; nil for other kinds or no date.
        static func forecastDate(_ kind: Kind?, _ payload: [String: JSONValue]) throws(RowFailure) -> LocalDate? {
            guard kind == .dailyForecast, let raw = payload["date"] else { return nil }
            guard let text = raw.stringValue, let date = LocalDate(text) else {
                throw RowFailure("malformed payload: daily_forecast date \(Decider.quotedDate(raw)) is not YYYY-MM-DD",
                                 rule: "malformed_payload")
            }
            return date
        }

        /// A pattern alert's `level`, a number of days; nil for other kinds or no level. One that is not
        /// a small whole number (1e300, 7.5, "seven") cannot be compared with the episode's, so the row
        /// cannot be judged.
        static func level(_ kind: Kind?, _ payload: [String: JSONValue]) throws(RowFailure) -> Int? {
            guard kind == .patternAlert, let raw = payload["level"], raw != .null else { return nil }
            guard let n = raw.intValue, (0...Decider.maxLevel).contains(n) else {
                throw RowFailure("malformed payload: pattern_alert level \(raw.jsonText.prefix(40)) is not a whole number of days (0–\(Decider.maxLevel))",
                                 rule: "malformed_payload")
            }
            return n
        }
    }

    /// A daily forecast's unreadable `date`, for last_error: quoted when it looks like a date written
    /// another way ('25/01/2026'), otherwise only described, since the payload may hold health details.
    static func quotedDate(_ raw: JSONValue) -> String {
        if let text = raw.stringValue, text.count <= 32,
           text.allSatisfy({ $0.isASCII && ($0.isNumber || "-/.: TZ+".contains($0)) }) {
            return "'\(text)'"
        }
        return "(\(Redaction.describe(raw)))"
    }
}

import Foundation

/// The team's forecast insight service (`HERALD_FORECAST_INSIGHT_URL`): what herald asks it and what it
/// takes from the answer. herald POSTs one forecast at a time:
///
///     {"type":"forecast.insight","user_id":"…","date":"2026-01-25","locale":"ar","notification_time":"08:00",
///      "place":{"latitude":35.7,"longitude":139.7,"name":"Tokyo"},
///      "weather":{"hourly":{"time":[…],"pressure_msl":[…],…}},
///      "risk":{"level":"HIGH","pressure_change_hpa":-12.5}}
///
/// and takes a 2xx answer of this shape (`daily_insight` optional: without it herald builds the object
/// from the three texts):
///
///     {"forecast_summary":"…","why_explanation":"…","comfort_tip":"…",
///      "daily_insight":{"summary_sentence":"…","why_line":"…","comfort_tip":"…","sign_off":"…"}}
///
/// The answer is hostile input. `parse` only throws (`Invalid`) on anything but that shape: not a JSON
/// object, a text missing, empty, not a string, too long, or holding control or bidirectional-override
/// characters, a `daily_insight` that is not an object or is too large, a body over `maxBodyBytes`. The
/// caller then uses herald's own words (`ForecastWords.templated`).
public enum ForecastInsight {
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The largest answer read.
    public static let maxBodyBytes = 16_384
    /// The longest summary, in characters: it is the push's body.
    public static let maxSummaryCharacters = 280
    /// The longest explanation or tip, in characters.
    public static let maxTextCharacters = 1_000
    /// The largest `daily_insight` object, as JSON text.
    public static let maxInsightBytes = 4_096

    /// The request's body for one forecast.
    public static func requestBody(user: UUID, date: LocalDate, locale: String, notificationTime: LocalTime,
                                   latitude: Double?, longitude: Double?, placeName: String?,
                                   hourly: JSONValue?, risk: RiskLevel, pressureChangeHPa: Double?) -> JSONValue {
        [
            "type": "forecast.insight",
            "user_id": .string(user.lowercased),
            "date": .string(date.description),
            "locale": .string(ForecastWords.language(locale)),
            "notification_time": .string(notificationTime.description),
            "place": ["latitude": latitude.map(JSONValue.number) ?? .null,
                      "longitude": longitude.map(JSONValue.number) ?? .null,
                      "name": placeName.map(JSONValue.string) ?? .null],
            "weather": ["hourly": hourly ?? .null],
            "risk": ["level": .string(risk.rawValue),
                     "pressure_change_hpa": pressureChangeHPa.flatMap { $0.isFinite ? JSONValue.number($0) : nil } ?? .null],
        ]
    }

    /// The words in the service's answer, taken to be in the language asked for (`locale`).
    public static func parse(_ body: [UInt8], locale: String) throws -> ForecastWords {
        guard body.count <= maxBodyBytes else { throw Invalid(description: "the answer is over \(maxBodyBytes) bytes") }
        guard let json = try? JSONValue.parse(Data(body)), case .object(let fields) = json else {
            throw Invalid(description: "the answer is not a JSON object")
        }
        let summary = try text(fields, "forecast_summary", max: maxSummaryCharacters)
        let why = try text(fields, "why_explanation", max: maxTextCharacters)
        let tip = try text(fields, "comfort_tip", max: maxTextCharacters)
        var insight: JSONValue? = nil
        switch fields["daily_insight"] {
        case nil, .null?:
            break
        case .object(let o)?:
            let encoded = JSONValue.object(o).jsonText
            guard encoded.utf8.count <= maxInsightBytes else {
                throw Invalid(description: "daily_insight is over \(maxInsightBytes) bytes")
            }
            insight = .object(o)
        default:
            throw Invalid(description: "daily_insight is not an object")
        }
        return ForecastWords(summary: summary, why: why, comfortTip: tip, dailyInsight: insight,
                             locale: ForecastWords.language(locale))
    }

    /// A text field: a string, not empty once trimmed, at most `max` characters (and `4 × max` Unicode
    /// scalars: `daily_forecasts` holds at most 4,000), without control or bidirectional-override
    /// characters. Returned trimmed.
    static func text(_ fields: [String: JSONValue], _ key: String, max: Int) throws -> String {
        guard case .string(let raw)? = fields[key] else { throw Invalid(description: "\(key) is missing or not a string") }
        let s = raw.trimmingCharacters(in: .whitespaces)
        guard !s.isEmpty else { throw Invalid(description: "\(key) is empty") }
        // A character may be many Unicode scalars (combining marks): the database counts scalars.
        guard s.count <= max, s.unicodeScalars.count <= max * 4 else {
            throw Invalid(description: "\(key) is over \(max) characters")
        }
        guard !s.unicodeScalars.contains(where: isForbidden) else {
            throw Invalid(description: "\(key) holds control or bidirectional-override characters")
        }
        return s
    }

    /// Controls (C0, DEL, C1, line and paragraph separators) and the bidirectional embeddings, overrides
    /// and isolates, which could reorder what the lock screen shows.
    static func isForbidden(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0xFFFD: true
        default: false
        }
    }
}

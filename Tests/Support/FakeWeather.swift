import Foundation

/// A weather service speaking Open-Meteo's forecast API over TLS and HTTP/2, as the real one does: it
/// answers each request for its `timezone` (wall times at that zone's offset on 2026-01-25, given as
/// `utc_offset_seconds`, from 2026-01-24 for nine days), with the pressure `pressure` gives for each
/// hour's instant, and `current` and `daily` when asked for. `answer` may replace any answer (a cell
/// that fails). It keeps every request it received.
///
///     let weather = try FakeWeather()
///     // a worker with weather.settings (WEATHER_URL, HERALD_CA_FILE) asks it
///     weather.requests.count      // one per place cell
public final class FakeWeather: @unchecked Sendable {
    public let certificates: TestCertificates
    public let server: FakeHTTPServer
    /// Whether the certificates are this fake's own, removed with it.
    private let ownsCertificates: Bool

    /// The request's coordinates and zone, as the query gives them.
    public struct Asked: Sendable {
        public var latitude: Double
        public var longitude: Double
        public var timezone: String
        public var path: String
    }

    /// `certificates`: those of the other fakes a worker talks to (its HERALD_CA_FILE names one CA);
    /// nil: its own, removed with it.
    public init(certificates: TestCertificates? = nil, pressure: @escaping @Sendable (Date) -> Double = FakeWeather.falling,
                answer: @escaping @Sendable (Asked) -> FakeResponse? = { _ in nil }) throws {
        ownsCertificates = certificates == nil
        let certificates = try certificates ?? TestCertificates.make()
        self.certificates = certificates
        server = try FakeHTTPServer(tls: certificates) { request in
            let asked = FakeWeather.asked(request.path)
            if let replaced = answer(asked) { return replaced }
            guard let zone = TimeZone(identifier: asked.timezone) else {
                return .json(400, #"{"error":true,"reason":"Invalid timezone"}"#)
            }
            return .json(200, FakeWeather.body(zone: zone, pressure: pressure, path: request.path))
        }
    }

    deinit {
        server.shutdown()
        if ownsCertificates { certificates.remove() }
    }

    /// The settings that point a worker at this service.
    public var settings: [String: String] { ["WEATHER_URL": server.baseURL, "HERALD_CA_FILE": certificates.caFile] }

    public var requests: [Asked] { server.requests.map { FakeWeather.asked($0.path) } }

    /// Pressure falling half a hectopascal an hour from 1030 at 2026-01-24T00:00Z: 12 hPa a day, HIGH.
    public static let falling: @Sendable (Date) -> Double = { t in
        1030 - (t.timeIntervalSince1970 - instant("2026-01-24T00:00:00Z").timeIntervalSince1970) / 3600 * 0.5
    }

    public static func asked(_ path: String) -> Asked {
        let query = URLComponents(string: "https://weather.invalid" + path)?.queryItems ?? []
        func item(_ name: String) -> String { query.first { $0.name == name }?.value ?? "" }
        return Asked(latitude: Double(item("latitude")) ?? .nan, longitude: Double(item("longitude")) ?? .nan,
                     timezone: item("timezone"), path: path)
    }

    public static func body(zone: TimeZone, pressure: (Date) -> Double, path: String) -> String {
        let offset = zone.secondsFromGMT(for: instant("2026-01-25T00:00:00Z"))
        let start = instant("2026-01-24T00:00:00Z").addingTimeInterval(Double(-offset))
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(secondsFromGMT: offset)
        f.dateFormat = "yyyy-MM-dd'T'HH:mm"
        func wall(_ t: Date) -> String { f.string(from: t) }
        let hours = (0..<(9 * 24)).map { start.addingTimeInterval(Double($0) * 3600) }
        var fields = [
            #""utc_offset_seconds":\#(offset)"#, #""timezone":"\#(zone.identifier)""#,
            #""hourly":{"time":[\#(hours.map { "\"\(wall($0))\"" }.joined(separator: ","))],"#
                + #""pressure_msl":[\#(hours.map { String(pressure($0)) }.joined(separator: ","))],"#
                + #""temperature_2m":[\#(hours.map { _ in "4.5" }.joined(separator: ","))]}"#,
        ]
        if path.contains("current=") {
            fields.append(#""current":{"time":"\#(wall(instant("2026-01-25T07:00:00Z")))","interval":900,"#
                + #""temperature_2m":4.5,"relative_humidity_2m":81,"surface_pressure":1012.3,"weather_code":3}"#)
        }
        if path.contains("daily=") {
            let day = DateFormatter()
            day.locale = Locale(identifier: "en_US_POSIX")
            day.timeZone = TimeZone(identifier: "UTC")
            day.dateFormat = "yyyy-MM-dd"
            let days = (0..<9).map { "\"\(day.string(from: instant("2026-01-24T00:00:00Z").addingTimeInterval(Double($0) * 86_400)))\"" }
            fields.append(#""daily":{"time":[\#(days.joined(separator: ","))],"weather_code":[\#((0..<9).map { String(60 + $0) }.joined(separator: ","))],"#
                + #""temperature_2m_max":[\#((0..<9).map { "\(5 + $0).5" }.joined(separator: ","))],"#
                + #""temperature_2m_min":[\#((0..<9).map { _ in "-1.0" }.joined(separator: ","))],"#
                + #""precipitation_probability_max":[\#((0..<9).map { String($0 * 10) }.joined(separator: ","))]}"#)
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// An instant written as ISO 8601 with a zone ("2026-01-25T07:00:00Z").
    static func instant(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)!
    }
}

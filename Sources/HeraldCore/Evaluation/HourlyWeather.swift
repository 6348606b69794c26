import Foundation

/// The Open-Meteo forecast answer's hourly series, with wall times as the answer writes them (at its
/// `utc_offset_seconds`: `CellWeather` reads them as instants):
///
///     {"hourly":{"time":["2026-01-25T00:00",…],"pressure_msl":[1013.2,…],"temperature_2m":[…],
///                "relative_humidity_2m":[…]}}
///
///     let w = try HourlyWeather(json: JSONValue.parse(body))
///     w.pressureChange(from: day("2026-01-25"), at: t("08:00"))    // e.g. -6.4 (hPa): pressure falling
///
/// `time` and `pressure_msl` are required; temperature and humidity are optional. A null value is nil.
public struct HourlyWeather: Sendable, Equatable {
    public var times: [LocalDateTime]
    public var pressure: [Double?]
    public var temperature: [Double?]
    public var humidity: [Double?]

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(times: [LocalDateTime], pressure: [Double?], temperature: [Double?] = [], humidity: [Double?] = []) {
        self.times = times
        self.pressure = pressure
        self.temperature = temperature
        self.humidity = humidity
    }

    public init(json: JSONValue) throws {
        guard let hourly = json["hourly"], hourly.objectValue != nil else {
            throw ParseError(description: "no \"hourly\" object")
        }
        guard case .array(let rawTimes)? = hourly["time"] else { throw ParseError(description: "no hourly.time array") }
        times = try rawTimes.map { raw in
            guard let s = raw.stringValue, let t = Self.localDateTime(s) else {
                throw ParseError(description: "hourly.time has a malformed time: \(raw.jsonText)")
            }
            return t
        }
        func series(_ key: String, required: Bool) throws -> [Double?] {
            guard let value = hourly[key] else {
                if required { throw ParseError(description: "no hourly.\(key) array") }
                return []
            }
            guard case .array(let items) = value, items.count == rawTimes.count else {
                throw ParseError(description: "hourly.\(key) is not an array of \(rawTimes.count) values")
            }
            return try items.map { item in
                switch item {
                case .null: return nil
                case .number(let n): return n
                default: throw ParseError(description: "hourly.\(key) has a non-number: \(item.jsonText)")
                }
            }
        }
        pressure = try series("pressure_msl", required: true)
        temperature = try series("temperature_2m", required: false)
        humidity = try series("relative_humidity_2m", required: false)
    }

    /// The pressure at `date` `time` and 24 hours later (the same wall time the next day), each from the
    /// nearest hour at or before it, and their difference (later − earlier, hPa). Nil when either
    /// value is missing (null, or not within the hour before: outside the series).
    ///
    /// The series carries no offsets, so on a DST-change day "24 hours later" is the next day's same wall
    /// time — 23 or 25 real hours.
    public func pressureChange(from date: LocalDate, at time: LocalTime) -> Double? {
        let at = LocalDateTime(date: date, time: time)
        let later = LocalDateTime(date: date.adding(days: 1), time: time)
        guard let p0 = pressure(at: at), let p1 = pressure(at: later) else { return nil }
        return p1 - p0
    }

    /// The pressure of the latest hour at or before `wall`, when that hour is less than an hour before it.
    public func pressure(at wall: LocalDateTime) -> Double? {
        let target = wall.wallSeconds
        var best: Int? = nil
        for (i, t) in times.enumerated() where t.wallSeconds <= target {
            if best == nil || t.wallSeconds > times[best!].wallSeconds { best = i }
        }
        guard let i = best, target - times[i].wallSeconds < 3600 else { return nil }
        return pressure[i]
    }

    /// "2026-01-25T08:00" (seconds optional).
    static func localDateTime(_ s: String) -> LocalDateTime? {
        let parts = s.split(separator: "T", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 10, let date = LocalDate(String(parts[0])),
              let time = LocalTime(String(parts[1])), time.hour < 24 else { return nil }
        return LocalDateTime(date: date, time: time)
    }
}

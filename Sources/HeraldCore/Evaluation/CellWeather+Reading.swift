import Foundation

/// What one person's forecast takes from their cell's answer, in their own zone: the pressure change
/// from their notification instant, the hours of their date and the next, the conditions now, and the
/// seven days from their date. And the answer as herald keeps it between passes (`stored`).
extension CellWeather {
    /// The pressure at `at` and at `dayLater` (each from the latest hour at or before it, within the
    /// hour) and their difference, later − earlier, in hPa. Nil when either is missing.
    public func pressureChange(at: Date, dayLater: Date) -> Double? {
        guard let p0 = hourly.pressure(at: wall(at)), let p1 = hourly.pressure(at: wall(dayLater)) else { return nil }
        return p1 - p0
    }

    /// The hours of `date` and the day after in `zone`, as Open-Meteo's columns with each time the
    /// wall time in `zone` (`"2026-01-25T08:00"`; an hour repeated when clocks go back appears twice).
    public func hourly(on date: LocalDate, in zone: TimeZone) -> JSONValue {
        let start = Zone.instant(of: date, LocalTime(hour: 0, minute: 0), in: zone).timeIntervalSince1970
        let end = Zone.instant(of: date.adding(days: 2), LocalTime(hour: 0, minute: 0), in: zone).timeIntervalSince1970
        var times: [JSONValue] = [], pressure: [JSONValue] = [], temperature: [JSONValue] = [], humidity: [JSONValue] = []
        for (i, t) in hourly.times.enumerated() {
            let instant = Double(t.wallSeconds - offset)
            guard instant >= start, instant < end else { continue }
            times.append(.string(Self.minuteText(Zone.local(Date(timeIntervalSince1970: instant), in: zone))))
            pressure.append(Self.json(hourly.pressure[i]))
            if i < hourly.temperature.count { temperature.append(Self.json(hourly.temperature[i])) }
            if i < hourly.humidity.count { humidity.append(Self.json(hourly.humidity[i])) }
        }
        var columns: [String: JSONValue] = ["time": .array(times), "pressure_msl": .array(pressure)]
        if !hourly.temperature.isEmpty { columns["temperature_2m"] = .array(temperature) }
        if !hourly.humidity.isEmpty { columns["relative_humidity_2m"] = .array(humidity) }
        return .object(columns)
    }

    /// The conditions now, with their time as the wall time in `zone`, and every variable of
    /// `currentVariables` (null where the answer gave none). Nil without `current`.
    public func current(in zone: TimeZone) -> JSONValue? {
        guard let current else { return nil }
        let instant = Date(timeIntervalSince1970: Double(current.time.wallSeconds - offset))
        var fields: [String: JSONValue] = ["time": .string(Self.minuteText(Zone.local(instant, in: zone)))]
        for v in Self.currentVariables { fields[v.name] = Self.json(current.values[v.name] ?? nil) }
        return .object(fields)
    }

    /// The days from `date` on, at most `forecastDays`, each `{"time": date, variable: value…}` with every
    /// variable of `dailyVariables`. Nil without `daily`, or when it holds no day from `date` on.
    public func days(from date: LocalDate) -> JSONValue? {
        guard let daily else { return nil }
        let days: [JSONValue] = daily.dates.indices.filter { daily.dates[$0] >= date }.prefix(Self.forecastDays).map { i in
            var fields: [String: JSONValue] = ["time": .string(daily.dates[i].description)]
            for v in Self.dailyVariables { fields[v.name] = Self.json(daily.values[v.name]?[i] ?? nil) }
            return .object(fields)
        }
        return days.isEmpty ? nil : .array(days)
    }

    /// The answer as herald keeps it between passes: only what it read, in the answer's own shape, so
    /// that `CellWeather(json: stored, …)` gives it back unchanged.
    public var stored: JSONValue {
        var hourlyColumns: [String: JSONValue] = [
            "time": .array(hourly.times.map { .string(Self.minuteText($0)) }),
            "pressure_msl": .array(hourly.pressure.map(Self.json)),
        ]
        if !hourly.temperature.isEmpty { hourlyColumns["temperature_2m"] = .array(hourly.temperature.map(Self.json)) }
        if !hourly.humidity.isEmpty { hourlyColumns["relative_humidity_2m"] = .array(hourly.humidity.map(Self.json)) }
        var fields: [String: JSONValue] = ["utc_offset_seconds": .number(Double(offset)), "hourly": .object(hourlyColumns)]
        if let current {
            var c: [String: JSONValue] = ["time": .string(Self.minuteText(current.time))]
            for (name, value) in current.values { c[name] = Self.json(value) }
            fields["current"] = .object(c)
        }
        if let daily {
            var d: [String: JSONValue] = ["time": .array(daily.dates.map { .string($0.description) })]
            for (name, values) in daily.values { d[name] = .array(values.map(Self.json)) }
            fields["daily"] = .object(d)
        }
        return .object(fields)
    }

    /// The Open-Meteo request (path and query) of one cell: its centre, everything a forecast reads, in
    /// `timezone` (whose days `daily` counts), from yesterday (a forecast made late, or for a person in a
    /// zone ahead of the cell's) to eight days ahead (seven days from tomorrow's date).
    ///
    ///     CellWeather.openMeteoPath(latitude: 51.55, longitude: -0.15, timezone: "Europe/London")
    ///     // "/v1/forecast?latitude=51.5500&longitude=-0.1500&hourly=pressure_msl,temperature_2m,
    ///     //  relative_humidity_2m&current=temperature_2m,…,weather_code&daily=weather_code,…,
    ///     //  wind_speed_10m_max&timezone=Europe%2FLondon&past_days=1&forecast_days=8"   (one line)
    public static func openMeteoPath(latitude: Double, longitude: Double, timezone: String) -> String {
        "/v1/forecast?latitude=\(FlareForecast.coordinate(latitude))&longitude=\(FlareForecast.coordinate(longitude))"
            + "&hourly=\([hourlyPressure, hourlyTemperature, hourlyHumidity].map(\.name).joined(separator: ","))"
            + "&current=\(currentVariables.map(\.name).joined(separator: ","))"
            + "&daily=\(dailyVariables.map(\.name).joined(separator: ","))"
            + "&timezone=\(FlareForecast.percentEncoded(timezone))&past_days=1&forecast_days=8"
    }

    /// `instant` on the answer's clock.
    func wall(_ instant: Date) -> LocalDateTime {
        let t = instant.timeIntervalSince1970
        let seconds = (t.isFinite && abs(t) < 1e12 ? Int(t.rounded(.down)) : 0) + offset
        let days = seconds >= 0 ? seconds / 86_400 : -((-seconds + 86_399) / 86_400)
        let s = seconds - days * 86_400
        return LocalDateTime(date: LocalDate(daysSinceEpoch: days),
                             time: LocalTime(hour: s / 3600, minute: s % 3600 / 60, second: s % 60))
    }

    /// "2026-01-25T08:00", as Open-Meteo writes its times (with seconds where there are any).
    static func minuteText(_ t: LocalDateTime) -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let minute = "\(t.date)T\(two(t.time.hour)):\(two(t.time.minute))"
        return t.time.second == 0 ? minute : minute + ":\(two(t.time.second))"
    }

    static func json(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
}

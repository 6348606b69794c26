import Foundation

/// One weather cell's answer (`WeatherCells`), shared by everyone in the cell: the hourly series the
/// risk is read from, the conditions now, and the days ahead, as an Open-Meteo forecast answer gives
/// them for the cell's centre:
///
///     {"utc_offset_seconds":0,
///      "hourly":{"time":["2026-01-24T00:00",…],"pressure_msl":[…],"temperature_2m":[…],"relative_humidity_2m":[…]},
///      "current":{"time":"2026-01-25T07:00","temperature_2m":4.5,"relative_humidity_2m":81,"surface_pressure":1012.3,…},
///      "daily":{"time":["2026-01-24",…],"weather_code":[3,…],"temperature_2m_max":[7.1,…],…}}
///
/// Every time in it is a wall time at one offset, `utc_offset_seconds` (Open-Meteo applies the offset in
/// force when asked to the whole series, with no daylight-saving change within it): so each time is an
/// exact instant, and one answer serves people of any zone, each read at their own notification instant.
/// Without `utc_offset_seconds`, the offset `zone` has when asked is taken, as Open-Meteo does.
///
/// The answer is hostile input. The hourly series is required (`HourlyWeather`: a malformed one throws,
/// and so does an offset that is not whole seconds within ±18 hours, or more than `maxHours` hours).
/// `current` and `daily` are optional: missing or malformed, they are nil and the forecast is still
/// made. A value that is not a number, not whole where it must be (`weather_code`), or outside its
/// variable's plausible range (`CellWeather.variables`) is null; keys herald does not know are dropped.
///
///     let weather = try CellWeather(json: JSONValue.parse(body), zone: london, at: now)
///     weather.pressureChange(at: eight, dayLater: eightTomorrow)      // hPa
///     weather.hourly(on: date, in: zone), weather.current(in: zone), weather.days(from: date)
public struct CellWeather: Sendable, Equatable {
    /// Seconds east of UTC of the answer's clock.
    public var offset: Int
    public var hourly: HourlyWeather
    public var current: Current?
    public var daily: Daily?

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// The conditions when the answer was made: the wall time (at `offset`) and each variable of
    /// `CellWeather.currentVariables` it gave (nil: null, missing or implausible).
    public struct Current: Sendable, Equatable {
        public var time: LocalDateTime
        public var values: [String: Double?]
    }

    /// The days ahead: their dates in the answer's zone, and per variable of `dailyVariables` one value
    /// a day (nil: null, missing or implausible).
    public struct Daily: Sendable, Equatable {
        public var dates: [LocalDate]
        public var values: [String: [Double?]]
    }

    /// The most hours an answer may hold (nine days are asked for; a longer series is refused).
    public static let maxHours = 1_000
    /// The most days `daily` may hold; a longer list is dropped.
    public static let maxDays = 31
    /// The days of `daily_forecast`: the forecast's date and the six after it.
    public static let forecastDays = 7

    public init(offset: Int, hourly: HourlyWeather, current: Current? = nil, daily: Daily? = nil) {
        self.offset = offset
        self.hourly = hourly
        self.current = current
        self.daily = daily
    }

    public init(json: JSONValue, zone: TimeZone, at now: Date) throws {
        var hourly: HourlyWeather
        do {
            hourly = try HourlyWeather(json: json)
        } catch let error as HourlyWeather.ParseError {
            throw ParseError(description: error.description)
        }
        guard hourly.times.count <= Self.maxHours else {
            throw ParseError(description: "more than \(Self.maxHours) hours")
        }
        hourly.pressure = hourly.pressure.map { Self.plausible($0, Self.hourlyPressure) }
        hourly.temperature = hourly.temperature.map { Self.plausible($0, Self.hourlyTemperature) }
        hourly.humidity = hourly.humidity.map { Self.plausible($0, Self.hourlyHumidity) }
        let offset: Int
        switch json["utc_offset_seconds"] {
        case nil:
            offset = zone.secondsFromGMT(for: now)
        case .number(let n)? where n == n.rounded() && abs(n) <= 18 * 3600:
            offset = Int(n)
        default:
            throw ParseError(description: "utc_offset_seconds is not whole seconds within ±18 hours")
        }
        self.init(offset: offset, hourly: hourly, current: Self.current(json["current"]), daily: Self.daily(json["daily"]))
    }

    /// `current`, or nil when it is not an object with a well-formed `time`.
    static func current(_ json: JSONValue?) -> Current? {
        guard case .object(let fields)? = json, let text = fields["time"]?.stringValue,
              let time = HourlyWeather.localDateTime(text) else { return nil }
        var values: [String: Double?] = [:]
        for v in currentVariables { values[v.name] = fields[v.name].flatMap { value(of: $0, v) } }
        return Current(time: time, values: values)
    }

    /// `daily`, or nil when it is not an object whose `time` is 1 to `maxDays` dates in increasing order.
    /// A variable that is not a list of one value per date is all nil.
    static func daily(_ json: JSONValue?) -> Daily? {
        guard case .object(let fields)? = json, case .array(let rawDates)? = fields["time"],
              (1...maxDays).contains(rawDates.count) else { return nil }
        var dates: [LocalDate] = []
        for raw in rawDates {
            guard let text = raw.stringValue, text.utf8.count == 10, let date = LocalDate(text),
                  dates.last.map({ $0 < date }) ?? true else { return nil }
            dates.append(date)
        }
        var values: [String: [Double?]] = [:]
        for v in dailyVariables {
            guard case .array(let items)? = fields[v.name], items.count == dates.count else {
                values[v.name] = Array(repeating: nil, count: dates.count)
                continue
            }
            values[v.name] = items.map { value(of: $0, v) }
        }
        return Daily(dates: dates, values: values)
    }

    static func value(of json: JSONValue, _ v: Variable) -> Double? {
        guard case .number(let n) = json else { return nil }
        return v.whole && n != n.rounded() ? nil : plausible(n, v)
    }

    static func plausible(_ n: Double?, _ v: Variable) -> Double? {
        guard let n, n.isFinite, v.range.contains(n) else { return nil }
        return n
    }
}

// MARK: The variables asked for

extension CellWeather {
    /// A variable of the answer and the values herald keeps of it (others are null).
    public struct Variable: Sendable, Equatable {
        public var name: String
        public var range: ClosedRange<Double>
        /// Whole numbers only (a WMO weather code).
        public var whole = false
    }

    static let hourlyPressure = Variable(name: "pressure_msl", range: 300...1_200)
    static let hourlyTemperature = Variable(name: "temperature_2m", range: -100...100)
    static let hourlyHumidity = Variable(name: "relative_humidity_2m", range: 0...100)

    /// `current=` of the request, in this order.
    public static let currentVariables: [Variable] = [
        Variable(name: "temperature_2m", range: -100...100),
        Variable(name: "apparent_temperature", range: -100...100),
        Variable(name: "relative_humidity_2m", range: 0...100),
        Variable(name: "surface_pressure", range: 300...1_200),
        Variable(name: "pressure_msl", range: 300...1_200),
        Variable(name: "precipitation", range: 0...1_000),
        Variable(name: "cloud_cover", range: 0...100),
        Variable(name: "wind_speed_10m", range: 0...500),
        Variable(name: "weather_code", range: 0...99, whole: true),
    ]

    /// `daily=` of the request, in this order.
    public static let dailyVariables: [Variable] = [
        Variable(name: "weather_code", range: 0...99, whole: true),
        Variable(name: "temperature_2m_max", range: -100...100),
        Variable(name: "temperature_2m_min", range: -100...100),
        Variable(name: "precipitation_probability_max", range: 0...100),
        Variable(name: "precipitation_sum", range: 0...2_000),
        Variable(name: "wind_speed_10m_max", range: 0...500),
    ]
}

import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// A place's weather answer, shared by everyone in the place: read at each person's own instant and
/// on their own clock, with the conditions now and the seven days ahead; hostile input throughout.
@Suite struct CellWeatherTests {
    static let london = TimeZone(identifier: "Europe/London")!
    static let newYork = TimeZone(identifier: "America/New_York")!
    static let asked = ISO8601.parse("2026-01-25T07:00:00Z")!

    /// An answer on New York's clock (UTC−5) from 2026-01-24 00:00 for `hours` hours, the pressure
    /// falling half a hectopascal an hour from 1030, with `current` and `daily` as given.
    static func body(hours: Int = 216, offset: Int = -18_000, current: String? = nil, daily: String? = nil) -> String {
        let times = (0..<hours).map { h in "\"\(LocalDate(year: 2026, month: 1, day: 24).adding(days: h / 24))T\(h % 24 < 10 ? "0" : "")\(h % 24):00\"" }
        var fields = [#""utc_offset_seconds":\#(offset)"#, #""timezone":"America/New_York""#,
                      #""hourly":{"time":[\#(times.joined(separator: ","))],"pressure_msl":[\#((0..<hours).map { String(1030 - Double($0) * 0.5) }.joined(separator: ","))]}"#]
        if let current { fields.append(#""current":\#(current)"#) }
        if let daily { fields.append(#""daily":\#(daily)"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func parse(_ text: String, zone: TimeZone = newYork) throws -> CellWeather {
        try CellWeather(json: JSONValue.parse(text), zone: zone, at: asked)
    }

    /// The series' times are wall times at `utc_offset_seconds`: 08:00 in London (08:00 UTC) is 03:00 on
    /// New York's series, hour 27 (1016.5 hPa); a day later, hour 51 (1004.5): −12 hPa.
    @Test func eachPersonIsReadAtTheirOwnInstant() throws {
        let w = try Self.parse(Self.body())
        #expect(w.offset == -18_000)
        let eight = ISO8601.parse("2026-01-25T08:00:00Z")!
        #expect(w.pressureChange(at: eight, dayLater: eight.addingTimeInterval(86_400)) == -12)
        #expect(w.hourly.pressure(at: w.wall(eight)) == 1016.5)
        // Before the series, or after it: no change.
        #expect(w.pressureChange(at: ISO8601.parse("2026-01-24T04:00:00Z")!, dayLater: eight) == nil)
        #expect(w.pressureChange(at: eight, dayLater: ISO8601.parse("2026-02-03T00:00:00Z")!) == nil)
    }

    /// Without `utc_offset_seconds`, the offset the zone asked for has at the time of asking, as
    /// Open-Meteo applies it; one that is not whole seconds within ±18 hours refuses the answer.
    @Test func theOffsetIsTheAnswersOrTheZonesWhenAsked() throws {
        let bare = #"{"hourly":{"time":["2026-07-01T00:00"],"pressure_msl":[1000]}}"#
        #expect(try CellWeather(json: JSONValue.parse(bare), zone: Self.london, at: ISO8601.parse("2026-07-01T00:00:00Z")!).offset == 3600)
        #expect(try CellWeather(json: JSONValue.parse(bare), zone: Self.london, at: Self.asked).offset == 0)
        for offset in ["\"0\"", "3600.5", "64801", "-1e300", "null", "[]"] {
            #expect(throws: CellWeather.ParseError.self, "\(offset)") { try Self.parse(Self.body(offset: 0).replacingOccurrences(of: #""utc_offset_seconds":0"#, with: #""utc_offset_seconds":\#(offset)"#)) }
        }
        #expect(throws: CellWeather.ParseError.self) { try Self.parse(Self.body(hours: CellWeather.maxHours + 1)) }
    }

    /// Each person's hours are those of their date and the next on their clock: 48, or 47 across the
    /// night clocks go forward (London, 2026-03-29), with the hour that is skipped not there.
    @Test func thePersonsHoursAreOnTheirClock() throws {
        let w = try Self.parse(Self.body())
        let hourly = w.hourly(on: LocalDate(year: 2026, month: 1, day: 25), in: Self.london)
        let times = hourly["time"]?.arrayValue ?? []
        #expect(times.count == 48 && times.first == "2026-01-25T00:00" && times.last == "2026-01-26T23:00")
        #expect(hourly["pressure_msl"]?.arrayValue?.first == 1020.5)   // London's midnight is 19:00 on the 24th in New York: hour 19
        let march = try CellWeather(json: JSONValue.parse(#"{"utc_offset_seconds":0,"hourly":{"time":[\#((0..<96).map { "\"2026-03-\(28 + $0 / 24)T\($0 % 24 < 10 ? "0" : "")\($0 % 24):00\"" }.joined(separator: ","))],"pressure_msl":[\#((0..<96).map { _ in "1000" }.joined(separator: ","))]}}"#), zone: Self.london, at: Self.asked)
        let spring = march.hourly(on: LocalDate(year: 2026, month: 3, day: 29), in: Self.london)["time"]?.arrayValue ?? []
        #expect(spring.count == 47 && !spring.contains("2026-03-29T01:00") && spring.contains("2026-03-29T02:00"))
    }

    /// `current` on the person's clock with every variable (null where the answer gave none or an
    /// implausible one); `daily` as the seven days from the forecast's date; keys herald does not ask
    /// for are dropped.
    @Test func theConditionsNowAndTheDaysAhead() throws {
        let current = #"{"time":"2026-01-25T02:00","interval":900,"temperature_2m":-3.5,"relative_humidity_2m":181,"surface_pressure":1012.3,"weather_code":3.5,"precipitation":0,"secret":"x"}"#
        let dates = (0..<9).map { "\"\(LocalDate(year: 2026, month: 1, day: 24).adding(days: $0))\"" }.joined(separator: ",")
        let daily = #"{"time":[\#(dates)],"weather_code":[0,1,2,3,45,48,51,53,99],"temperature_2m_max":[1,2,3,4,5,6,7,8,1e300],"temperature_2m_min":"cold","sunrise":["x"]}"#
        let w = try Self.parse(Self.body(current: current, daily: daily))
        #expect(w.current(in: Self.london) == ["time": "2026-01-25T07:00", "temperature_2m": -3.5, "apparent_temperature": .null,
                                               "relative_humidity_2m": .null, "surface_pressure": 1012.3, "pressure_msl": .null,
                                               "precipitation": 0, "cloud_cover": .null, "wind_speed_10m": .null, "weather_code": .null])
        let days = try #require(w.days(from: LocalDate(year: 2026, month: 1, day: 26))?.arrayValue)
        #expect(days.count == 7 && days.first?["time"] == "2026-01-26" && days.last?["time"] == "2026-02-01")
        #expect(days.first == ["time": "2026-01-26", "weather_code": 2, "temperature_2m_max": 3, "temperature_2m_min": .null,
                               "precipitation_probability_max": .null, "precipitation_sum": .null, "wind_speed_10m_max": .null])
        #expect(days.last?["temperature_2m_max"] == .null, "1e300 °C is no temperature")
        #expect(w.days(from: LocalDate(year: 2026, month: 2, day: 2)) == nil)
    }

    /// `current` and `daily` that are not what they should be are left out; the forecast still stands.
    @Test(arguments: [
        #"{"current":"now","daily":[1,2]}"#, #"{"current":{"temperature_2m":3},"daily":{"time":"2026-01-25"}}"#,
        #"{"current":{"time":"07:00"},"daily":{"time":["2026-01-25","2026-01-25"]}}"#,
        #"{"current":{"time":7},"daily":{"time":[]}}"#, #"{"current":null,"daily":{"time":["2026-13-01"]}}"#,
    ])
    func malformedCurrentOrDailyIsLeftOut(_ parts: String) throws {
        let w = try Self.parse(String(Self.body().dropLast()) + "," + String(parts.dropFirst()))
        #expect(w.current == nil && w.daily == nil && w.current(in: Self.london) == nil)
    }

    /// What herald keeps between passes reads back as the same weather.
    @Test func theStoredAnswerReadsBackTheSame() throws {
        let w = try Self.parse(Self.body(current: #"{"time":"2026-01-25T02:00:30","temperature_2m":1}"#,
                                         daily: #"{"time":["2026-01-25"],"weather_code":[3]}"#))
        #expect(try CellWeather(json: JSONValue.parse(w.stored.jsonText), zone: Self.london, at: Self.asked) == w)
    }

    /// Whatever the weather service answers — random bytes, mutated or truncated JSON, Open-Meteo's keys
    /// with values of any kind and size — the answer is refused, or what each person is given keeps
    /// every rule: values within their variable's range or null, whole weather codes, at most seven
    /// days from the date asked, one value per hour, and the stored form reads back the same.
    @Test func noAnswerGivesWeatherThatBreaksTheRules() {
        var fuzz = Fuzz(seed: 34)
        var accepted = 0
        for _ in 0..<Fuzz.bodyIterations {
            let text = Self.hostileAnswer(&fuzz)
            guard let json = try? JSONValue.parse(text),
                  let w = try? CellWeather(json: json, zone: fuzz.pick([Self.london, Self.newYork]), at: Self.asked) else { continue }
            accepted += 1
            #expect(abs(w.offset) <= 18 * 3600 && w.hourly.times.count <= CellWeather.maxHours)
            let zone = fuzz.pick([Self.london, Self.newYork, TimeZone(identifier: "Pacific/Kiritimati")!])
            let date = LocalDate(year: 2026, month: 1, day: fuzz.int(20...30))
            let hourly = w.hourly(on: date, in: zone)
            let count = hourly["time"]?.arrayValue?.count ?? -1
            #expect(hourly["pressure_msl"]?.arrayValue?.count == count && count <= w.hourly.times.count)
            #expect(hourly["pressure_msl"]?.arrayValue?.allSatisfy { $0 == .null || (300...1_200).contains($0.doubleValue ?? 0) } == true)
            if let current = w.current(in: zone) {
                Self.expectPlausible(current, CellWeather.currentVariables)
            }
            if let days = w.days(from: date)?.arrayValue {
                #expect((1...7).contains(days.count))
                #expect(days.allSatisfy { ($0["time"]?.stringValue).flatMap(LocalDate.init).map { $0 >= date } == true })
                for day in days { Self.expectPlausible(day, CellWeather.dailyVariables) }
            }
            #expect((try? CellWeather(json: JSONValue.parse(w.stored.jsonText), zone: Self.london, at: Self.asked)) == w)
        }
        #expect(accepted > 100, "the fuzz should also reach answers that are usable (\(accepted))")
    }

    static func expectPlausible(_ fields: JSONValue, _ variables: [CellWeather.Variable]) {
        for v in variables {
            guard let value = fields[v.name] else { Issue.record("\(v.name) missing"); continue }
            guard value != .null else { continue }
            let n = value.doubleValue ?? .nan
            #expect(v.range.contains(n) && (!v.whole || n == n.rounded()), "\(v.name): \(value)")
        }
        #expect(fields.objectValue?.count == variables.count + 1, "only the variables and the time")
    }

    /// An answer with Open-Meteo's keys and fuzzed values, or a body of any kind.
    static func hostileAnswer(_ fuzz: inout Fuzz) -> String {
        guard fuzz.chance(0.8) else { return fuzz.chance(0.5) ? fuzz.jsonText() : String(decoding: fuzz.bytes(maxCount: 200), as: UTF8.self) }
        func number(_ fuzz: inout Fuzz) -> String {
            switch fuzz.below(6) {
            case 0: return fuzz.jsonNumberText()
            case 1: return fuzz.pick(["null", "\"7\"", "[]", "true", "1e300", "-1e300", "3.5"])
            default: return String(fuzz.int(-50...1_100))
            }
        }
        let n = fuzz.int(0...80)
        let times = (0..<n).map { h in fuzz.chance(0.97) ? "\"2026-01-\(String(format: "%02d", 22 + h / 24))T\(String(format: "%02d", h % 24)):00\""
                                                        : fuzz.jsonValueText(depth: 5) }
        var fields = [#""hourly":{"time":[\#(times.joined(separator: ","))],"pressure_msl":[\#((0..<(fuzz.chance(0.95) ? n : fuzz.int(0...9))).map { _ in fuzz.chance(0.9) ? String(fuzz.int(900...1_100)) : number(&fuzz) }.joined(separator: ","))]}"#]
        if fuzz.chance(0.8) { fields.append(#""utc_offset_seconds":\#(fuzz.chance(0.7) ? String(fuzz.pick([0, 3600, -18_000, 50_400, 20_700])) : number(&fuzz))"#) }
        if fuzz.chance(0.7) {
            let values = CellWeather.currentVariables.map { "\"\($0.name)\":\(number(&fuzz))" } + ["\"x\":\(fuzz.jsonValueText(depth: 4))"]
            fields.append(#""current":{"time":"2026-01-2\#(fuzz.int(0...9))T0\#(fuzz.int(0...9)):00",\#(values.joined(separator: ","))}"#)
        }
        if fuzz.chance(0.7) {
            let days = fuzz.int(0...12)
            let dates = (0..<days).map { "\"\(LocalDate(year: 2026, month: 1, day: 20).adding(days: $0))\"" }
            let columns = CellWeather.dailyVariables.map { v in
                "\"\(v.name)\":[\((0..<(fuzz.chance(0.9) ? days : fuzz.int(0...12))).map { _ in number(&fuzz) }.joined(separator: ","))]"
            }
            fields.append(#""daily":{"time":[\#(dates.joined(separator: ","))],\#(columns.joined(separator: ","))}"#)
        }
        let text = "{" + fields.joined(separator: ",") + "}"
        return fuzz.chance(0.1) ? fuzz.mutate(text) : text
    }
}

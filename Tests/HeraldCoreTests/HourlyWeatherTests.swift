import Foundation
import Testing
@testable import HeraldCore

@Suite struct HourlyWeatherTests {
    /// 48 hours from 2026-01-25T00:00, pressure falling 0.25 hPa an hour from 1020.
    func body(pressure: (Int) -> String = { String(1020 - 0.25 * Double($0)) }, count: Int = 48) -> String {
        let times = (0..<count).map { h in "\"2026-01-\(25 + h / 24)T\(h % 24 < 10 ? "0" : "")\(h % 24):00\"" }
        let temps = (0..<count).map { String(2.5 + Double($0 % 24) / 4) }
        let hum = (0..<count).map { String(70 + $0 % 10) }
        return """
        {"latitude":40.710335,"longitude":-73.99307,"generationtime_ms":0.05,"utc_offset_seconds":-18000,
         "timezone":"America/New_York","timezone_abbreviation":"GMT-5","elevation":32.0,
         "hourly_units":{"time":"iso8601","pressure_msl":"hPa","temperature_2m":"°C","relative_humidity_2m":"%"},
         "hourly":{"time":[\(times.joined(separator: ","))],
                   "pressure_msl":[\((0..<count).map(pressure).joined(separator: ","))],
                   "temperature_2m":[\(temps.joined(separator: ","))],
                   "relative_humidity_2m":[\(hum.joined(separator: ","))]}}
        """
    }

    @Test func parsesARealisticBody() throws {
        let w = try HourlyWeather(json: JSONValue.parse(body()))
        #expect(w.times.count == 48)
        #expect(w.times.first == wall("2026-01-25", "00:00"))
        #expect(w.times.last == wall("2026-01-26", "23:00"))
        #expect(w.pressure[8] == 1018)
        #expect(w.temperature[4] == 3.5)
        #expect(w.humidity[13] == 73)
        // 08:00 on the 25th (1018) to 08:00 on the 26th (1012): −6 hPa, MODERATE.
        let change = try #require(w.pressureChange(from: day("2026-01-25"), at: t("08:00")))
        #expect(change == -6)
        #expect(FlareForecast.risk(pressureChangeHPa: change) == .moderate)
    }

    @Test func nearestHourAtOrBefore() throws {
        let w = try HourlyWeather(json: JSONValue.parse(body()))
        // 08:30 reads 08:00's value; 08:59:59 too.
        #expect(w.pressure(at: wall("2026-01-25", "08:30")) == 1018)
        #expect(w.pressure(at: wall("2026-01-25", "08:59:59")) == 1018)
        #expect(w.pressureChange(from: day("2026-01-25"), at: t("08:30")) == -6)
        // After the series' last hour (23:00 on the 26th) there is nothing: the 26th's change needs the 27th.
        #expect(w.pressure(at: wall("2026-01-27", "00:00")) == nil)
        #expect(w.pressureChange(from: day("2026-01-26"), at: t("08:00")) == nil)
        #expect(w.pressure(at: wall("2026-01-24", "23:00")) == nil)
    }

    @Test func nullValuesGiveNil() throws {
        let w = try HourlyWeather(json: JSONValue.parse(body(pressure: { $0 == 32 ? "null" : "1000" })))
        #expect(w.pressure[32] == nil)
        #expect(w.pressureChange(from: day("2026-01-25"), at: t("08:00")) == nil)     // the 26th at 08:00 is null
        #expect(w.pressureChange(from: day("2026-01-25"), at: t("09:00")) == 0)
        let noTemps = try HourlyWeather(json: JSONValue.parse(#"{"hourly":{"time":["2026-01-25T00:00"],"pressure_msl":[1000]}}"#))
        #expect(noTemps.temperature.isEmpty && noTemps.pressure == [1000])
    }

    @Test func malformedBodiesThrow() {
        #expect(throws: (any Error).self) { try HourlyWeather(json: JSONValue.parse(#"{"hourly":{"time":["#)) }
        let bad = [
            #"{"error":true,"reason":"Latitude must be in range of -90 to 90°."}"#,
            #"{"hourly":{"pressure_msl":[1000]}}"#,
            #"{"hourly":{"time":["2026-01-25T00:00"]}}"#,
            #"{"hourly":{"time":["2026-01-25T00:00","2026-01-25T01:00"],"pressure_msl":[1000]}}"#,
            #"{"hourly":{"time":["yesterday"],"pressure_msl":[1000]}}"#,
            #"{"hourly":{"time":["2026-01-25T00:00"],"pressure_msl":["high"]}}"#,
            #"{"hourly":{"time":["2026-01-25T00:00"],"pressure_msl":[1000],"temperature_2m":3}}"#,
        ]
        for text in bad {
            #expect(throws: HourlyWeather.ParseError.self, "\(text)") { try HourlyWeather(json: JSONValue.parse(text)) }
        }
    }
}

import Foundation
import Testing
@testable import HeraldCore

@Suite struct FlareForecastTests {
    let eight = t("08:00")

    @Test func severalZonesAtOneInstant() {
        let now = utc(2026, 1, 25, 3)        // 19:00 LA (24th), 03:00 London, 12:00 Tokyo, 16:00 Auckland
        #expect(FlareForecast.dueDate(now: now, zone: zone("Asia/Tokyo"), notificationTime: eight) == day("2026-01-25"))
        #expect(FlareForecast.dueDate(now: now, zone: zone("Pacific/Auckland"), notificationTime: eight) == day("2026-01-25"))
        #expect(FlareForecast.dueDate(now: now, zone: zone("Europe/London"), notificationTime: eight) == nil)
        // Los Angeles is still on the 24th, past 08:00: the 24th's forecast is the one due.
        #expect(FlareForecast.dueDate(now: now, zone: zone("America/Los_Angeles"), notificationTime: eight) == day("2026-01-24"))
        #expect(FlareForecast.dueDate(now: now, zone: zone("America/Los_Angeles"), notificationTime: t("20:00")) == nil)
    }

    @Test func exactlyAtTheTime() {
        let london = zone("Europe/London")
        #expect(FlareForecast.dueDate(now: utc(2026, 1, 25, 8), zone: london, notificationTime: eight) == day("2026-01-25"))
        #expect(FlareForecast.dueDate(now: utc(2026, 1, 25, 7, 59, 59), zone: london, notificationTime: eight) == nil)
        #expect(FlareForecast.dueDate(now: utc(2026, 1, 25, 23, 59, 59), zone: london, notificationTime: eight) == day("2026-01-25"))
    }

    /// 24:00 is midnight as the date begins: that date's forecast is due all day from 00:00 (not never,
    /// and not the forecast of the date just ended).
    @Test func midnightWrittenAs2400IsTheForecastOfTheDateThatBegins() {
        let london = zone("Europe/London")
        #expect(FlareForecast.dueDate(now: utc(2026, 1, 26), zone: london, notificationTime: t("24:00")) == day("2026-01-26"))
        #expect(FlareForecast.dueDate(now: utc(2026, 1, 25, 23, 59, 59), zone: london, notificationTime: t("24:00")) == day("2026-01-25"))
        #expect(DailyTime.timeOfDay(t("24:00")) == t("00:00"))
        #expect(DailyTime.timeOfDay(t("23:59:59")) == t("23:59:59"))
    }

    @Test func newYorkSpringForwardMorning() {
        let ny = zone("America/New_York")
        // 2026-03-08 is EDT from 03:00: 08:00 local is 12:00 UTC (it would be 13:00 on EST).
        #expect(FlareForecast.dueDate(now: utc(2026, 3, 8, 11, 59, 59), zone: ny, notificationTime: eight) == nil)
        #expect(FlareForecast.dueDate(now: utc(2026, 3, 8, 12), zone: ny, notificationTime: eight) == day("2026-03-08"))
        // A time inside the gap (02:30) is reached at the jump, 07:00 UTC.
        #expect(FlareForecast.dueDate(now: utc(2026, 3, 8, 6, 59, 59), zone: ny, notificationTime: t("02:30")) == nil)
        #expect(FlareForecast.dueDate(now: utc(2026, 3, 8, 7), zone: ny, notificationTime: t("02:30")) == day("2026-03-08"))
    }

    @Test(arguments: [
        (-15.0, RiskLevel.high), (-10.0, .high), (-9.99, .moderate), (-5.0, .moderate), (-4.99, .low),
        (0.0, .low), (3.0, .low), (12.0, .low),
    ])
    func riskBuckets(change: Double, expected: RiskLevel) {
        #expect(FlareForecast.risk(pressureChangeHPa: change) == expected)
    }

    @Test func configurableThresholds() {
        let tight = RiskThresholds(highDropHPa: 4, moderateDropHPa: 2)
        #expect(FlareForecast.risk(pressureChangeHPa: -4, thresholds: tight) == .high)
        #expect(FlareForecast.risk(pressureChangeHPa: -3, thresholds: tight) == .moderate)
        #expect(FlareForecast.risk(pressureChangeHPa: -1, thresholds: tight) == .low)
        #expect(RiskLevel.high.rawValue == "HIGH" && RiskLevel.moderate.rawValue == "MODERATE")
    }

    /// One request per place: its centre to four decimals, every variable a forecast reads, the zone
    /// whose days `daily` counts, from yesterday to eight days ahead.
    @Test func openMeteoPath() {
        #expect(CellWeather.openMeteoPath(latitude: 40.7128, longitude: -74.006, timezone: "America/New_York")
            == "/v1/forecast?latitude=40.7128&longitude=-74.0060&hourly=pressure_msl,temperature_2m,relative_humidity_2m"
            + "&current=temperature_2m,apparent_temperature,relative_humidity_2m,surface_pressure,pressure_msl,precipitation,"
            + "cloud_cover,wind_speed_10m,weather_code"
            + "&daily=weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max,precipitation_sum,"
            + "wind_speed_10m_max&timezone=America%2FNew_York&past_days=1&forecast_days=8")
        #expect(CellWeather.openMeteoPath(latitude: -41.2865, longitude: 174.7762, timezone: "America/Port-au-Prince")
            .contains("latitude=-41.2865&longitude=174.7762&"))
        #expect(CellWeather.openMeteoPath(latitude: 0.00001, longitude: 1e-7, timezone: "UTC")
            .contains("latitude=0.0000&longitude=0.0000&hourly"))
        #expect(CellWeather.openMeteoPath(latitude: 1, longitude: 2, timezone: "America/Argentina/Buenos_Aires")
            .hasSuffix("timezone=America%2FArgentina%2FBuenos_Aires&past_days=1&forecast_days=8"))
        #expect(FlareForecast.percentEncoded("Etc/GMT+5") == "Etc%2FGMT%2B5")
    }
}

import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldWorker
import Testing

/// The forecasts phase makes, words and enqueues its forecasts a chunk of people at a time
/// (`PassOptions.forecastChunk`, 2,000), the people of a place together, so that a pass's memory is
/// one chunk's however many people are due at once; a place whose people fall in two chunks is still
/// asked once.
@Suite struct ForecastChunkTests {
    /// With chunks of 10, 25 people in two places (12 and 13) make two weather requests, though each
    /// place's people fall in two chunks and no stored answer may serve (HERALD_WEATHER_REUSE_MINUTES=0);
    /// the insight service, answering after 200 ms, never holds more than 10 requests at once; all 25
    /// forecasts are made, worded by the service and enqueued.
    @Test func aPassMakesItsForecastsAChunkOfPeopleAtATime() throws {
        let weather = try FakeWeather()
        let insight = try FakeHTTPServer(tls: weather.certificates) { _ in .json(200, MorningFakes.insightAnswer, delay: 0.2) }
        defer { insight.shutdown() }
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            _ = try WeatherCellPassTests.people(f, 12, near: 51.51, -0.19)
            _ = try WeatherCellPassTests.people(f, 13, near: 53.41, -2.29)
            let worker = WeatherCellPassTests.worker(tdb, weather, [
                "HERALD_WEATHER_REUSE_MINUTES": "0", "HERALD_FORECAST_INSIGHT_URL": insight.baseURL + "/insight",
                "HERALD_FORECAST_INSIGHT_SECRET": MorningFakes.insightSecret,
            ])
            let (s, code) = worker.run(now: instant("2026-01-25T07:05:00Z")) {
                $0.phases = [.forecasts]
                $0.forecastChunk = 10
            }
            #expect(code == .ok)
            #expect(weather.requests.count == 2 && s.generated[.weatherFetched] == 2)
            #expect(insight.requests.count == 25)
            #expect(insight.peakInFlight <= 10, "\(insight.peakInFlight) requests held at once")
            #expect(s.generated[.forecasts] == 25 && s.generated[.forecastInsights] == 25)
            #expect(try f.count("select count(*)::int from daily_forecasts where forecast_summary like 'Pressure falls fast%'") == 25)
        }
    }
}

import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The daily flare forecast is made ahead of each person's notification time (the design's morning
/// pre-priming): the weather is fetched within the lead, retried by each pass until it comes, the push
/// goes out at the time, and a forecast not made by then is counted once and never sent for a past date.
@Suite struct ForecastPrimingTests {
    /// An Open-Meteo answer for three local days from 2026-01-25 whose pressure falls half a hectopascal
    /// an hour: 12 hPa a day, a HIGH risk.
    static let fallingPressure: String = {
        var times: [String] = [], pressure: [String] = []
        for day in ["2026-01-25", "2026-01-26", "2026-01-27"] {
            for h in 0..<24 {
                times.append("\"\(day)T\(h < 10 ? "0" : "")\(h):00\"")
                pressure.append(String(1030.0 - Double(times.count - 1) * 0.5))
            }
        }
        return #"{"hourly":{"time":[\#(times.joined(separator: ","))],"pressure_msl":[\#(pressure.joined(separator: ","))]}}"#
    }()

    /// A weather service that fails while `down` is set.
    final class Weather: @unchecked Sendable {
        private let lock = NSLock()
        private var isDown = false
        var down: Bool {
            get { lock.withLock { isDown } }
            set { lock.withLock { isDown = newValue } }
        }
        lazy var server: FakeHTTPServer = try! FakeHTTPServer { [unowned self] _ in
            self.down ? .json(503, #"{"error":"unavailable"}"#) : .json(200, ForecastPrimingTests.fallingPressure)
        }
    }

    /// A person in London (UTC in January) with a location, a device and the default 08:00 forecast
    /// time; a worker whose pushes go to the log adapter file `outbox`.
    static func setUp(_ weather: Weather, settings: [String: String] = [:], locale: String = "en",
                      _ body: (TestDB, Fixtures, Worker, UUID, String) throws -> Void) throws {
        try withTestDatabase { (tdb) throws in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile(timezone: "Europe/London", locale: locale)
            try f.db.execute("update user_profiles set latitude = 51.5, longitude = -0.1, location_name = 'London' where user_id = \(user)")
            try f.token(user)
            let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("herald-forecast-\(UUID()).jsonl").path
            defer { try? FileManager.default.removeItem(atPath: outbox) }
            let worker = Worker(url: tdb.url, settings: ["WEATHER_URL": weather.server.baseURL, "HERALD_CHANNEL_PUSH": "log",
                                                         "HERALD_LOG_ADAPTER_FILE": outbox].merging(settings) { _, b in b })
            try body(tdb, f, worker, user, outbox)
        }
    }

    /// The pushes the log adapter wrote.
    static func pushes(_ outbox: String) throws -> [JSONValue] {
        guard let text = try? String(contentsOfFile: outbox, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }

    @Test func theWeatherIsPrimedBeforeTheNotificationTimeAndThePushGoesOutAtIt() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try Self.setUp(weather) { (tdb, f, worker, user, outbox) throws in

            // 06:30: more than the lead (an hour) before 08:00; nothing is asked.
            _ = worker.run(now: instant("2026-01-25T06:30:00Z")) { $0.phases = [.forecasts, .deliver] }
            #expect(weather.server.requests.isEmpty)

            // 07:05: the weather is fetched, the forecast stored with its words, the push waits for 08:00.
            let (primed, _) = worker.run(now: instant("2026-01-25T07:05:00Z"), drain: true) { $0.phases = [.forecasts, .deliver] }
            #expect(primed.generated[.forecasts] == 1 && primed.generated[.weatherFetched] == 1 && primed.sent == 0)
            #expect(weather.server.requests.count == 1)
            #expect(weather.server.requests.first?.path.contains("&past_days=1&forecast_days=8") == true)
            let row = try f.db.query("select status, run_after from notification_queue where recipient_user_id = \(user)")
            #expect(row.first?["status"].string == "pending" && row.first?["run_after"].date == instant("2026-01-25T08:00:00Z"))
            let words = ForecastWords.templated(risk: .high, locale: "en")
            let stored = try f.db.query("""
                select risk_level, forecast_summary, why_explanation, comfort_tip, daily_insight::text as insight, forecast_locale
                  from daily_forecasts where user_id = \(user) and forecast_date = '2026-01-25'
                """).first
            #expect(stored?["risk_level"].string == "HIGH")
            #expect(stored?["forecast_summary"].string == words.summary && stored?["why_explanation"].string == words.why)
            #expect(stored?["comfort_tip"].string == words.comfortTip && stored?["forecast_locale"].string == "en")
            #expect(try stored?["insight"].string.map { try JSONValue.parse($0) } == words.dailyInsight)

            // 08:00: the push goes out, with nothing fetched again; its link opens the date.
            let (due, _) = worker.run(now: instant("2026-01-25T08:00:05Z"), drain: true) { $0.phases = [.forecasts, .deliver] }
            #expect(due.sent == 1 && weather.server.requests.count == 1)
            let push = try #require(try Self.pushes(outbox).first)
            #expect(push["body"] == "Today's flare risk: HIGH - Significant pressure drop expected. Take extra care today.")
            #expect(push["deep_link"] == "herald://forecast/2026-01-25")
            #expect(push["data"]?["date"] == "2026-01-25")
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(user) and notification_sent") == 1)
        }
    }

    /// A forecast a backend stored with a risk but no words (an empty summary) is given herald's own
    /// before it goes out, with no weather asked.
    @Test func aBackendsForecastWithoutWordsIsGivenHeraldsOwn() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try Self.setUp(weather) { (tdb, f, worker, user, outbox) throws in
            try f.db.execute("""
                insert into daily_forecasts (user_id, forecast_date, risk_level, forecast_summary) values (\(user), '2026-01-25', 'MODERATE', '')
                """)
            let (primed, _) = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(primed.generated[.forecasts] == 1 && primed.generated[.forecastTemplatedWords] == 1)
            #expect(weather.server.requests.isEmpty)
            let words = ForecastWords.templated(risk: .moderate, locale: "en")
            #expect(try f.db.query("select forecast_summary, comfort_tip from daily_forecasts where user_id = \(user)")
                .first.map { [$0["forecast_summary"].string, $0["comfort_tip"].string] } == [words.summary, words.comfortTip])
        }
    }

    /// A fetch that fails within the lead is tried again by the next pass, still ahead of the time.
    @Test func aFailedFetchIsRetriedWithinTheLead() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try Self.setUp(weather) { (tdb, f, worker, user, outbox) throws in
            weather.down = true
            let (failed, _) = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(failed.generated[.weatherFailed] == 1 && failed.generated[.forecasts] == 0)
            #expect(failed.generated[.forecastsMissed] == nil, "not missed: its time has not come")
            weather.down = false
            let (retried, _) = worker.run(now: instant("2026-01-25T07:10:00Z")) { $0.phases = [.forecasts] }
            #expect(retried.generated[.weatherFetched] == 1 && retried.generated[.forecasts] == 1)
            #expect(weather.server.requests.count == 2)
            #expect(try f.db.query("select run_after from notification_queue where recipient_user_id = \(user)")
                .first?["run_after"].date == instant("2026-01-25T08:00:00Z"))
        }
    }

    /// Without weather all day, the forecast is counted as missed once (the summary and the metric) and
    /// never sent after its date; the next day's, made late when the weather comes back, goes out that day.
    @Test func aForecastNotMadeByItsTimeIsCountedOnceAndNeverSentForAPastDate() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try Self.setUp(weather) { (tdb, f, worker, user, outbox) throws in
            let metrics = outbox + ".prom"
            defer { try? FileManager.default.removeItem(atPath: metrics) }
            weather.down = true
            let (missed, _) = worker.run(now: instant("2026-01-25T08:00:30Z"), metricsFile: metrics) { $0.phases = [.forecasts, .deliver] }
            #expect(missed.generated[.forecastsMissed] == 1)
            #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("herald_pass_forecasts_missed 1"))
            let (again, _) = worker.run(now: instant("2026-01-25T08:05:00Z"), metricsFile: metrics) { $0.phases = [.forecasts, .deliver] }
            #expect(again.generated[.forecastsMissed] == nil)
            #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("herald_pass_forecasts_missed 0"))
            #expect(try f.count("select count(*)::int from forecast_misses where user_id = \(user)") == 1)

            // The weather comes back after midnight: the 25th's forecast is not made, nor sent.
            weather.down = false
            let (nextDay, _) = worker.run(now: instant("2026-01-26T00:30:00Z"), drain: true) { $0.phases = [.forecasts, .deliver] }
            #expect(nextDay.sent == 0 && nextDay.generated[.forecasts] == 0)
            #expect(try f.count("select count(*)::int from notification_queue") == 0)

            // The 26th: missed at 08:00, made at 09:00 when the weather comes back, and sent then.
            weather.down = true
            _ = worker.run(now: instant("2026-01-26T08:00:30Z")) { $0.phases = [.forecasts] }
            weather.down = false
            let (late, _) = worker.run(now: instant("2026-01-26T09:00:00Z"), drain: true) { $0.phases = [.forecasts, .deliver] }
            #expect(late.sent == 1)
            #expect(try Self.pushes(outbox).map { $0["data"]?["date"] } == ["2026-01-26"])
            #expect(try f.count("select count(*)::int from forecast_misses where user_id = \(user)") == 2)
        }
    }
}

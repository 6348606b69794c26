import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// The weather is fetched once per place: people whose coordinates fall in one cell
/// (`HERALD_WEATHER_CELL_DEGREES`, 0.1°) share one request for the cell's centre, and each person's
/// forecast is still read at their own notification instant, in their own zone. Against a weather fake
/// over TLS and HTTP/2.
@Suite struct WeatherCellPassTests {
    /// `count` people near (`latitude`, `longitude`), a few hundred metres apart, in `zone`, with a
    /// device and the default 08:00 forecast time.
    static func people(_ f: Fixtures, _ count: Int, near latitude: Double, _ longitude: Double,
                       zone: String = "Europe/London", time: String = "08:00") throws -> [UUID] {
        var users: [UUID] = []
        for i in 0..<count {
            let user = try f.profile(timezone: zone)
            try f.db.execute("""
                update user_profiles set latitude = \(latitude + Double(i) * 0.002), longitude = \(longitude + Double(i) * 0.002),
                       forecast_notification_time = \(time)::time where user_id = \(user)
                """)
            try f.token(user)
            users.append(user)
        }
        return users
    }

    static func worker(_ tdb: TestDB, _ weather: FakeWeather, _ settings: [String: String] = [:]) -> Worker {
        Worker(url: tdb.url, settings: weather.settings.merging(["HERALD_CHANNEL_PUSH": "log"]) { a, _ in a }
            .merging(settings) { _, b in b })
    }

    /// Forty people in two towns make two weather requests, one for each town's cell centre; all forty
    /// forecasts are made and enqueued.
    @Test func fortyPeopleInTwoTownsMakeTwoWeatherRequests() throws {
        let weather = try FakeWeather()
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let london = try Self.people(f, 20, near: 51.51, -0.19)
            let manchester = try Self.people(f, 20, near: 53.41, -2.29)
            let (s, code) = Self.worker(tdb, weather).run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(code == .ok)
            #expect(weather.requests.count == 2)
            let centres = Set(weather.requests.map { "\($0.latitude),\($0.longitude)" })
            #expect(centres == ["51.55,-0.15", "53.45,-2.25"])
            #expect(s.generated[.forecasts] == 40 && s.generated[.weatherFetched] == 2)
            #expect(try f.count("select count(*)::int from daily_forecasts where risk_level = 'HIGH'") == 40)
            #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id = any(\(london + manchester)::uuid[])") == 40)
        }
    }

    /// Two people in one cell, one in London's zone at 08:00 (08:00 UTC) and one on New York's time at
    /// 05:00 (10:00 UTC): one request serves both, and each risk is read from the pressure at their own
    /// instant and a day later. The pressure is steady until 09:00 UTC on the 26th and then 12 hPa lower,
    /// so London's change is 0 (LOW) and New York's −12 (HIGH); each stored hour is on the person's clock.
    @Test func peopleInOneCellInDifferentZonesGetTheirOwnLocalTime() throws {
        let drop = instant("2026-01-26T09:30:00Z")
        let weather = try FakeWeather(pressure: { $0 < drop ? 1030 : 1018 })
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let london = try Self.people(f, 1, near: 51.51, -0.19)[0]
            let traveller = try Self.people(f, 1, near: 51.52, -0.18, zone: "America/New_York", time: "05:00")[0]
            let worker = Self.worker(tdb, weather, ["HERALD_FORECAST_LEAD_MINUTES": "180"])
            let (s, _) = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(s.generated[.forecasts] == 2)
            #expect(weather.requests.count == 1)
            let rows = try f.db.query("""
                select d.user_id, d.risk_level, d.pressure_change_hpa::float8 as change, d.hourly_forecast::text as hourly,
                       q.run_after
                  from daily_forecasts d join notification_queue q on q.recipient_user_id = d.user_id
                 where d.forecast_date = '2026-01-25'
                """)
            let byUser = Dictionary(uniqueKeysWithValues: rows.map { ($0["user_id"].uuid!, $0) })
            #expect(byUser[london]?["risk_level"].string == "LOW" && byUser[london]?["change"].double == 0)
            #expect(byUser[traveller]?["risk_level"].string == "HIGH" && byUser[traveller]?["change"].double == -12)
            #expect(byUser[london]?["run_after"].date == instant("2026-01-25T08:00:00Z"))
            #expect(byUser[traveller]?["run_after"].date == instant("2026-01-25T10:00:00Z"))
            for user in [london, traveller] {
                let hourly = try JSONValue.parse(byUser[user]?["hourly"].string ?? "null")
                #expect(hourly["time"]?.arrayValue?.count == 48 && hourly["pressure_msl"]?.arrayValue?.count == 48)
                #expect(hourly["time"]?.arrayValue?.first == "2026-01-25T00:00", "the person's own midnight first")
            }
        }
    }

    /// One cell's answer that is not weather fails only the people of that cell: the other cell's
    /// forecasts are made, and the summary counts one request fetched and one failed.
    @Test func oneCellsBadAnswerFailsOnlyItsPeople() throws {
        let weather = try FakeWeather(answer: { $0.latitude > 53 ? .json(200, #"{"hourly":{"time":["soon"],"pressure_msl":[1e300]}}"#) : nil })
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let london = try Self.people(f, 3, near: 51.51, -0.19)
            let manchester = try Self.people(f, 3, near: 53.41, -2.29)
            let (s, code) = Self.worker(tdb, weather).run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(code == .ok)
            #expect(s.generated[.weatherFetched] == 1 && s.generated[.weatherFailed] == 1)
            #expect(s.generated[.forecasts] == 3)
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = any(\(london)::uuid[])") == 3)
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = any(\(manchester)::uuid[])") == 0)
        }
    }

    /// A location that is junk — not a number, or off the globe (a backend that dropped the table's
    /// checks) — fails that person's forecast alone: nothing is asked for it, it is counted, and the
    /// neighbour's forecast is made.
    @Test func aPersonWhoseLocationIsJunkFailsAlone() throws {
        let weather = try FakeWeather(answer: { abs($0.latitude) <= 90 && abs($0.longitude) <= 180 ? nil
            : .json(400, #"{"error":true,"reason":"Latitude must be in range of -90 to 90°."}"#) })
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            try f.db.execute("alter table user_profiles drop constraint user_profiles_latitude_check")
            try f.db.execute("alter table user_profiles drop constraint user_profiles_longitude_check")
            let people = try Self.people(f, 3, near: 51.51, -0.19)
            try f.db.execute("update user_profiles set latitude = 'NaN' where user_id = \(people[1])")
            try f.db.execute("update user_profiles set longitude = 200 where user_id = \(people[2])")
            let (s, code) = Self.worker(tdb, weather).run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(code == .ok)
            #expect(weather.requests.count == 1)
            #expect(s.generated[.forecasts] == 1 && s.generated[.forecastsUnplacedUsers] == 2)
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(people[0]) and risk_level = 'HIGH'") == 1)
        }
    }

    /// A cell's answer serves the forecasts of the next passes for `HERALD_WEATHER_REUSE_MINUTES` (60)
    /// after it was fetched: someone due half an hour later in the same cell makes no request; someone
    /// due an hour and a half later does.
    @Test func aCellsAnswerServesItsPeopleWithinTheReuseTime() throws {
        let weather = try FakeWeather()
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            _ = try Self.people(f, 1, near: 51.51, -0.19)
            let half = try Self.people(f, 1, near: 51.52, -0.18, time: "08:30")[0]
            let later = try Self.people(f, 1, near: 51.53, -0.17, time: "09:30")[0]
            let worker = Self.worker(tdb, weather)
            _ = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(weather.requests.count == 1)
            let (reused, _) = worker.run(now: instant("2026-01-25T07:35:00Z")) { $0.phases = [.forecasts] }
            #expect(weather.requests.count == 1 && reused.generated[.forecasts] == 1 && reused.generated[.weatherReused] == 1)
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(half) and risk_level = 'HIGH'") == 1)
            _ = worker.run(now: instant("2026-01-25T08:35:00Z")) { $0.phases = [.forecasts] }
            #expect(weather.requests.count == 2)
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(later) and risk_level = 'HIGH'") == 1)
        }
    }
}

/// What the app opens beside the risk: the conditions now and the seven days from the forecast's date,
/// from the same weather request; and the settings that shape the cells, checked as hostile input.
@Suite struct WeatherCellAppTests {
    /// `get_daily_forecast` gives `weather.current` (its time on the person's clock) and
    /// `weather.daily`, the seven days from the forecast's date, each with every daily variable.
    @Test func theCurrentWeatherAndTheSevenDaysReachTheApp() throws {
        let weather = try FakeWeather()
        try SecurityTests.supabase { tdb, db in
            let f = Fixtures(db: db)
            let user = try WeatherCellPassTests.people(f, 1, near: 51.51, -0.19)[0]
            let (s, _) = WeatherCellPassTests.worker(tdb, weather).run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(s.generated[.forecasts] == 1)
            let path = try #require(weather.requests.first?.path)
            #expect(path.contains("&current=temperature_2m,") && path.contains("&daily=weather_code,") && path.contains("&forecast_days=8"))
            try SecurityTests.act(db, as: "authenticated", user, claimsJSON: true)
            let text = try db.query("select get_daily_forecast('2026-01-25')::text as f").first?["f"].string ?? "null"
            try SecurityTests.owner(db)
            let w = try JSONValue.parse(text)["weather"]
            #expect(w?["current"] == ["time": "2026-01-25T07:00", "temperature_2m": 4.5, "apparent_temperature": .null,
                                      "relative_humidity_2m": 81, "surface_pressure": 1012.3, "pressure_msl": .null,
                                      "precipitation": .null, "cloud_cover": .null, "wind_speed_10m": .null, "weather_code": 3])
            let days = w?["daily"]?.arrayValue ?? []
            #expect(days.map { $0["time"]?.stringValue ?? "" } == (0..<7).map { "2026-01-\(25 + $0)" })
            #expect(days.first == ["time": "2026-01-25", "weather_code": 61, "temperature_2m_max": 6.5, "temperature_2m_min": -1,
                                   "precipitation_probability_max": 10, "precipitation_sum": .null, "wind_speed_10m_max": .null])
        }
    }

    /// The cell size is the setting's: two people 3 km apart share a request in 0.1° cells and make two
    /// in 0.01° cells.
    @Test func theCellSizeIsTheSettings() throws {
        for (size, requests) in [("0.1", 1), ("0.01", 2)] {
            let weather = try FakeWeather()
            try withTestDatabase { tdb in
                let f = Fixtures(db: try tdb.connect())
                _ = try WeatherCellPassTests.people(f, 1, near: 51.51, -0.19)
                _ = try WeatherCellPassTests.people(f, 1, near: 51.53, -0.17)
                let worker = WeatherCellPassTests.worker(tdb, weather, ["HERALD_WEATHER_CELL_DEGREES": size])
                let (s, _) = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
                #expect(s.generated[.forecasts] == 2 && weather.requests.count == requests, "\(size)")
            }
        }
    }

    /// A cell size that is not plain degrees from 0.01 to 1, or a reuse time that is not whole minutes
    /// from 0 to a day, stops the pass before any row is touched, naming the setting.
    @Test(arguments: [
        ("HERALD_WEATHER_CELL_DEGREES", "nan"), ("HERALD_WEATHER_CELL_DEGREES", "inf"), ("HERALD_WEATHER_CELL_DEGREES", "0"),
        ("HERALD_WEATHER_CELL_DEGREES", "-0.1"), ("HERALD_WEATHER_CELL_DEGREES", "1e-1"), ("HERALD_WEATHER_CELL_DEGREES", "0x1p-3"),
        ("HERALD_WEATHER_CELL_DEGREES", "2"), ("HERALD_WEATHER_CELL_DEGREES", "0.001"), ("HERALD_WEATHER_CELL_DEGREES", " 0.1"),
        ("HERALD_WEATHER_CELL_DEGREES", "0,1"), ("HERALD_WEATHER_CELL_DEGREES", ".5"),
        ("HERALD_WEATHER_CELL_DEGREES", "99999999999999999999999"),
        ("HERALD_WEATHER_REUSE_MINUTES", "-1"), ("HERALD_WEATHER_REUSE_MINUTES", "1441"), ("HERALD_WEATHER_REUSE_MINUTES", "soon"),
    ])
    func aWeatherSettingOutsideItsRangeIsRefused(_ setting: String, _ value: String) throws {
        try withTestDatabase { (tdb) throws in
            let (summary, code) = Worker(url: tdb.url, settings: [setting: value]).run(now: seedInstant)
            #expect(code == .configuration)
            #expect(summary.error?.contains(setting) == true, "\(summary.error ?? "")")
            #expect(try Fixtures(db: try tdb.connect()).count("select count(*)::int from herald_passes") == 0)
        }
    }
}

import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Logging
import Testing

/// The phases that schedule what people asked for, end to end on a real PostgreSQL: reminders, prompts
/// and forecasts, each enqueued once in the person's own time zone.
@Suite struct SchedulePhaseTests {
    @Test func remindersAreEnqueuedOnceWhenDue() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(timezone: "Asia/Tokyo")
            try db.execute("""
                insert into reminders (user_id, schedule, reminder_type, title, body, local_time, critical) values
                  (\(p), 'daily', 'dose', 'Dose', 'Time for your dose', '08:00', true)
                """)
            try db.execute("""
                insert into reminders (user_id, schedule, reminder_type, title, body, at) values
                  (\(p), 'once', 'test_start', 'Test day', 'Your test starts today', \(instant("2026-01-25T01:00:00Z")))
                """)
            let worker = Worker(url: tdb.url)
            // 22:00 UTC on the 24th is 07:00 on the 25th in Tokyo: neither is due.
            _ = worker.run(now: instant("2026-01-24T22:00:00Z")) { $0.phases = [.reminders] }
            #expect(try f.count("select count(*)::int from notification_queue") == 0)
            // 23:30 UTC is 08:30 in Tokyo: the daily dose is due (the dose at 08:00 = 23:00 UTC, reminded
            // dose_reminder_advance_minutes (30) before); the one-off not yet.
            _ = worker.run(now: instant("2026-01-24T23:30:00Z")) { $0.phases = [.reminders] }
            let daily = try #require(try db.query("select severity, priority, scheduled_at, payload->>'dose_at' as dose_at from notification_queue").first)
            #expect(daily["severity"].string == "critical")
            #expect(daily["priority"].string == "high")
            #expect(daily["scheduled_at"].date == instant("2026-01-24T22:30:00Z"))
            #expect(daily["dose_at"].string.flatMap(ISO8601.parse) == instant("2026-01-24T23:00:00Z"))
            // Later: the one-off is due; the daily one is not enqueued again the same day.
            _ = worker.run(now: instant("2026-01-25T02:00:00Z")) { $0.phases = [.reminders] }
            _ = worker.run(now: instant("2026-01-25T03:00:00Z")) { $0.phases = [.reminders] }
            #expect(try f.count("select count(*)::int from notification_queue") == 2)
            // The next local day, the daily one again.
            _ = worker.run(now: instant("2026-01-25T23:10:00Z")) { $0.phases = [.reminders] }
            #expect(try f.count("select count(*)::int from notification_queue") == 3)
        }
    }

    /// A daily time of 24:00 (PostgreSQL's `time` accepts it) never came due. It is midnight as each local
    /// date begins: a reminder, a dose and a forecast at 24:00 go out once a day.
    @Test func dailyTimesOf2400AreMidnightOnceADay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(timezone: "Asia/Tokyo")            // UTC+9: midnight is 15:00 UTC
            try db.execute("update user_profiles set forecast_notification_time = '24:00', daily_reminder_time = '24:00' where user_id = \(p)")
            try db.execute("insert into reminders (user_id, schedule, reminder_type) values (\(p), 'daily', 'daily')")
            try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'dose', '24:00')")
            try db.execute("""
                insert into daily_forecasts (user_id, forecast_date, risk_level) values (\(p), '2026-01-25', 'LOW'), (\(p), '2026-01-26', 'LOW')
                """)
            let worker = Worker(url: tdb.url)
            for at in ["2026-01-24T15:00:00Z", "2026-01-24T15:05:00Z", "2026-01-25T03:00:00Z", "2026-01-25T14:00:00Z"] {
                let (s, code) = worker.run(now: instant(at)) { $0.phases = [.forecasts, .reminders] }
                #expect(code == .ok && s.phaseErrors.isEmpty)
            }
            func rows() throws -> [String] {
                try db.query("""
                    select kind || ' ' || coalesce(payload->>'reminder_type', '') || ' ' || (payload->>'date') || ' '
                           || to_char(scheduled_at at time zone 'UTC', 'DD HH24:MI') as r
                      from notification_queue order by scheduled_at, kind, r
                    """).compactMap { $0["r"].string }
            }
            // The 25th begins at 15:00 UTC on the 24th; the dose at that midnight is reminded 30 minutes before.
            // The 26th's forecast is made within the hour before its midnight (14:00 UTC), for that midnight.
            #expect(try rows() == ["reminder dose 2026-01-25 24 14:30", "daily_forecast  2026-01-25 24 15:00",
                                   "reminder daily 2026-01-25 24 15:00", "daily_forecast  2026-01-26 25 15:00"])
            _ = worker.run(now: instant("2026-01-25T15:00:00Z")) { $0.phases = [.forecasts, .reminders] }
            #expect(try rows().count == 6)
            #expect(try rows().suffix(2) == ["daily_forecast  2026-01-26 25 15:00", "reminder daily 2026-01-26 25 15:00"])
        }
    }

    /// People whose zone herald cannot read (PostgreSQL accepts the POSIX `UTC+3`) were passed over by
    /// the forecasts, prompts and reminders phases without a word. Each phase now warns once with their
    /// count (ids at debug, the zone text never above it) and the summary counts them; the others go on.
    @Test func peopleWithAnUnreadableZoneAreCountedAndLogged() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            // A zone written before migration 031, which now refuses it: the row is there, and must not stop the pass.
            try f.db.execute("alter table user_profiles disable trigger user_profiles_timezone_check")
            let odd = [try f.profile(timezone: "UTC+3"), try f.profile(timezone: "UTC+3")]
            try f.db.execute("alter table user_profiles enable trigger user_profiles_timezone_check")
            let fine = try f.profile(timezone: "Europe/London")
            for p in odd + [fine] {
                try db.execute("insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(p), 2, 7, 22)")
                // Two daily reminders each: a person is counted once.
                try db.execute("insert into reminders (user_id, schedule, reminder_type, local_time) values (\(p), 'daily', 'daily', '06:00'), (\(p), 'daily', 'dose', '09:00')")
                try db.execute("insert into daily_forecasts (user_id, forecast_date, risk_level) values (\(p), '2026-01-25', 'LOW')")
            }
            let log = CollectedLog()
            var options = PassOptions()
            options.now = instant("2026-01-25T06:00:00Z")
            options.phases = [.forecasts, .prompts, .reminders]
            let logger = Logger(label: "herald") { JSONLogHandler(label: $0, level: .info, stream: log.stream) }
            let (summary, code) = Runner(settings: Settings(["DATABASE_URL": tdb.url]), options: options, logger: logger).run()
            #expect(code == .ok)
            #expect(summary.phaseErrors.isEmpty)
            #expect(summary.generated[.forecastsUnknownZoneUsers] == 2)
            #expect(summary.generated[.promptsUnknownZoneUsers] == 2)
            #expect(summary.generated[.remindersUnknownZoneUsers] == 2)
            // The readable one goes on: her prompts and her 06:00 reminder (not the forecast: 08:00 by default).
            #expect(summary.generated[.prompts] == 2)
            #expect(summary.generated[.reminders] == 1)
            #expect(try f.count("select count(*)::int from notification_queue where recipient_user_id <> \(fine)") == 0)
            let warnings = log.text.split(separator: "\n").filter { $0.contains("time zone herald cannot read") }
            #expect(warnings.count == 3, "\(log.text)")
            for phase in ["forecasts", "prompts", "reminders"] {
                #expect(warnings.contains { $0.contains(#""phase":"\#(phase)""#) && $0.contains(#""users":2"#) }, "\(warnings)")
            }
            #expect(!log.text.contains("UTC+3"))
            #expect(!odd.contains { log.text.contains($0.lowercased) })             // ids only at debug
        }
    }

    @Test func promptsAreScheduledOncePerLocalDay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(timezone: "America/Los_Angeles")
            try db.execute("insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(p), 4, 7, 22)")
            let worker = Worker(url: tdb.url)
            // 06:00 in Los Angeles (14:00 UTC): all four prompts of the day are still ahead.
            let (s, _) = worker.run(now: instant("2026-01-25T14:00:00Z")) { $0.phases = [.prompts] }
            #expect(s.generated[.prompts] == 4)
            let times = try db.query("select run_after from notification_queue order by run_after").compactMap { $0["run_after"].date }
            #expect(times.count == 4)
            // 07:00–22:00 local = 15:00–06:00 UTC; each prompt inside its 3.75-hour segment.
            let start = instant("2026-01-25T15:00:00Z")
            for (i, t) in times.enumerated() {
                let lo = start.addingTimeInterval(Double(i) * 3.75 * 3600)
                #expect(t >= lo && t < lo.addingTimeInterval(3.75 * 3600), "prompt \(i + 1) outside its segment")
            }
            _ = worker.run(now: instant("2026-01-25T18:00:00Z")) { $0.phases = [.prompts] }
            #expect(try f.count("select count(*)::int from notification_queue") == 4)
        }
    }

    /// A weather service that answers slowly holds the pass back no longer than the phase's budget: the
    /// requests not started in time wait for the next pass (those places' people stay candidates), and delivery
    /// still runs. The service holds its answers until the budget is spent, so the requests that went
    /// out are those the two connections started within it.
    @Test func slowWeatherHoldsThePassNoLongerThanItsBudget() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let gate = FakeGate()
            let weather = try FakeHTTPServer { _ in
                FakeResponse(status: 200, headers: [("content-type", "application/json")],
                             body: Array(#"{"hourly":{"time":[],"pressure_msl":[]}}"#.utf8), gate: gate)
            }
            defer { weather.shutdown() }
            // Ten places, 0.2° apart: ten weather requests.
            for i in 0..<10 {
                let user = try f.profile(timezone: "Asia/Tokyo")
                try db.execute("update user_profiles set latitude = \(35.7 + Double(i) * 0.2), longitude = 139.7 where user_id = \(user)")
            }
            let inbox = try f.enqueue(to: try f.profile(), at: seedInstant)
            let worker = Worker(url: tdb.url, settings: ["WEATHER_URL": weather.baseURL, "HERALD_CHANNEL_PUSH": "log",
                                                         "HERALD_CONNECTIONS_PER_HOST": "2"])
            let shift = ClockShift()
            let pass = InBackground {
                worker.run(now: seedInstant) { $0.phases = [.forecasts, .deliver]; $0.weatherBudget = 2; $0.clockShift = shift }
            }
            // The budget counts from before the first request on the pass's clock; its answer goes once
            // the budget is spent.
            #expect(gate.waitUntilHeld(1))
            shift.advance(by: 2.5)
            gate.open()
            let (s, code) = pass.value()
            #expect(code == .ok)
            let notFetched = s.generated[.weatherNotFetched] ?? 0
            #expect(notFetched >= 1 && notFetched <= 8, "two at a time, answered after the 2 s budget: none started after it")
            #expect(notFetched + (s.generated[.weatherFailed] ?? 0) + (s.generated[.weatherFetched] ?? 0) == 10)
            #expect(weather.requests.count == 10 - notFetched)
            #expect(try f.row(inbox)["status"].string == "sent")
        }
    }

    @Test func forecastsAreDueInEachTimezoneAndFetchedWhenMissing() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            // The fake weather provider: pressure falls 12 hPa over the day → HIGH.
            let requests = Counter()
            let weather = try FakeHTTPServer { request in
                _ = requests.next()
                var times: [String] = [], pressure: [String] = []
                for day in ["2026-01-25", "2026-01-26"] {
                    for h in 0..<24 {
                        times.append("\"\(day)T\(h < 10 ? "0" : "")\(h):00\"")
                        pressure.append(String(1020.0 - Double(times.count - 1) * 0.5))
                    }
                }
                return FakeResponse.json(200, #"{"hourly":{"time":[\#(times.joined(separator: ","))],"pressure_msl":[\#(pressure.joined(separator: ","))]}}"#)
            }
            defer { weather.shutdown() }
            let tokyo = try f.profile(timezone: "Asia/Tokyo")       // 12:00 at 03:00 UTC: due
            let london = try f.profile(timezone: "Europe/London")   // 03:00: not due (08:00)
            let ny = try f.profile(timezone: "America/New_York")    // 22:00 on the 24th: due for the 24th
            try db.execute("update user_profiles set latitude = 35.7, longitude = 139.7 where user_id = any(\([tokyo, london])::uuid[])")
            try db.execute("""
                insert into daily_forecasts (user_id, forecast_date, risk_level, forecast_summary)
                values (\(ny), '2026-01-24', 'LOW', 'Steady pressure expected. Your body may feel more balanced today.')
                """)
            let worker = Worker(url: tdb.url, settings: ["WEATHER_URL": weather.baseURL, "HERALD_CHANNEL_PUSH": "log"])
            let (s, code) = worker.run(now: seedInstant) { $0.phases = [.forecasts] }
            #expect(code == .ok)
            #expect(s.generated[.forecasts] == 2)
            #expect(requests.next() == 2, "one weather request, for Tokyo")
            let rows = try db.query("select recipient_user_id, payload::text as p from notification_queue order by recipient_user_id")
            let byUser = Dictionary(uniqueKeysWithValues: rows.map { ($0["recipient_user_id"].uuid!, try! JSONValue.parse($0["p"].string!)) })
            #expect(byUser[tokyo]?["risk_level"]?.stringValue == "HIGH")
            #expect(byUser[tokyo]?["date"]?.stringValue == "2026-01-25")
            #expect(byUser[ny]?["date"]?.stringValue == "2026-01-24")
            #expect(byUser[london] == nil)
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(tokyo) and risk_level = 'HIGH'") == 1)

            // A second pass the same day sends nothing new and fetches nothing.
            let (again, _) = worker.run(now: seedInstant.addingTimeInterval(600)) { $0.phases = [.forecasts] }
            #expect(again.generated[.forecasts] ?? 0 == 0)
            #expect(requests.next() == 3)

            // Delivery marks the forecast sent.
            try db.execute("insert into device_tokens (user_id, device_token, provider) values (\(ny), \(Fixtures.newToken()), 'apns')")
            _ = worker.run(now: seedInstant.addingTimeInterval(700)) { $0.phases = [.deliver] }
            #expect(try f.count("select count(*)::int from daily_forecasts where user_id = \(ny) and notification_sent") == 1)
        }
    }
}

import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A person's forecast time takes effect at once: a change of `forecast_notification_time` (or of the
/// time zone) after the day's push was enqueued withdraws it, and the push goes out at the new time,
/// once. A push already sent stays the day's only one.
@Suite struct ForecastTimeChangeTests {
    typealias Weather = ForecastPrimingTests.Weather

    static let phases: [Phase] = [.forecasts, .deliver]

    /// The person's forecast pushes in the queue: status, skip reason and due time, oldest first.
    static func rows(_ f: Fixtures, _ user: UUID) throws -> [(status: String, reason: String?, runAfter: Date?)] {
        try f.db.query("""
            select status, skip_reason, run_after from notification_queue
             where recipient_user_id = \(user) and kind = 'daily_forecast' order by created_at, id
            """).map { ($0["status"].string ?? "?", $0["skip_reason"].string, $0["run_after"].date) }
    }

    /// Moved later (08:00 → 09:00 after the push was enqueued at 07:05): nothing at 08:00, one push at 09:00.
    @Test func aLaterTimeWithdrawsTheEnqueuedPushAndSendsItAtTheNewTime() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try ForecastPrimingTests.setUp(weather) { tdb, f, worker, user, outbox in

            _ = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = Self.phases }
            #expect(try Self.rows(f, user).map(\.runAfter) == [instant("2026-01-25T08:00:00Z")])

            try f.db.execute("update user_profiles set forecast_notification_time = '09:00' where user_id = \(user)")
            let withdrawn = try Self.rows(f, user)
            #expect(withdrawn.map(\.status) == ["skipped"] && withdrawn.first?.reason == "cancelled")
            #expect(try f.count("select count(*)::int from notification_events where event = 'cancelled'") == 1)

            let (atEight, _) = worker.run(now: instant("2026-01-25T08:05:00Z"), drain: true) { $0.phases = Self.phases }
            #expect(atEight.sent == 0)
            #expect(try Self.rows(f, user).last?.runAfter == instant("2026-01-25T09:00:00Z"), "enqueued again within the lead")
            #expect(weather.server.requests.count == 1, "the stored forecast is used again")

            let (atNine, _) = worker.run(now: instant("2026-01-25T09:00:05Z"), drain: true) { $0.phases = Self.phases }
            #expect(atNine.sent == 1)
            _ = worker.run(now: instant("2026-01-25T09:30:00Z"), drain: true) { $0.phases = Self.phases }
            #expect(try ForecastPrimingTests.pushes(outbox).map { $0["data"]?["date"] } == ["2026-01-25"])
        }
    }

    /// Moved earlier, to a time already past (08:00 → 07:15 at 07:30): the push goes out at once, once.
    @Test func anEarlierTimeAlreadyPastSendsThePushAtOnce() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try ForecastPrimingTests.setUp(weather) { tdb, f, worker, user, outbox in

            _ = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = Self.phases }
            try f.db.execute("update user_profiles set forecast_notification_time = '07:15' where user_id = \(user)")
            let (now, _) = worker.run(now: instant("2026-01-25T07:30:00Z"), drain: true) { $0.phases = Self.phases }
            #expect(now.sent == 1)
            _ = worker.run(now: instant("2026-01-25T08:00:05Z"), drain: true) { $0.phases = Self.phases }
            #expect(try ForecastPrimingTests.pushes(outbox).count == 1)
            #expect(try Self.rows(f, user).map(\.status) == ["skipped", "sent"])
        }
    }

    /// A new time zone moves the instant too (London → New York: 08:00 local is 13:00 UTC in January).
    @Test func aNewTimeZoneMovesThePushToTheNewZonesTime() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try ForecastPrimingTests.setUp(weather) { tdb, f, worker, user, outbox in

            _ = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = Self.phases }
            try f.db.execute("update user_profiles set timezone = 'America/New_York' where user_id = \(user)")
            let (atEight, _) = worker.run(now: instant("2026-01-25T08:00:05Z"), drain: true) { $0.phases = Self.phases }
            #expect(atEight.sent == 0)
            let (atOne, _) = worker.run(now: instant("2026-01-25T13:00:05Z"), drain: true) { $0.phases = Self.phases }
            #expect(atOne.sent == 1)
            #expect(try Self.rows(f, user).last?.runAfter == instant("2026-01-25T13:00:00Z"))
        }
    }

    /// The app's sync writing the same values withdraws nothing; a change after the push was sent
    /// sends no second one that day.
    @Test func theSameValuesWithdrawNothingAndASentPushStaysTheDaysOnly() throws {
        let weather = Weather()
        defer { weather.server.shutdown() }
        try ForecastPrimingTests.setUp(weather) { tdb, f, worker, user, outbox in

            _ = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = Self.phases }
            try f.db.execute("""
                update user_profiles set forecast_notification_time = forecast_notification_time, timezone = timezone
                 where user_id = \(user)
                """)
            #expect(try Self.rows(f, user).map(\.status) == ["pending"])

            let (sent, _) = worker.run(now: instant("2026-01-25T08:00:05Z"), drain: true) { $0.phases = Self.phases }
            #expect(sent.sent == 1)
            try f.db.execute("update user_profiles set forecast_notification_time = '10:00' where user_id = \(user)")
            _ = worker.run(now: instant("2026-01-25T10:00:05Z"), drain: true) { $0.phases = Self.phases }
            #expect(try ForecastPrimingTests.pushes(outbox).count == 1)
            #expect(try Self.rows(f, user).map(\.status) == ["sent"])
        }
    }
}

import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `forecasts` phase (seed 004, DESIGN §5): once a user's local clock passes their
/// `forecast_notification_time`, enqueue one "Daily Flare Forecast" push for their local date. The
/// forecast comes from `daily_forecasts`, or — where the row is missing and a location is known — is
/// made from the weather provider's hourly pressure (an Open-Meteo-style API at `WEATHER_URL`).
struct ForecastPhase {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger
    let transport: HTTPTransport
    /// Base URL of the Open-Meteo-style forecast API; nil disables fetching missing forecasts.
    var weatherURL: String?
    /// No weather request starts after this many seconds, nor after a stop signal (`PassOptions.weatherBudget`).
    var fetchBudget: TimeInterval = 60
    var thresholds = RiskThresholds()

    struct Result {
        var enqueued = 0
        var fetched = 0
        var fetchFailures = 0
        /// Users whose weather was not asked for: the phase's time ran out, or a stop signal came.
        var notFetched = 0
        /// Candidates whose time zone herald cannot read (passed over).
        var unknownZones = UnknownZones()
    }

    struct Candidate {
        var user: UUID
        var zone: String
        var date: LocalDate
        var at: Date
        var latitude: Double?
        var longitude: Double?
        var locationName: String?
        var notificationTime: LocalTime
    }

    func run() throws -> Result {
        var result = Result()
        // Who could be due: push on, and a location or a forecast row to send.
        var candidates: [Candidate] = []
        for row in try db.query("""
            select p.user_id, p.timezone, p.forecast_notification_time::text as t, p.latitude, p.longitude, p.location_name
              from user_profiles p
             where p.notify_push
               and (p.latitude is not null or exists (
                      select 1 from daily_forecasts f where f.user_id = p.user_id
                         and f.forecast_date >= \(now)::date - 1 and f.forecast_date <= \(now)::date + 1))
            """) {
            guard let user = row["user_id"].uuid else { continue }
            guard let tz = row["timezone"].string, let zone = Zone.named(tz) else {
                result.unknownZones.note(user)
                continue
            }
            guard let time = row["t"].string.flatMap(LocalTime.init).map(DailyTime.timeOfDay),   // 24:00 → 00:00
                  let date = FlareForecast.dueDate(now: now, zone: zone, notificationTime: time) else { continue }
            candidates.append(Candidate(
                user: user, zone: tz, date: date, at: Zone.instant(of: date, time, in: zone),
                latitude: row["latitude"].double, longitude: row["longitude"].double,
                locationName: row["location_name"].string, notificationTime: time))
        }
        result.unknownZones.report(.forecasts, logger: logger)
        guard !candidates.isEmpty else { return result }

        // Already enqueued for that date: nothing to do (and no weather to fetch).
        let keys = candidates.map { Self.dedupeKey($0.user, $0.date) }
        let done = Set(try db.query("select dedupe_key from notification_queue where dedupe_key = any(\(keys)::text[])")
            .compactMap { $0["dedupe_key"].string })
        candidates.removeAll { done.contains(Self.dedupeKey($0.user, $0.date)) }
        guard !candidates.isEmpty else { return result }

        var forecasts: [String: (risk: String?, summary: String?, change: Double?)] = [:]
        for row in try db.query("""
            select user_id, forecast_date::text as d, risk_level, forecast_summary, pressure_change_hpa::float8 as change
              from daily_forecasts
             where user_id = any(\(candidates.map(\.user))::uuid[])
               and forecast_date::text = any(\(candidates.map(\.date.description))::text[])
            """) {
            guard let user = row["user_id"].uuid, let d = row["d"].string else { continue }
            forecasts["\(user.lowercased)/\(d)"] = (row["risk_level"].string, row["forecast_summary"].string, row["change"].double)
        }

        // Fetch the missing ones, concurrently, outside any transaction.
        let missing = candidates.filter { forecasts["\($0.user.lowercased)/\($0.date)"] == nil && $0.latitude != nil && $0.longitude != nil }
        if let base = weatherURL, !missing.isEmpty {
            let requests = missing.map { c in
                HTTPRequest(method: "GET", url: base + FlareForecast.openMeteoPath(latitude: c.latitude!, longitude: c.longitude!, timezone: c.zone),
                            headers: [("accept", "application/json")], timeout: 15, version: .http2)
            }
            var made: [JSONValue] = []
            let started = Date()
            let unstarted = transport.perform(requests, shouldStart: { _ in
                !StopSignal.requested && Date().timeIntervalSince(started) < fetchBudget
            }) { index, response in
                let c = missing[index]
                guard case .success(let r) = response, r.status == 200,
                      let json = try? JSONValue.parse(Data(r.body)), let weather = try? HourlyWeather(json: json),
                      let change = weather.pressureChange(from: c.date, at: c.notificationTime) else {
                    logger.warning("could not get the weather for a forecast", metadata: [
                        "user_id": .string(c.user.lowercased), "date": .string(c.date.description),
                        "status": .string((try? response.get().status).map(String.init) ?? "\(response)")])
                    return
                }
                let risk = FlareForecast.risk(pressureChangeHPa: change, thresholds: thresholds).rawValue
                forecasts["\(c.user.lowercased)/\(c.date)"] = (risk, nil, change)
                made.append([
                    "user_id": .string(c.user.lowercased), "forecast_date": .string(c.date.description),
                    "latitude": .number(c.latitude!), "longitude": .number(c.longitude!),
                    "location_name": c.locationName.map { .string($0) } ?? .null,
                    "hourly_forecast": json["hourly"] ?? .null, "risk_level": .string(risk), "change": .number(change),
                ])
            }
            result.fetched = made.count
            result.fetchFailures = missing.count - made.count - unstarted.count
            result.notFetched = unstarted.count
            if !unstarted.isEmpty {
                logger.warning("the weather fetches ran out of their time in this pass; the other users' forecasts wait for the next pass",
                               metadata: ["not_fetched": "\(unstarted.count)", "budget_s": "\(fetchBudget)"])
            }
            if !made.isEmpty {
                try db.execute("""
                    insert into daily_forecasts (user_id, forecast_date, location_latitude, location_longitude, location_name,
                                                 hourly_forecast, risk_level, pressure_change_hpa)
                    select user_id, forecast_date, latitude, longitude, location_name, hourly_forecast, risk_level, change
                      from jsonb_to_recordset(\(JSONValue.array(made).pgJSONText)::jsonb) as x(
                        user_id uuid, forecast_date date, latitude float8, longitude float8, location_name text,
                        hourly_forecast jsonb, risk_level text, change numeric)
                    on conflict (user_id, forecast_date) do nothing
                    """)
            }
        }

        var rows: [NewNotification] = []
        for c in candidates {
            guard let f = forecasts["\(c.user.lowercased)/\(c.date)"] else { continue }
            // A row without a risk gets one from its pressure change (documented rule, configurable).
            guard let risk = f.risk ?? f.change.map({ FlareForecast.risk(pressureChangeHPa: $0, thresholds: thresholds).rawValue }) else {
                logger.warning("forecast has neither a risk level nor a pressure change; not sent",
                               metadata: ["user_id": .string(c.user.lowercased), "date": .string(c.date.description)])
                continue
            }
            var payload: [String: JSONValue] = [
                "type": "daily_forecast", "date": .string(c.date.description), "risk_level": .string(risk),
            ]
            if let s = f.summary { payload["summary"] = .string(s) }
            rows.append(NewNotification(
                recipient: c.user, member: c.user, channel: Channel.push.rawValue, kind: .dailyForecast,
                priority: .normal, payload: .object(payload), scheduledAt: c.at,
                dedupeKey: Self.dedupeKey(c.user, c.date), reason: "forecast_due"))
        }
        result.enqueued = try Enqueuer.insert(rows, db: db, passId: passId).count
        return result
    }

    static func dedupeKey(_ user: UUID, _ date: LocalDate) -> String { "forecast:\(user.lowercased):\(date)" }
}

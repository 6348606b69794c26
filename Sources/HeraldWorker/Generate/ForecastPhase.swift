import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `forecasts` phase (daily flare forecasts): once a user's local clock passes their
/// `forecast_notification_time`, enqueue one "Daily Flare Forecast" push for their local date. The
/// forecast comes from `daily_forecasts`, or — where the row is missing and a location is known — is
/// made from the weather provider's hourly pressure (an Open-Meteo-style API at `WEATHER_URL`;
/// `ForecastPhase+Weather.swift`).
///
///     var phase = ForecastPhase(db: db, passId: passId, now: now, logger: logger, transport: transport)
///     phase.weatherURL = "https://api.open-meteo.com"
///     let result = try phase.run()   // result.enqueued, result.fetched, …
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

        /// The key of its forecast in `Forecasts`.
        var forecastKey: String { ForecastPhase.forecastKey(user, date.description) }
    }

    /// A day's forecast for one user, as `daily_forecasts` holds it or the weather made it.
    struct Forecast {
        var risk: String?
        var summary: String?
        var change: Double?
    }

    /// The forecasts at hand, by `forecastKey`.
    typealias Forecasts = [String: Forecast]

    func run() throws -> Result {
        var result = Result()
        var candidates = try candidates(unknownZones: &result.unknownZones)
        result.unknownZones.report(.forecasts, logger: logger)
        guard !candidates.isEmpty else { return result }

        // Already enqueued for that date: nothing to do (and no weather to fetch).
        let done = try enqueuedKeys(of: candidates)
        candidates.removeAll { done.contains(Self.dedupeKey($0.user, $0.date)) }
        guard !candidates.isEmpty else { return result }

        var forecasts = try storedForecasts(of: candidates)
        // Fetch the missing ones, concurrently, outside any transaction.
        let missing = candidates.filter { forecasts[$0.forecastKey] == nil && $0.latitude != nil && $0.longitude != nil }
        if let base = weatherURL, !missing.isEmpty {
            try fetchMissing(missing, from: base, into: &forecasts, result: &result)
        }
        result.enqueued = try Enqueuer.insert(notifications(candidates, forecasts), db: db, passId: passId).count
        return result
    }

    /// Who could be due: push on, and a location or a forecast row to send; each with their local
    /// date whose notification time has passed. People whose zone herald cannot read are noted.
    func candidates(unknownZones: inout UnknownZones) throws -> [Candidate] {
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
                unknownZones.note(user)
                continue
            }
            guard let time = row["t"].string.flatMap(LocalTime.init).map(DailyTime.timeOfDay),   // 24:00 → 00:00
                  let date = FlareForecast.dueDate(now: now, zone: zone, notificationTime: time) else { continue }
            candidates.append(Candidate(
                user: user, zone: tz, date: date, at: Zone.instant(of: date, time, in: zone),
                latitude: row["latitude"].double, longitude: row["longitude"].double,
                locationName: row["location_name"].string, notificationTime: time))
        }
        return candidates
    }

    /// The dedupe keys of the candidates' forecasts already in the queue.
    func enqueuedKeys(of candidates: [Candidate]) throws -> Set<String> {
        let keys = candidates.map { Self.dedupeKey($0.user, $0.date) }
        return Set(try db.query("select dedupe_key from notification_queue where dedupe_key = any(\(keys)::text[])")
            .compactMap { $0["dedupe_key"].string })
    }

    /// The candidates' rows of `daily_forecasts` for their dates.
    func storedForecasts(of candidates: [Candidate]) throws -> Forecasts {
        var forecasts: Forecasts = [:]
        for row in try db.query("""
            select user_id, forecast_date::text as d, risk_level, forecast_summary, pressure_change_hpa::float8 as change
              from daily_forecasts
             where user_id = any(\(candidates.map(\.user))::uuid[])
               and forecast_date::text = any(\(candidates.map(\.date.description))::text[])
            """) {
            guard let user = row["user_id"].uuid, let d = row["d"].string else { continue }
            forecasts[Self.forecastKey(user, d)] = Forecast(risk: row["risk_level"].string, summary: row["forecast_summary"].string,
                                                            change: row["change"].double)
        }
        return forecasts
    }

    /// One push per candidate with a forecast. A forecast without a risk gets one from its pressure
    /// change (documented rule, configurable); one with neither is not sent.
    func notifications(_ candidates: [Candidate], _ forecasts: Forecasts) -> [NewNotification] {
        var rows: [NewNotification] = []
        for c in candidates {
            guard let f = forecasts[c.forecastKey] else { continue }
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
                recipient: c.user, member: c.user, channel: Channel.push.rawValue, kind: Kind.dailyForecast.rawValue,
                priority: .normal, payload: .object(payload), scheduledAt: c.at,
                dedupeKey: Self.dedupeKey(c.user, c.date), reason: "forecast_due"))
        }
        return rows
    }

    static func dedupeKey(_ user: UUID, _ date: LocalDate) -> String { "forecast:\(user.lowercased):\(date)" }

    /// A forecast's key in `Forecasts`: the user and the date as `daily_forecasts` writes it.
    static func forecastKey(_ user: UUID, _ date: String) -> String { "\(user.lowercased)/\(date)" }
}

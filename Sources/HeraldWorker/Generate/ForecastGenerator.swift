import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `forecasts` phase (daily flare forecasts): each user's forecast for their local date is made
/// ahead of their `forecast_notification_time` and its push enqueued for that time, once per date.
///
/// Within `lead` (an hour unless configured) before the notification time:
/// 1. the forecast is the `daily_forecasts` row for the date; where there is none (or it has neither a
///    risk level nor a pressure change) and a location is known, it is made from the weather of the
///    person's place cell (`WeatherCells`: everyone in a cell shares one Open-Meteo-style request at
///    `WEATHER_URL`, or the cell's answer stored by a pass within `reuseFor`; `ForecastGenerator+Weather.swift`),
///    read at the person's own notification instant, and stored with the conditions now and the seven
///    days ahead. A fetch that fails is tried again by each pass until it comes;
/// 2. a forecast without words gets them from the team's insight service, or herald's own templates in
///    the person's language (`ForecastGenerator+Words.swift`): no forecast goes out without words;
/// 3. its push is enqueued with `run_after` at the notification time, so it goes out on time and the
///    app opens the stored forecast (`get_daily_forecast`) without a fetch.
///
/// The candidates go through these steps a chunk of `chunkSize` people at a time, the people of a place
/// together; a place whose people fall in two chunks is asked once (`PassWeather`).
///
/// A forecast that could not be made by its notification time is counted and logged, once
/// (`ForecastGenerator+Misses.swift`); it is still made and sent if the weather comes later that local
/// day, and never for a date that has passed. Every request is made outside any transaction.
///
///     var phase = ForecastGenerator(db: db, passId: passId, now: now, logger: logger, transport: transport)
///     phase.weatherURL = "https://api.open-meteo.com"
///     let result = try phase.run()   // result.enqueued, result.fetched, result.missed, …
struct ForecastGenerator {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger
    let transport: HTTPTransport
    /// Base URL of the Open-Meteo-style forecast API; nil disables fetching missing forecasts.
    var weatherURL: String?
    /// No weather or insight request starts after this many seconds, nor after a stop signal
    /// (`PassOptions.weatherBudget`).
    var fetchBudget: TimeInterval = 60
    /// The pass's clock, on which the budget is counted (`PassClock`: a test moves it).
    var clock = PassClock(now: nil)
    /// How long before the notification time the forecast is made (`PassOptions.forecastLead`).
    var lead: TimeInterval = 3600
    /// The side of a place cell, in degrees (`PassOptions.weatherCellSize`).
    var cellSize = WeatherCells.defaultSize
    /// How long a cell's stored answer serves later passes (`PassOptions.weatherReuse`); 0: never.
    var reuseFor: TimeInterval = 3600
    /// People whose forecasts are made, worded and enqueued together (`PassOptions.forecastChunk`): a
    /// pass's memory stays that of one chunk however many people are due.
    var chunkSize = 2_000
    /// The team's insight service; nil: herald's own words.
    var insight: ForecastInsightService?
    /// Whether forecasts past their time and not made are noted (not in a dry run, which fetches nothing).
    var notesMisses = true
    var thresholds = RiskThresholds()

    struct Result {
        var enqueued = 0
        /// Place cells whose weather was fetched and usable.
        var fetched = 0
        /// Place cells whose request failed or was answered with something that is not weather.
        var fetchFailures = 0
        /// Place cells whose weather was not asked for: the phase's time ran out, or a stop signal came.
        var notFetched = 0
        /// Place cells served by an answer a pass stored within `reuseFor`.
        var reused = 0
        /// People whose coordinates give no place cell (not numbers, or off the globe).
        var unplaced = 0
        /// Forecasts whose words came from the insight service.
        var insights = 0
        /// Insight requests that failed, timed out or were answered with something unusable.
        var insightFailures = 0
        /// Forecasts given herald's own words.
        var templatedWords = 0
        /// Forecasts noted, for the first time, as not made by their notification time.
        var missed = 0
        /// Candidates whose time zone herald cannot read (passed over).
        var unknownZones = UnknownZones()
    }

    struct Candidate {
        var user: UUID
        var zone: String
        var date: LocalDate
        /// The notification time's instant on `date`.
        var at: Date
        /// 0 when `date` is the person's today, 1 when it is tomorrow.
        var daysAhead: Int
        var latitude: Double?
        var longitude: Double?
        var locationName: String?
        var notificationTime: LocalTime
        var locale: String

        /// The key of its forecast in `Forecasts`.
        var forecastKey: String { ForecastGenerator.forecastKey(user, date.description) }
    }

    /// A day's forecast for one user, as `daily_forecasts` holds it.
    struct Forecast {
        var risk: RiskLevel?
        var change: Double?
        var summary: String?
        /// The language of its words, when herald wrote them.
        var locale: String?
        var hourly: JSONValue?

        /// Made: it has a risk level, or a pressure change to derive one from.
        var made: Bool { risk != nil || change != nil }

        func riskLevel(_ thresholds: RiskThresholds) -> RiskLevel? {
            risk ?? change.map { FlareForecast.risk(pressureChangeHPa: $0, thresholds: thresholds) }
        }
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

        let started = clock.now()
        var asked = PassWeather()
        for chunk in Self.chunks(candidates, size: chunkSize, cellSize: cellSize) {
            try make(chunk, started: started, asked: &asked, result: &result)
        }
        return result
    }

    /// The candidates in chunks of at most `size`, the people of one place cell next to each other (by
    /// cell, then as they came; people with no cell first), so that a place's people share a chunk, or
    /// two that follow each other.
    static func chunks(_ candidates: [Candidate], size: Int, cellSize: Double) -> [[Candidate]] {
        let keyed = candidates.enumerated().map { i, c in
            (key: (try? WeatherCells.cell(latitude: c.latitude, longitude: c.longitude, size: cellSize).get())?.key ?? "", i: i)
        }
        let sorted = keyed.sorted { $0.key != $1.key ? $0.key < $1.key : $0.i < $1.i }.map { candidates[$0.i] }
        return stride(from: 0, to: sorted.count, by: max(1, size)).map { Array(sorted[$0..<min($0 + max(1, size), sorted.count)]) }
    }

    /// One chunk of candidates: their forecasts made from the weather where missing, given words where
    /// they have none, and enqueued; those past their time and not made noted.
    private func make(_ chunk: [Candidate], started: Date, asked: inout PassWeather, result: inout Result) throws {
        var forecasts = try storedForecasts(of: chunk)
        let missing = chunk.filter { forecasts[$0.forecastKey]?.made != true && $0.latitude != nil && $0.longitude != nil }
        if let base = weatherURL, !missing.isEmpty,
           try fetchMissing(missing, from: base, started: started, asked: &asked, result: &result) {
            forecasts = try storedForecasts(of: chunk)
        }
        let wordless = chunk.filter { forecasts[$0.forecastKey].map { $0.made && $0.summary == nil } ?? false }
        if !wordless.isEmpty, try writeWords(wordless, forecasts, started: started, result: &result) {
            forecasts = try storedForecasts(of: chunk)
        }
        result.enqueued += try Enqueuer.insert(notifications(chunk, forecasts), db: db, passId: passId).count
        if notesMisses {
            result.missed += try noteMisses(chunk.filter { $0.at <= now && forecasts[$0.forecastKey]?.made != true })
        }
    }

    /// Who could be due: push on (`PushConsent`: a `notify_push` never set is on while the person
    /// has an active device token), and a location or a forecast row to send; each with their local
    /// dates whose notification time is within the lead or has passed. People whose zone herald cannot
    /// read are noted.
    func candidates(unknownZones: inout UnknownZones) throws -> [Candidate] {
        var candidates: [Candidate] = []
        for row in try db.query("""
            select p.user_id, p.timezone, p.forecast_notification_time::text as t, p.latitude, p.longitude,
                   left(p.location_name, 200) as location_name, left(p.locale, 35) as locale
              from user_profiles p
             where \(PushConsent.isOn("p"))
               and (p.latitude is not null or exists (
                      select 1 from daily_forecasts f where f.user_id = p.user_id
                         and f.forecast_date >= \(now)::date - 1 and f.forecast_date <= \(now)::date + 1))
            """) {
            guard let user = row["user_id"].uuid else { continue }
            guard let tz = row["timezone"].string, let zone = Zone.named(tz) else {
                unknownZones.note(user)
                continue
            }
            guard let time = row["t"].string.flatMap(LocalTime.init).map(DailyTime.timeOfDay) else { continue }   // 24:00 → 00:00
            let today = Zone.localDate(now, in: zone)
            for (date, at) in FlareForecast.datesToPrepare(now: now, zone: zone, notificationTime: time, lead: lead) {
                candidates.append(Candidate(
                    user: user, zone: tz, date: date, at: at, daysAhead: date == today ? 0 : 1,
                    latitude: row["latitude"].double, longitude: row["longitude"].double,
                    locationName: row["location_name"].string, notificationTime: time,
                    locale: row["locale"].string ?? "en"))
            }
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
            select user_id, forecast_date::text as d, risk_level, forecast_summary, forecast_locale,
                   pressure_change_hpa::float8 as change, hourly_forecast::text as hourly
              from daily_forecasts
             where user_id = any(\(candidates.map(\.user))::uuid[])
               and forecast_date::text = any(\(candidates.map(\.date.description))::text[])
            """) {
            guard let user = row["user_id"].uuid, let d = row["d"].string else { continue }
            forecasts[Self.forecastKey(user, d)] = Forecast(
                risk: row["risk_level"].string.flatMap(RiskLevel.init(rawValue:)), change: row["change"].double,
                summary: row["forecast_summary"].string.flatMap { $0.isEmpty ? nil : $0 },
                locale: row["forecast_locale"].string, hourly: row["hourly"].string.flatMap { try? JSONValue.parse($0) })
        }
        return forecasts
    }

    /// One push per candidate whose forecast is made and has its words, at the notification time. The
    /// body is the summary (`Renderer`): herald's words carry their language, a backend's summary none.
    func notifications(_ candidates: [Candidate], _ forecasts: Forecasts) -> [NewNotification] {
        candidates.compactMap { c in
            guard let f = forecasts[c.forecastKey], let risk = f.riskLevel(thresholds), let summary = f.summary else { return nil }
            var payload: [String: JSONValue] = [
                "type": "daily_forecast", "date": .string(c.date.description), "risk_level": .string(risk.rawValue),
                "summary": .string(summary),
            ]
            if let locale = f.locale { payload["summary_locale"] = .string(locale) }
            return NewNotification(
                recipient: c.user, member: c.user, channel: Channel.push.rawValue, kind: Kind.dailyForecast.rawValue,
                priority: .normal, payload: .object(payload), scheduledAt: c.at,
                dedupeKey: Self.dedupeKey(c.user, c.date), reason: "forecast_due")
        }
    }

    static func dedupeKey(_ user: UUID, _ date: LocalDate) -> String { "forecast:\(user.lowercased):\(date)" }

    /// A forecast's key in `Forecasts`: the user and the date as `daily_forecasts` writes it.
    static func forecastKey(_ user: UUID, _ date: String) -> String { "\(user.lowercased)/\(date)" }

    /// Whether another request may start: within the phase's budget and before any stop signal.
    func mayStart(since started: Date) -> Bool {
        !StopSignal.requested && clock.now().timeIntervalSince(started) < fetchBudget
    }
}

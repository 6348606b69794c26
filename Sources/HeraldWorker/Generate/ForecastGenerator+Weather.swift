import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Forecasts made from the weather, one request per place: the candidates with a location and no
/// forecast made are grouped into cells (`WeatherCells`); each cell's weather is an answer a pass stored
/// within `reuseFor` (`ForecastGenerator+Cells.swift`), or one request for the cell's centre; each person's
/// risk is read from it at their own notification instant, and their row stored with their hours, the
/// conditions now and the seven days from their date, on their own clock. A person whose coordinates
/// are junk, or a cell whose answer fails, fails those people alone.
extension ForecastGenerator {
    /// Makes the forecasts of `missing` from their cells' weather, fetching (concurrently, while
    /// `mayStart` allows) the cells no stored answer serves; stores the forecasts in `daily_forecasts`
    /// and counts cells and people in `result`. Returns whether it stored any.
    func fetchMissing(_ missing: [Candidate], from base: String, started: Date, asked: inout PassWeather,
                      result: inout Result) throws -> Bool {
        let grouping = WeatherCells.group(missing.indices.map { ($0, missing[$0].latitude, missing[$0].longitude) }, size: cellSize)
        result.unplaced += noteUnplaced(grouping.unplaceable.map { (missing[$0.id], $0.reason) })
        guard !grouping.cells.isEmpty else { return false }
        asked.keep(only: Set(grouping.cells.map(\.cell.key)))
        let unasked = grouping.cells.filter { asked.cells[$0.cell.key] == nil }
        let stored = try storedWeather(of: unasked.map(\.cell))
        result.reused += stored.count
        let fetched = fetchWeather(of: unasked.filter { stored[$0.cell.key] == nil }, missing, from: base, started: started,
                                   asked: &asked, result: &result)
        try storeWeather(fetched)
        for (key, w) in stored.merging(fetched, uniquingKeysWith: { _, new in new }) { asked.cells[key] = .answered(w) }
        let weather = asked.answers
        var made: [JSONValue] = []
        for (cell, members) in grouping.cells {
            guard let w = weather[cell.key] else { continue }
            // People of one zone and date in a cell have the same hours, conditions and days.
            var onTheirClock: [String: [String: JSONValue]] = [:]
            made += members.compactMap { madeForecast(w, for: missing[$0], sharing: &onTheirClock) }
        }
        guard !made.isEmpty else { return false }
        try store(made)
        return true
    }

    /// Warns once of the people whose location is no place on the globe, with how many have each reason
    /// (each person and reason at debug level, never the value), and returns how many they are.
    private func noteUnplaced(_ unplaced: [(Candidate, Unplaceable)]) -> Int {
        guard !unplaced.isEmpty else { return 0 }
        var reasons: [String: Set<UUID>] = [:]
        for (c, reason) in unplaced { reasons[reason.description, default: []].insert(c.user) }
        let people = Set(unplaced.map { $0.0.user })
        logger.warning("people whose location is not a place on the globe were passed over; their forecasts are not made",
                       metadata: ["users": .stringConvertible(people.count),
                                  "reasons": .string(reasons.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.count)" }
                                      .joined(separator: "; "))])
        for (c, reason) in unplaced {
            logger.debug("location is not a place; passed over", metadata: [
                "user_id": .string(c.user.lowercased), "date": .string(c.date.description), "reason": .string(reason.description)])
        }
        return people.count
    }

    /// One request per cell of `cells`, for its centre in the zone of most of its people; the usable
    /// answers by cell key. Each failure is logged once for its cell, with its people's count.
    private func fetchWeather(of cells: [(cell: WeatherCell, members: [Int])], _ missing: [Candidate], from base: String,
                              started: Date, asked: inout PassWeather, result: inout Result) -> [String: CellWeather] {
        let zones = cells.map { Self.cellZone($0.members.map { missing[$0].zone }) }
        let requests = cells.indices.map { i in
            HTTPRequest(method: "GET",
                        url: base + CellWeather.openMeteoPath(latitude: cells[i].cell.latitude, longitude: cells[i].cell.longitude,
                                                              timezone: zones[i]),
                        headers: [("accept", "application/json")], timeout: 15, version: .http2)
        }
        var answers: [String: CellWeather] = [:]
        let unstarted = transport.perform(requests, shouldStart: { _ in mayStart(since: started) }) { index, response in
            switch Self.cellWeather(response, zone: Zone.named(zones[index]) ?? Self.utc, now: now) {
            case .success(let w):
                answers[cells[index].cell.key] = w
            case .failure(let reason):
                logger.warning("could not get a place's weather; the forecasts of its people wait for the next pass", metadata: [
                    "people": .stringConvertible(cells[index].members.count), "reason": .string(reason.description)])
                logger.debug("the place whose weather failed", metadata: ["cell": .string(cells[index].cell.key)])
            }
        }
        result.fetched += answers.count
        result.fetchFailures += cells.count - answers.count - unstarted.count
        result.notFetched += unstarted.count
        for cell in cells.map(\.cell.key) where answers[cell] == nil { asked.cells[cell] = .failed }
        for i in unstarted { asked.cells[cells[i].cell.key] = .notAsked }
        if !unstarted.isEmpty {
            logger.warning("the weather fetches ran out of their time in this pass; the other places' forecasts wait for the next pass",
                           metadata: ["not_fetched": "\(unstarted.count)", "budget_s": "\(fetchBudget)"])
        }
        return answers
    }

    /// The zone a cell's weather is asked in (whose days `daily` counts): the zone most of its people
    /// have, the first by name on a tie. Every person is still read on their own clock.
    static func cellZone(_ zones: [String]) -> String {
        var counts: [String: Int] = [:]
        for z in zones { counts[z, default: 0] += 1 }
        return counts.min { a, b in a.value != b.value ? a.value > b.value : a.key < b.key }?.key ?? "UTC"
    }

    static let utc = TimeZone(identifier: "UTC")!

    /// A cell's answer as weather, or why it is not: a failed request, a status other than 200, or a
    /// body that is not an answer (`CellWeather`'s reason, cut to 200 characters).
    static func cellWeather(_ response: Swift.Result<HTTPResponse, TransportError>, zone: TimeZone,
                            now: Date) -> Swift.Result<CellWeather, CellWeather.ParseError> {
        let r: HTTPResponse
        switch response {
        case .success(let answer) where answer.status == 200: r = answer
        case .success(let answer): return .failure(.init(description: "answered \(answer.status)"))
        case .failure(let error): return .failure(.init(description: String("\(error)".prefix(200))))
        }
        do {
            return .success(try CellWeather(json: JSONValue.parse(Data(r.body)), zone: zone, at: now))
        } catch {
            return .failure(.init(description: String("\(error)".prefix(200))))
        }
    }

    /// The `daily_forecasts` row `w` makes for `c`: the risk from the pressure change between the
    /// notification instant and the same wall time the next day (23 or 25 hours on a daylight-saving
    /// day), and the weather on the person's clock (taken from `sharing`, by zone and date, once made).
    /// Nil (and a warning) when the answer has no pressure at either instant.
    private func madeForecast(_ w: CellWeather, for c: Candidate, sharing: inout [String: [String: JSONValue]]) -> JSONValue? {
        let zone = Zone.named(c.zone) ?? Self.utc
        let dayLater = Zone.instant(of: c.date.adding(days: 1), c.notificationTime, in: zone)
        guard let change = w.pressureChange(at: c.at, dayLater: dayLater) else {
            logger.warning("the place's weather has no pressure at a person's notification time", metadata: [
                "user_id": .string(c.user.lowercased), "date": .string(c.date.description)])
            return nil
        }
        let clock = "\(c.zone) \(c.date)"
        let weather = sharing[clock] ?? [
            "hourly_forecast": w.hourly(on: c.date, in: zone), "current_weather": w.current(in: zone) ?? .null,
            "daily_forecast": w.days(from: c.date) ?? .null,
        ]
        sharing[clock] = weather
        var row: [String: JSONValue] = [
            "user_id": .string(c.user.lowercased), "forecast_date": .string(c.date.description),
            "latitude": c.latitude.map { .number($0) } ?? .null, "longitude": c.longitude.map { .number($0) } ?? .null,
            "location_name": c.locationName.map { .string($0) } ?? .null,
            "risk_level": .string(FlareForecast.risk(pressureChangeHPa: change, thresholds: thresholds).rawValue),
            "change": .number(change),
        ]
        row.merge(weather) { _, shared in shared }
        return .object(row)
    }

    /// Stores the forecasts made from the weather. What a row already holds (another pass's forecast, or
    /// the columns a backend wrote) stays; only its empty columns are filled.
    private func store(_ made: [JSONValue]) throws {
        try db.execute("""
            insert into daily_forecasts as d (user_id, forecast_date, location_latitude, location_longitude, location_name,
                                              hourly_forecast, current_weather, daily_forecast, risk_level, pressure_change_hpa)
            select user_id, forecast_date, latitude, longitude, location_name, hourly_forecast,
                   nullif(current_weather, 'null'), nullif(daily_forecast, 'null'), risk_level, change
              from jsonb_to_recordset(\(JSONValue.array(made).pgJSONText)::jsonb) as x(
                user_id uuid, forecast_date date, latitude float8, longitude float8, location_name text,
                hourly_forecast jsonb, current_weather jsonb, daily_forecast jsonb, risk_level text, change numeric)
            on conflict (user_id, forecast_date) do update
               set location_latitude = coalesce(d.location_latitude, excluded.location_latitude),
                   location_longitude = coalesce(d.location_longitude, excluded.location_longitude),
                   location_name = coalesce(d.location_name, excluded.location_name),
                   hourly_forecast = coalesce(d.hourly_forecast, excluded.hourly_forecast),
                   current_weather = coalesce(d.current_weather, excluded.current_weather),
                   daily_forecast = coalesce(d.daily_forecast, excluded.daily_forecast),
                   risk_level = coalesce(d.risk_level, excluded.risk_level),
                   pressure_change_hpa = coalesce(d.pressure_change_hpa, excluded.pressure_change_hpa),
                   updated_at = now()
             where d.risk_level is null and d.pressure_change_hpa is null
            """)
    }
}

/// The places a pass has asked the weather of, kept while their people are made a chunk at a time: a
/// place whose people fall in two chunks is asked once (its answer kept; its failure, or its not being
/// asked within the phase's time, remembered), and a place the chunks have moved past is forgotten.
struct PassWeather {
    enum Outcome {
        case answered(CellWeather)
        case failed
        case notAsked
    }

    var cells: [String: Outcome] = [:]

    /// The answers at hand, by cell key.
    var answers: [String: CellWeather] {
        cells.compactMapValues { if case .answered(let w) = $0 { w } else { nil } }
    }

    /// Forgets every place but `keys` (the people to make next are sorted by place: the others are done).
    mutating func keep(only keys: Set<String>) {
        cells = cells.filter { keys.contains($0.key) }
    }
}

import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Forecasts made from the weather: for candidates with a location and no forecast made, the hourly
/// pressure is fetched, the risk worked out from its change, and the row stored.
extension ForecastPhase {
    /// Fetches the weather of `missing` from `base`, concurrently, while `mayStart` allows; stores the
    /// forecasts it makes in `daily_forecasts` and counts the fetches in `result`. Returns whether it
    /// stored any.
    func fetchMissing(_ missing: [Candidate], from base: String, started: Date, result: inout Result) throws -> Bool {
        let requests = missing.map { c in
            HTTPRequest(method: "GET",
                        url: base + FlareForecast.openMeteoPath(latitude: c.latitude!, longitude: c.longitude!, timezone: c.zone,
                                                                forecastDays: 2 + c.daysAhead),
                        headers: [("accept", "application/json")], timeout: 15, version: .http2)
        }
        var made: [JSONValue] = []
        let unstarted = transport.perform(requests, shouldStart: { _ in mayStart(since: started) }) { index, response in
            if let row = madeForecast(response, for: missing[index]) { made.append(row) }
        }
        result.fetched = made.count
        result.fetchFailures = missing.count - made.count - unstarted.count
        result.notFetched = unstarted.count
        if !unstarted.isEmpty {
            logger.warning("the weather fetches ran out of their time in this pass; the other users' forecasts wait for the next pass",
                           metadata: ["not_fetched": "\(unstarted.count)", "budget_s": "\(fetchBudget)"])
        }
        guard !made.isEmpty else { return false }
        try store(made)
        return true
    }

    /// The `daily_forecasts` row one weather answer makes for `c`: its risk and pressure change, the
    /// place and the hourly series. Nil (and a warning) when the answer failed or holds no usable
    /// pressure.
    private func madeForecast(_ response: Swift.Result<HTTPResponse, TransportError>, for c: Candidate) -> JSONValue? {
        guard case .success(let r) = response, r.status == 200,
              let json = try? JSONValue.parse(Data(r.body)), let weather = try? HourlyWeather(json: json),
              let change = weather.pressureChange(from: c.date, at: c.notificationTime) else {
            logger.warning("could not get the weather for a forecast", metadata: [
                "user_id": .string(c.user.lowercased), "date": .string(c.date.description),
                "status": .string((try? response.get().status).map(String.init) ?? "\(response)")])
            return nil
        }
        let risk = FlareForecast.risk(pressureChangeHPa: change, thresholds: thresholds).rawValue
        return [
            "user_id": .string(c.user.lowercased), "forecast_date": .string(c.date.description),
            "latitude": .number(c.latitude!), "longitude": .number(c.longitude!),
            "location_name": c.locationName.map { .string($0) } ?? .null,
            "hourly_forecast": json["hourly"] ?? .null, "risk_level": .string(risk), "change": .number(change),
        ]
    }

    /// Stores the forecasts made from the weather. What a row already holds (another pass's forecast, or
    /// the columns a backend wrote) stays; only its empty columns are filled.
    private func store(_ made: [JSONValue]) throws {
        try db.execute("""
            insert into daily_forecasts as d (user_id, forecast_date, location_latitude, location_longitude, location_name,
                                              hourly_forecast, risk_level, pressure_change_hpa)
            select user_id, forecast_date, latitude, longitude, location_name, hourly_forecast, risk_level, change
              from jsonb_to_recordset(\(JSONValue.array(made).pgJSONText)::jsonb) as x(
                user_id uuid, forecast_date date, latitude float8, longitude float8, location_name text,
                hourly_forecast jsonb, risk_level text, change numeric)
            on conflict (user_id, forecast_date) do update
               set location_latitude = coalesce(d.location_latitude, excluded.location_latitude),
                   location_longitude = coalesce(d.location_longitude, excluded.location_longitude),
                   location_name = coalesce(d.location_name, excluded.location_name),
                   hourly_forecast = coalesce(d.hourly_forecast, excluded.hourly_forecast),
                   risk_level = coalesce(d.risk_level, excluded.risk_level),
                   pressure_change_hpa = coalesce(d.pressure_change_hpa, excluded.pressure_change_hpa),
                   updated_at = now()
             where d.risk_level is null and d.pressure_change_hpa is null
            """)
    }
}

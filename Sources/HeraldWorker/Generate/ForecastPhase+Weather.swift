import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Forecasts made from the weather: for candidates with a location and no `daily_forecasts` row, the
/// hourly pressure is fetched, the risk worked out from its change, and the row stored.
extension ForecastPhase {
    /// Fetches the weather of `missing` from `base`, concurrently, within `fetchBudget`; adds the
    /// forecasts it makes to `forecasts`, stores them in `daily_forecasts`, and counts the fetches in
    /// `result`.
    func fetchMissing(_ missing: [Candidate], from base: String, into forecasts: inout Forecasts,
                      result: inout Result) throws {
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
            guard let weather = madeForecast(response, for: c) else { return }
            forecasts[c.forecastKey] = Forecast(risk: weather.risk, summary: nil, change: weather.change)
            made.append(weather.row)
        }
        result.fetched = made.count
        result.fetchFailures = missing.count - made.count - unstarted.count
        result.notFetched = unstarted.count
        if !unstarted.isEmpty {
            logger.warning("the weather fetches ran out of their time in this pass; the other users' forecasts wait for the next pass",
                           metadata: ["not_fetched": "\(unstarted.count)", "budget_s": "\(fetchBudget)"])
        }
        if !made.isEmpty { try store(made) }
    }

    /// The forecast one weather answer makes for `c`: its risk, its pressure change, and its row for
    /// `daily_forecasts`. Nil (and a warning) when the answer failed or holds no usable pressure.
    private func madeForecast(_ response: Swift.Result<HTTPResponse, TransportError>,
                              for c: Candidate) -> (risk: String, change: Double, row: JSONValue)? {
        guard case .success(let r) = response, r.status == 200,
              let json = try? JSONValue.parse(Data(r.body)), let weather = try? HourlyWeather(json: json),
              let change = weather.pressureChange(from: c.date, at: c.notificationTime) else {
            logger.warning("could not get the weather for a forecast", metadata: [
                "user_id": .string(c.user.lowercased), "date": .string(c.date.description),
                "status": .string((try? response.get().status).map(String.init) ?? "\(response)")])
            return nil
        }
        let risk = FlareForecast.risk(pressureChangeHPa: change, thresholds: thresholds).rawValue
        let row: JSONValue = [
            "user_id": .string(c.user.lowercased), "forecast_date": .string(c.date.description),
            "latitude": .number(c.latitude!), "longitude": .number(c.longitude!),
            "location_name": c.locationName.map { .string($0) } ?? .null,
            "hourly_forecast": json["hourly"] ?? .null, "risk_level": .string(risk), "change": .number(change),
        ]
        return (risk, change, row)
    }

    /// Stores the forecasts made from the weather; a row another pass stored meanwhile stays.
    private func store(_ made: [JSONValue]) throws {
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

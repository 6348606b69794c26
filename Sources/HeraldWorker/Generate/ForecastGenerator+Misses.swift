import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// Forecasts that could not be made by their notification time (no weather came within the lead, or
/// there is neither a location nor a forecast row to send): each is noted once per person and date in
/// `forecast_misses`, counted (`generated.forecasts_missed`, the metric `herald_pass_forecasts_missed`)
/// and logged as a warning. The next passes keep trying that local day; a date that has passed is never
/// sent.
extension ForecastGenerator {
    /// Notes `late`, returning how many were noted for the first time (each logged).
    func noteMisses(_ late: [Candidate]) throws -> Int {
        guard !late.isEmpty else { return 0 }
        let rows = JSONValue.array(late.map { ["user_id": .string($0.user.lowercased), "forecast_date": .string($0.date.description)] })
        let noted = try db.transaction { db -> [(user: String, date: String)] in
            // Kept a week.
            try db.execute("delete from forecast_misses where forecast_date < \(now)::timestamptz::date - 7")
            return try db.query("""
                insert into forecast_misses (user_id, forecast_date)
                select user_id, forecast_date from jsonb_to_recordset(\(rows.pgJSONText)::jsonb) as x(user_id uuid, forecast_date date)
                on conflict do nothing
                returning user_id, forecast_date::text as d
                """).map { ($0["user_id"].uuid?.lowercased ?? "?", $0["d"].string ?? "?") }
        }
        for row in noted {
            logger.warning("a daily forecast could not be made by its notification time; it goes out if the weather comes later that day", metadata: [
                "user_id": .string(row.user), "date": .string(row.date)])
        }
        return noted.count
    }
}
